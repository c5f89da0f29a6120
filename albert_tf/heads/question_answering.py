"""The span head: SQuAD question answering, an answer span of the context (its decoding:
`albert_tf.heads.span`), and its training task beside it (`SquadTask`, Model Garden's
``tasks/question_answering.py``). TensorFlow is imported only when a function runs.

``task.data_dir`` holds the SQuAD JSON files: ``train-v1.1.json`` / ``dev-v1.1.json``,
``train-v2.0.json`` / ``dev-v2.0.json`` or ``train.json`` / ``dev.json``. SQuAD 2.0
(unanswerable questions) is detected from the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import json
import os

from albert_tf.data.task_data import SQUAD_TASKS
from albert_tf.heads import span
from albert_tf.heads.base import Head, lazy_tf, smoke_sentences
from albert_tf.heads.registry import register
from albert_tf.heads.span import best_spans, sdk_span_logits
from albert_tf.training.task_base import Task, TextTask, resolve_path

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig


@register
class SpanHead(Head):
    """SQuAD span extraction over ``[CLS] question [SEP] context [SEP]``."""

    name = "span"
    head_layers = ("span",)
    text_pair = True
    task_type = "squad"
    task_names = SQUAD_TASKS
    sdk_outputs = {
        "end_logits": (f"Logits of the answer end per input position: {span.SDK_SPAN_MASK:g} "
                       "outside the context; the end of albert-tf's best span raised by "
                       f"{span.SDK_SPAN_BOOST:g}."),
        "start_logits": (f"Logits of the answer start per input position: "
                         f"{span.SDK_SPAN_MASK:g} outside the context; the start of "
                         f"albert-tf's best span raised by {span.SDK_SPAN_BOOST:g}.")}
    sdk_runners = ("Task Library BertQuestionAnswerer",)
    hf_task = "ForQuestionAnswering"                   # qa_outputs on every token, no pooler
    hf_dense = "span/dense"
    hf_linear = "qa_outputs"
    hf_note = ("logits equal on every unpadded token; ours are -1e9 at padding, Hugging "
               "Face's qa_outputs leaves padding unmasked (its question-answering pipeline "
               "masks it)")

    answer_keys = ("answer", "start_index", "end_index", "score")

    def training_task(self, config, **kwargs):
        return SquadTask(config, **kwargs)

    def smoke_files(self, directory, vocab):
        """SQuAD 1.1 JSON (``train.json``, ``dev.json``): where each review's number is."""
        paragraphs = [{"context": text, "qas": [{
            "id": f"q{i}", "question": "which number is it ?",
            "answers": [{"text": str(i), "answer_start": text.index(f" {i} ") + 1}]}]}
            for i, text in enumerate(smoke_sentences())]
        os.makedirs(directory, exist_ok=True)
        for split in ("train", "dev"):
            with open(os.path.join(directory, f"{split}.json"), "w", encoding="utf-8") as f:
                json.dump({"version": "1.1", "data": [{"title": "smoke",
                                                       "paragraphs": paragraphs}]}, f)
        return [f"task.type={self.task_type}", "task.name=squad", f"task.data_dir={directory}",
                f"task.vocab_file={vocab}", "task.doc_stride=32", "task.max_query_length=16"]

    def smoke_inputs(self):
        texts = smoke_sentences(3)
        return ["which number is it ?"] * len(texts), texts

    def build_model(self, config, info, **build_kwargs):
        return build_span_extractor(config, **build_kwargs)

    def text_inputs(self, info):
        return ("question", "context")

    def outputs(self, source, outputs, features, sep_id):
        spans = best_spans(outputs["start_logits"], outputs["end_logits"],
                           features["input_type_ids"], features["input_mask"],
                           features["input_word_ids"], sep_id)
        return dict(spans, start_logits=outputs["start_logits"],
                    end_logits=outputs["end_logits"])

    def serving_strings(self, module, result, features, texts):
        tf = lazy_tf()
        start, end = result["start_index"], result["end_index"]
        positions = tf.ragged.range(tf.maximum(start, 0), tf.where(start >= 0, end + 1, 0))
        ids = tf.gather(features["input_word_ids"], positions, batch_dims=1)   # [B, (n)]
        return {"answer": module.tokenizer.detokenize(ids)}

    def lite_outputs(self, source, model, features, sep_id):
        raw = model(features, training=False)   # spans are decoded by the runner
        return {k: raw[k] for k in ("start_logits", "end_logits")}

    def sdk_lite_outputs(self, source, model, features, sep_id):
        raw = self.lite_outputs(source, model, features, sep_id)
        return sdk_span_logits(raw["start_logits"], raw["end_logits"],
                               features["input_type_ids"], features["input_mask"],
                               features["input_word_ids"], sep_id)

    def sdk_problem(self, info, seq_length):
        return span.sdk_problem(info, seq_length)

    def runner_pair(self, meta):
        return True

    def decode(self, runner, outs, rows, example):
        return span.decode_answer(runner, outs[0], rows[0] if rows else None)


# -------------------------------------------------------------------------- model
def build_span_extractor(config: "AlbertConfig", seq_length: int | None = None,
                         name: str = "albert_span_extractor") -> "keras.Model":
    """SQuAD-style span extraction: ``start_logits``, ``end_logits`` ``[B, S]`` (pads masked)."""
    from albert_tf.layers import SpanLogits
    from albert_tf.models.task_models import encode
    from albert_tf.networks.encoder import AlbertFunctionalModel
    inputs, encoded = encode(config, seq_length)
    start, end = SpanLogits(config.initializer_range, name="span")(
        [encoded["sequence_output"], inputs["input_mask"]])
    return AlbertFunctionalModel(inputs, {"start_logits": start, "end_logits": end},
                                 albert_config=config, name=name)


# ------------------------------------------------------------------ training task
FILE_NAMES = {"train": ("train-v2.0.json", "train-v1.1.json", "train.json"),
              "dev": ("dev-v2.0.json", "dev-v1.1.json", "dev.json"),
              "test": ("test-v2.0.json", "test-v1.1.json", "test.json")}


class SquadTask(Task):
    """Span extraction: start/end logits over the ``[CLS] question [SEP] context [SEP]``."""

    main_metric = "f1"
    main_metric_comp = "higher"

    def __init__(self, config, tokenizer=None):
        super().__init__(config)
        self._tokenizer = tokenizer
        self._cache: dict[str, tuple] = {}

    tokenizer = TextTask.tokenizer

    def _file(self, split: str) -> str:
        directory = resolve_path(self.config.task.data_dir)
        for name in FILE_NAMES.get(split, (split,)):
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return path
        raise FileNotFoundError(f"no SQuAD {split} file in {directory!r} (looked for "
                                f"{', '.join(FILE_NAMES.get(split, (split,)))}).")

    def split_data(self, split: str, is_training: bool):
        """``(examples, features)`` of a split (cached)."""
        key = f"{split}:{is_training}"
        if key not in self._cache:
            from albert_tf.data import squad
            task = self.config.task
            examples = squad.read_squad_examples(self._file(split), is_training=is_training)
            features = squad.convert_examples_to_features(
                examples, self.tokenizer, task.max_seq_length, task.doc_stride,
                task.max_query_length, is_training=is_training)
            if not features:
                raise ValueError(f"SQuAD {split}: no features (empty file?).")
            self._cache[key] = (examples, features)
        return self._cache[key]

    def build_inputs(self, data_config, input_context=None):
        from albert_tf.data.squad import squad_dataset
        _, features = self.split_data(data_config.split, data_config.is_training)
        return squad_dataset(features, data_config.global_batch_size, data_config.is_training,
                             seed=self.seed(data_config), input_context=input_context)

    features = staticmethod(TextTask.features)

    def train_loss(self, inputs, outputs):
        from albert_tf.training import metrics as metrics_lib
        labels = inputs[1]
        start = metrics_lib.sparse_xent(labels["start_positions"], outputs["start_logits"])
        end = metrics_lib.sparse_xent(labels["end_positions"], outputs["end_logits"])
        loss, _, _ = metrics_lib.weighted_mean_loss((start + end) / 2.0)
        return loss, {}

    def eval_outputs(self, inputs, outputs) -> dict:
        tf = lazy_tf()
        return {"start_logits": tf.cast(outputs["start_logits"], tf.float32),
                "end_logits": tf.cast(outputs["end_logits"], tf.float32),
                "unique_ids": inputs["unique_ids"]}

    def _predictions(self, outputs, split: str) -> tuple[list, dict]:
        from albert_tf.data.squad import postprocess_predictions
        examples, features = self.split_data(split, False)
        row = {int(u): i for i, u in enumerate(outputs["unique_ids"])}
        order = [row[f.unique_id] for f in features]
        task = self.config.task
        version_2 = any(e.is_impossible for e in examples)
        predictions = postprocess_predictions(
            examples, features, outputs["start_logits"][order], outputs["end_logits"][order],
            n_best_size=task.n_best_size, max_answer_length=task.max_answer_length,
            version_2_with_negative=version_2)
        return examples, predictions

    def reduce_eval(self, outputs):
        examples, predictions = self._predictions(
            outputs, self.config.task.validation_data.split)
        from albert_tf.data.squad import gold_answers
        from albert_tf.training import metrics as metrics_lib
        result = metrics_lib.squad_metrics(predictions, gold_answers(examples))
        result["examples"] = float(len(examples))
        return result

    def predict(self, model, outputs, path: str) -> str:
        if path.endswith(".tsv"):
            path = path[:-4] + ".json"
        _, predictions = self._predictions(outputs, self.config.task.predict_data.split)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(predictions, f, indent=1, ensure_ascii=False)
        return path

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        return (TaskInfo(task=self.config.task.name or "squad", head="span",
                         max_seq_length=self.config.task.max_seq_length,
                         do_lower_case=self.config.task.do_lower_case, text_pair=True),
                self._vocab_or_none())
