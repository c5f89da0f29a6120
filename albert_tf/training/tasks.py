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
from albert_tf.data.task_data import SENTEVAL_TASKS, SQUAD_TASKS
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


# -------------------------------------------------------------------- classification
# SentEval tasks (SENTEVAL_TASKS) are read from <data_dir>/extra: ``label<TAB>sentence``,
# no header.


def _column(value: str):
    return int(value) if str(value).isdigit() else value


def load_task_data(task):
    """`TaskData` of ``task.name``: a GLUE task (from ``data_dir`` or ``data_dir/glue``),
    a SentEval task (``data_dir/extra``) or a custom TSV/CSV task (``task.train_file``)."""
    from albert_tf.data import task_data as data_tasks
    name = task.name.lower()
    check_task_name(task)
    if task.train_file:
        train, dev, test = custom_task_files(task)
        return data_tasks.load_tsv_task(
            train, dev, test, text_a_column=_column(task.text_a_column),
            text_b_column=_column(task.text_b_column) if task.text_b_column else None,
            label_column=_column(task.label_column), has_header=task.has_header,
            is_regression=task.is_regression, label_list=task.label_list or None,
            metric=task.metric or None, name=task.name or "custom")
    data_dir = resources.data_dir(resolve_path(task.data_dir) or None)

    def require(path, what):
        if not os.path.isfile(path):
            raise data_tasks.TaskDataError(f"task {task.name or 'custom'!r}: {what} {path} "
                                           f"not found; {resources.DATA_DIR_FIX}.")
        return path

    if name in SENTEVAL_TASKS:
        extra = os.path.join(data_dir, "extra")
        upper = name.upper()
        require(os.path.join(extra, f"{upper}_train.tsv"), "SentEval file")
        return data_tasks.load_tsv_task(
            os.path.join(extra, f"{upper}_train.tsv"), os.path.join(extra, f"{upper}_dev.tsv"),
            text_a_column=1, label_column=0, has_header=False, name=name)
    if data_tasks.find_glue_task_dir(data_dir, name) is None:
        raise data_tasks.TaskDataError(
            f"task {name!r}: GLUE file {data_tasks.expected_glue_file(data_dir, name)} not "
            f"found; {resources.DATA_DIR_FIX}.")
    return data_tasks.load_task(name, data_dir)


class ClassificationTask(TextTask):
    """Sentence(-pair) classification or regression: GLUE, SentEval, custom TSV tasks."""

    # ---- data
    def load_task_data(self):
        return load_task_data(self.config.task)

    @property
    def is_regression(self) -> bool:
        return bool(self.task_data.is_regression)

    @property
    def main_metric(self) -> str:  # type: ignore[override]
        return metrics_lib.metric_key(getattr(self.task_data, "metric", "accuracy"))

    def build_inputs(self, data_config, input_context=None) -> tf.data.Dataset:
        from albert_tf.data.task_data import classification_dataset
        task = self.config.task
        seed = data_config.shuffle_seed
        if seed is None:
            seed = self.config.runtime.seed
        # batch_size is global; training batches are length-bucketed and every batch is
        # padded to its longest sequence by the data module (bucket_window=1: no bucketing).
        return classification_dataset(
            self.examples(data_config.split), self.tokenizer, task.max_seq_length,
            data_config.global_batch_size, is_training=data_config.is_training, seed=seed,
            input_context=input_context,
            label_list=None if self.is_regression else self.task_data.label_list,
            is_regression=self.is_regression,
            bucket_window=50 if task.length_bucketing else 1)

    # ---- loss / metrics
    def train_metric_names(self) -> list[str]:
        return [] if self.is_regression else ["accuracy"]

    def train_loss(self, inputs, outputs):
        labels = self.labels(inputs)
        if self.is_regression:
            value = tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])
            per_example = tf.square(value - tf.reshape(tf.cast(labels, tf.float32), [-1]))
            loss, _, _ = metrics_lib.weighted_mean_loss(per_example)
            return loss, {}
        labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
        logits = tf.cast(outputs["logits"], tf.float32)
        loss, _, count = metrics_lib.weighted_mean_loss(metrics_lib.sparse_xent(labels, logits))
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
                          tf.float32)
        return loss, {"accuracy_num": tf.reduce_sum(correct), "accuracy_den": count}

    def eval_outputs(self, inputs, outputs) -> dict:
        labels = self.labels(inputs)
        if self.is_regression:
            return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1]),
                    "label": tf.reshape(tf.cast(labels, tf.float32), [-1])}
        return {"logits": tf.cast(outputs["logits"], tf.float32),
                "label": tf.reshape(tf.cast(labels, tf.int32), [-1])}

    def reduce_eval(self, outputs):
        if self.is_regression:
            result = metrics_lib.regression_metrics(outputs["value"], outputs["label"])
            result["loss"] = result["mse"]
        else:
            logits, labels = outputs["logits"], outputs["label"]
            result = metrics_lib.classification_metrics(logits, labels)
            shifted = logits - logits.max(-1, keepdims=True)
            log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
            result["loss"] = float(-np.mean(log_probs[np.arange(len(labels)), labels])) \
                if len(labels) else 0.0
        result["examples"] = float(len(outputs["label"]))
        return result

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        data = self.task_data
        train = [e for e in (getattr(data, "train", None) or []) if e is not None]
        text_pair = any(getattr(e, "text_b", None) for e in train[:100])
        if self.is_regression:
            info = TaskInfo(task=self.config.task.name, head="regression",
                            max_seq_length=self.config.task.max_seq_length,
                            do_lower_case=self.config.task.do_lower_case, text_pair=text_pair)
        else:
            info = TaskInfo(task=self.config.task.name, head="classification",
                            label_list=tuple(str(v) for v in data.label_list),
                            max_seq_length=self.config.task.max_seq_length,
                            do_lower_case=self.config.task.do_lower_case, text_pair=text_pair)
        return info, self._vocab_or_none()

    def predict(self, model, outputs, path: str) -> str:
        with open(path, "w", encoding="utf-8") as f:
            f.write("index\tprediction\n")
            if self.is_regression:
                for i, v in enumerate(outputs["value"]):
                    f.write(f"{i}\t{float(v):.6f}\n")
            else:
                labels = list(self.task_data.label_list)
                for i, row in enumerate(outputs["logits"]):
                    f.write(f"{i}\t{labels[int(np.argmax(row))]}\n")
        return path


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


class MultipleChoiceTask(ClassificationTask):
    """Pick the right second text among C (`albert_tf.data.task_data.load_multiple_choice_task`
    format); softmax cross-entropy over the C scores, accuracy."""

    def load_task_data(self):
        from albert_tf.data.task_data import load_multiple_choice_task
        return load_multiple_choice_task(*custom_task_files(self.config.task),
                                         name=self.config.task.name or "choice")

    def build_inputs(self, data_config, input_context=None) -> tf.data.Dataset:
        from albert_tf.data.task_data import multiple_choice_dataset
        seed = data_config.shuffle_seed
        if seed is None:
            seed = self.config.runtime.seed
        return multiple_choice_dataset(
            self.examples(data_config.split), self.tokenizer, self.config.task.max_seq_length,
            data_config.global_batch_size, data_config.is_training, seed, input_context)

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        task = self.config.task
        return (TaskInfo(task=task.name or "choice", head="multiple_choice",
                         max_seq_length=task.max_seq_length, do_lower_case=task.do_lower_case,
                         text_pair=True), self._vocab_or_none())


# Moved beside their heads (`albert_tf.heads`); the old names still resolve (PEP 562).
_MOVED = {"TokenClassificationTask": "albert_tf.heads.token_classification"}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED, globals())


def build_task(config: ExperimentConfig, **kwargs: Any) -> Task:
    """The task object for ``config.task.type`` (its head in `albert_tf.heads`)."""
    import albert_tf.heads.registry as heads
    return heads.for_task_type(config.task.type).training_task(config, **kwargs)
