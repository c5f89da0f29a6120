"""Training tasks: ``build_task`` (the task of ``task.type``: its head's), the task types
of albert-tf-finetune (`resolve_task_type`) and the tasks' interface (`Task`, in
`albert_tf.training.task_base`, which lists it).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from albert_tf import resources
from albert_tf.backend import tf
from albert_tf.checkpoints import restore_weights
from albert_tf.data import input_checks
from albert_tf.data.task_data import SQUAD_TASKS
from albert_tf.lazy import lazy_exports
from albert_tf.training import metrics as metrics_lib
from albert_tf.training.experiment_config import ConfigValueError, ExperimentConfig
from albert_tf.training.preflight import (TASK_FILES, InputDataError,  # noqa: F401
                                         check_task_name, needs_data_dir, no_match_error,
                                         task_file)
# The tasks' base (public here too: the trainer, the binaries and tests import them here).
from albert_tf.training.task_base import (DEFAULT_VOCAB, MODEL_INPUTS,  # noqa: F401
                                          VOCAB_FILE_HINT, Task, TextTask, custom_task_files,
                                          model_config, resolve_path)


def _expand_files(pattern: str) -> list[str]:
    files = []
    for part in [p.strip() for p in pattern.split(",") if p.strip()]:
        part = resolve_path(part)
        matched = sorted(tf.io.gfile.glob(part))
        if not matched:
            raise no_match_error(part)
        files.extend(matched)
    return files


# ----------------------------------------------------------------------- pretraining
class PretrainingTask(Task):
    """Masked LM + sentence-order prediction on the TFRecords of
    ``albert-tf-create-pretraining-data`` (``task.train_data.source: records``) or on raw
    text masked in the input pipeline (``source: text``)."""

    main_metric = "mlm_loss"
    main_metric_comp = "lower"

    def model_kwargs(self):
        """The pretrainer gathers the masked positions of each batch."""
        return {"masked_lm_positions": True,
                "max_predictions_per_seq": self.config.task.max_predictions_per_seq}

    def initialize(self, model, path: str):
        report = restore_weights(model, resolve_path(path), required=("embeddings/",))
        logging.info("init_checkpoint %s: %s", path, report.summary())
        return report

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        return (TaskInfo(task="pretraining", head="pretraining",
                         max_seq_length=self.config.task.max_seq_length,
                         do_lower_case=self.config.task.do_lower_case, text_pair=True),
                self._vocab_or_none() if self.config.task.vocab_file else None)

    def build_inputs(self, data_config, input_context=None) -> tf.data.Dataset:
        task = self.config.task
        seed = data_config.shuffle_seed
        if seed is None:
            seed = self.config.runtime.seed
        if getattr(data_config, "source", "records") == "text":
            return self._text_inputs(data_config, seed, input_context)
        from albert_tf.data.pretraining import pretraining_dataset
        files = _expand_files(data_config.input_path)
        # batch_size is global: the data module divides it per replica.
        return pretraining_dataset(
            files, data_config.global_batch_size, task.max_seq_length,
            task.max_predictions_per_seq, is_training=data_config.is_training, seed=seed,
            input_context=input_context,
            shuffle_buffer=getattr(data_config, "shuffle_buffer", 10_000),
            **self._data_service(data_config, input_context))

    def _data_service(self, data_config, input_context) -> dict:
        """The tf.data service arguments of a split (`albert_tf.data.data_service`): its
        dispatcher, and the job the trainers share (named when there are several input
        pipelines: an anonymous job would give each of them the whole stream)."""
        address = getattr(data_config, "data_service", "")
        if not address:
            return {}
        job = data_config.data_service_job_name
        if not job and input_context is not None and input_context.num_input_pipelines > 1:
            run = os.path.basename(os.path.normpath(self.config.model_dir or "run"))
            job = f"albert_tf-{run}-{data_config.split}"
        return {"data_service": address, "data_service_job_name": job}

    def _text_inputs(self, data_config, seed, input_context) -> tf.data.Dataset:
        """``source: text``: raw text masked in the input pipeline
        (`albert_tf.data.dynamic_masking`), the task's vocabulary and lengths."""
        from albert_tf.data.dynamic_masking import TextDataError, text_pretraining_dataset
        from albert_tf.data.pretraining_data import PretrainingConfig

        task = self.config.task
        vocab = self.vocab_file()
        if not os.path.exists(vocab):
            raise FileNotFoundError(input_checks.missing_vocabulary(vocab))
        if not data_config.input_path:
            raise TextDataError("task.train_data.input_path is empty: source=text needs the "
                                "raw text files (--train_files=PATTERN)")
        patterns = ",".join(resolve_path(p.strip()) for p in data_config.input_path.split(",")
                            if p.strip())
        config = PretrainingConfig(
            max_seq_length=task.max_seq_length,
            max_predictions_per_seq=task.max_predictions_per_seq,
            masked_lm_prob=data_config.masked_lm_prob, short_seq_prob=data_config.short_seq_prob,
            ngram=data_config.ngram, do_lower_case=task.do_lower_case,
            do_whole_word_mask=data_config.do_whole_word_mask,
            favor_shorter_ngram=data_config.favor_shorter_ngram,
            split_sentences=data_config.split_sentences)
        try:
            config.validate()
        except ValueError as e:
            raise ConfigValueError(f"task (source=text): {e}") from None
        masker = self._text_masker(vocab, config)
        return text_pretraining_dataset(
            patterns, vocab, data_config.global_batch_size, config,
            is_training=data_config.is_training, seed=seed, input_context=input_context,
            shuffle_buffer=data_config.shuffle_buffer, masker=masker,
            **self._data_service(data_config, input_context))

    def _text_masker(self, vocab: str, config):
        """One `DynamicMasker` per vocabulary and settings (each input pipeline of a
        distributed run calls `build_inputs`); checks the vocabulary against the model."""
        from albert_tf.data.dynamic_masking import DynamicMasker
        cache = self.__dict__.setdefault("_maskers", {})
        key = (vocab, repr(config))
        if key not in cache:
            from albert_tf.data.dynamic_masking import TextDataError
            from albert_tf.text.spm_training import VocabularyError
            try:
                masker = DynamicMasker(vocab, config)
            except VocabularyError as e:
                raise TextDataError(input_checks.not_a_vocabulary(e)) from None
            rows = self.albert_config.vocab_size
            if masker.vocab_size > rows:
                raise ConfigValueError(input_checks.vocabulary_too_large(
                    vocab, masker.vocab_size, rows))
            cache[key] = masker
        return cache[key]

    def features(self, inputs) -> dict:
        return {k: inputs[k] for k in MODEL_INPUTS + ("masked_lm_positions",)}

    def train_metric_names(self) -> list[str]:
        return ["mlm_loss", "mlm_accuracy", "sop_loss", "sop_accuracy"]

    def _parts(self, inputs, outputs):
        ids = tf.cast(inputs["masked_lm_ids"], tf.int32)
        weights = tf.cast(inputs["masked_lm_weights"], tf.float32)
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
        mlm_xent = metrics_lib.sparse_xent(ids, mlm_logits)                   # [B, P]
        mlm_correct = tf.cast(tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), ids),
                              tf.float32)
        sop_labels = tf.reshape(tf.cast(inputs["next_sentence_labels"], tf.int32), [-1])
        sop_logits = tf.cast(outputs["sop_logits"], tf.float32)
        sop_xent = metrics_lib.sparse_xent(sop_labels, sop_logits)            # [B]
        sop_correct = tf.cast(tf.equal(tf.argmax(sop_logits, -1, output_type=tf.int32),
                                       sop_labels), tf.float32)
        return mlm_xent, mlm_correct, weights, sop_xent, sop_correct

    def train_loss(self, inputs, outputs):
        mlm_xent, mlm_correct, weights, sop_xent, sop_correct = self._parts(inputs, outputs)
        mlm_loss, mlm_sum, mlm_den = metrics_lib.weighted_mean_loss(mlm_xent, weights)
        sop_loss, sop_sum, sop_den = metrics_lib.weighted_mean_loss(sop_xent)
        task = self.config.task
        loss = task.mlm_loss_weight * mlm_loss + task.sop_loss_weight * sop_loss
        sums = {"mlm_loss_num": mlm_sum, "mlm_loss_den": mlm_den,
                "mlm_accuracy_num": tf.reduce_sum(mlm_correct * weights),
                "mlm_accuracy_den": mlm_den,
                "sop_loss_num": sop_sum, "sop_loss_den": sop_den,
                "sop_accuracy_num": tf.reduce_sum(sop_correct), "sop_accuracy_den": sop_den}
        return loss, sums

    def eval_outputs(self, inputs, outputs) -> dict:
        mlm_xent, mlm_correct, weights, sop_xent, sop_correct = self._parts(inputs, outputs)
        return {"mlm_xent": tf.reduce_sum(mlm_xent * weights, -1),
                "mlm_correct": tf.reduce_sum(mlm_correct * weights, -1),
                "mlm_weight": tf.reduce_sum(weights, -1),
                "sop_xent": sop_xent, "sop_correct": sop_correct}

    def reduce_eval(self, outputs):
        weight = max(float(np.sum(outputs["mlm_weight"])), 1e-9)
        n = max(len(outputs["sop_xent"]), 1)
        mlm_loss = float(np.sum(outputs["mlm_xent"]) / weight)
        sop_loss = float(np.sum(outputs["sop_xent"]) / n)
        return {"mlm_loss": mlm_loss, "mlm_accuracy": float(np.sum(outputs["mlm_correct"]) / weight),
                "sop_loss": sop_loss, "sop_accuracy": float(np.sum(outputs["sop_correct"]) / n),
                "loss": mlm_loss + sop_loss, "examples": float(n)}


# ------------------------------------------------ multiple choice, token classification
def custom_task_type(task) -> str | None:
    """The ``task.type`` a custom task's train file's header asks for (multiple choice or
    token classification, `albert_tf.data.task_data.detect_task_type`), else None."""
    from albert_tf.data import task_data as data_tasks
    if not task.train_file:
        return None
    try:
        train, _, _ = custom_task_files(task)
    except (data_tasks.TaskDataError, resources.DataDirError):
        return None
    return data_tasks.detect_task_type(train)


def resolve_task_type(task) -> str:
    """The ``task.type`` that trains ``task`` (the ``task`` section of a finetuning
    experiment), decided once here for albert-tf-finetune:

    - a SQuAD task name (`SQUAD_TASKS`, any case): ``squad``, whatever the type says;
    - the default type ``classification`` on a custom task whose train file's header asks
      for another head (`custom_task_type`: multiple choice, token classification): that
      head's type;
    - else ``task.type`` as given (an explicit ``task.type`` is kept).

    Relative custom files are read from ``task.data_dir``: resolve it first.
    """
    if (task.name or "").lower() in SQUAD_TASKS:
        return "squad"
    if task.type == "classification":
        return custom_task_type(task) or task.type
    return task.type


# Moved beside their heads (`albert_tf.heads`); the old names still resolve (PEP 562).
_MOVED = {"ClassificationTask": "albert_tf.heads.classification",
          "load_task_data": "albert_tf.heads.classification",
          "MultipleChoiceTask": "albert_tf.heads.multiple_choice",
          "TokenClassificationTask": "albert_tf.heads.token_classification"}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED, globals())


def build_task(config: ExperimentConfig, **kwargs: Any) -> Task:
    """The task object for ``config.task.type`` (its head in `albert_tf.heads`)."""
    import albert_tf.heads.registry as heads
    return heads.for_task_type(config.task.type).training_task(config, **kwargs)
