"""The pretraining head: a pretrained model directory (masked LM + sentence order), and its
training task beside it (`PretrainingTask`, Model Garden's ``tasks/masked_lm.py``; the model
builder stays `albert_tf.models.pretrainer`, the data `albert_tf.data.pretraining` and
`albert_tf.data.dynamic_masking`). TensorFlow is imported only when a function runs."""

from __future__ import annotations

import os

import numpy as np

from albert_tf.data import input_checks
from albert_tf.heads.base import Head, lazy_tf, smoke_sentences
from albert_tf.heads.registry import register
from albert_tf.hyperparams import ConfigValueError
from albert_tf.training.task_base import MODEL_INPUTS, Task, resolve_path


@register
class PretrainingHead(Head):
    """Masked LM + sentence order (a pretrained model directory): serves ``pooled_output``."""

    name = "pretraining"
    head_layers = ("mlm", "sop")
    task_type = "pretraining"
    onnx_outputs = ("sequence_output", "pooled_output")
    hf_task = "ForPreTraining"
    #: QAT cannot clone the pretrainer (``MaskedLMHead.get_config`` raises).
    compression_stages = ("pruning",)
    answer_keys = ("pooled_output",)

    def training_task(self, config, **kwargs):
        return PretrainingTask(config, **kwargs)

    def smoke_files(self, directory, vocab):
        """Raw text (``corpus.txt``: documents of sentences, one per line), masked as it
        is read (``source: text``)."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "corpus.txt")
        sentences = smoke_sentences()
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(sentences[i:i + 4]) for i in range(0, 16, 4)) + "\n")
        return [f"task.type={self.task_type}", f"task.train_data.input_path={path}",
                "task.train_data.source=text", "task.train_data.shuffle_buffer=16",
                "task.validation_data.input_path=", f"task.vocab_file={vocab}"]

    def smoke_inputs(self):
        """Sentence pairs (a pretrained model directory's ``text_pair``), the second one
        following the first."""
        texts = smoke_sentences(4)
        return texts[:3], texts[1:]

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.pretrainer import build_pretrainer
        return build_pretrainer(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"pooled_output": tf.cast(outputs["pooled_output"], tf.float32)}

    def onnx_graph(self, g, pooled, source, dims, seq):
        """``sequence_output [B, S, H]`` and ``pooled_output [B, H]`` (pretrained models)."""
        from onnx import TensorProto, helper
        hidden = source.config.hidden_size
        g.node("Identity", [pooled], "pooled_output")
        return [helper.make_tensor_value_info("sequence_output", TensorProto.FLOAT,
                                              dims + [seq, hidden]),
                helper.make_tensor_value_info("pooled_output", TensorProto.FLOAT,
                                              dims + [hidden])]

    def extra_signatures(self, module):
        """``mlm`` of a directory with the pretraining heads' weights: ``mlm_logits [B, S,
        V]`` and ``sop_logits [B, 2]`` (float32) of the three int32 ``[B, S]`` ids."""
        if not module.source.has_mlm:
            return {}
        tf = lazy_tf()

        def mlm(input_word_ids, input_mask, input_type_ids):
            features = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                        "input_type_ids": input_type_ids}
            outputs = module.model(features, training=False)
            return {"mlm_logits": tf.cast(outputs["mlm_logits"], tf.float32),
                    "sop_logits": tf.cast(outputs["sop_logits"], tf.float32)}
        return {"mlm": mlm}

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        encoded = source.encoder(features, training=False)
        return {k: tf.cast(v, tf.float32) for k, v in encoded.items()}


# ------------------------------------------------------------------ training task
def _expand_files(pattern: str) -> list[str]:
    """The files of comma-separated glob ``pattern`` (each part must match one)."""
    from albert_tf.training.preflight import no_match_error
    tf = lazy_tf()
    files = []
    for part in [p.strip() for p in pattern.split(",") if p.strip()]:
        part = resolve_path(part)
        matched = sorted(tf.io.gfile.glob(part))
        if not matched:
            raise no_match_error(part)
        files.extend(matched)
    return files


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

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        return (TaskInfo(task="pretraining", head="pretraining",
                         max_seq_length=self.config.task.max_seq_length,
                         do_lower_case=self.config.task.do_lower_case, text_pair=True),
                self._vocab_or_none() if self.config.task.vocab_file else None)

    def build_inputs(self, data_config, input_context=None):
        task = self.config.task
        seed = self.seed(data_config)
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

    def _text_inputs(self, data_config, seed, input_context):
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
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
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
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
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
        tf = lazy_tf()
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
