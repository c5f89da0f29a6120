"""The task-head registry: everything that depends on a model's head, in one place.

A finetuned model directory's ``task.json`` names its head (`albert_tf.checkpoints.TaskInfo`).
Training, export and the edge runner never compare head names; they look the head up::

    from albert_tf import task_heads as heads
    head = heads.get(task_info.head)          # a `TaskHead`
    model = head.build_model(config, task_info)

One `TaskHead` subclass per head owns:

=======================  ==============================================================
``build_model``          the Keras task model (a builder of `albert_tf.models.task_models`)
``task_type`` /          the training task (``task.type`` of the experiment) and the
``training_task``        `albert_tf.training.tasks.Task` that trains it (loss, metrics,
                         features and labels); named by ``"module:Class"`` so that this
                         module imports no training code
``text_inputs`` /        the SavedModel serving signature: raw-text input names and shapes,
``text_shape`` /         how they are tokenized, and the outputs (tensors and strings)
``tokenize`` /
``outputs`` /
``serving_strings``
``lite_outputs``         the outputs of the TFLite id signatures (``[batch, seq]`` ids in)
``sdk_outputs`` /        the outputs a mobile-SDK-shaped TFLite export keeps (with their
``sdk_runners`` /        metadata descriptions), the SDK tasks that run it, and whether its
``sdk_label_scores``     output is label scores (`albert_tf.export.sdk_metadata`); empty: none
``onnx_outputs``         the outputs of the ONNX export (`albert_tf.export.onnx` registers
                         the graph of each head that has them); empty: no ONNX export
``keras_hub_task`` /     the keras-hub task that computes the head exactly, and our Dense
``keras_hub_dense``      layer that is its ``logits`` (`albert_tf.interop.keras_hub`)
``hf_task`` /            the Hugging Face class (``AlbertFor...``/``BertFor...``) that computes
``hf_dense`` /           the head exactly, our Dense layer that is its Linear, that Linear's
``hf_linear``            name, and its ``problem_type`` (`albert_tf.interop.hf_tasks`)
``runner_rows`` /        the export runners (`albert_tf.export.runner`): which packed rows one
``decode``               example becomes, and how their outputs become the answer
=======================  ==============================================================

Adding a head: subclass `TaskHead` (`albert_tf.heads.base`: the defaults) here, register it
in `HEADS`, add its model builder to `albert_tf.models.task_models` (and, when it trains
differently from the existing tasks, its `Task` to `albert_tf.training.tasks`; with
``onnx_outputs``, its graph to `albert_tf.export.onnx`), and test it. Decoding helpers
(span math, the SDK span logits, the runner's NumPy) live in `albert_tf.heads`.

This module imports neither TensorFlow nor the rest of the package at import time: the
TFLite runner uses it without TensorFlow.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from albert_tf.heads import span
from albert_tf.heads.base import TaskHead, lazy_tf
# Public here too (the runner, export and tests import them from the registry).
from albert_tf.heads.decoding import softmax, word_labels  # noqa: F401
from albert_tf.heads.span import (MAX_ANSWER_LENGTH, SDK_SPAN_BOOST,  # noqa: F401
                                  SDK_SPAN_MASK, SDK_SPAN_SEQ_LENGTH, best_span, best_spans,
                                  sdk_span_logits)


# -------------------------------------------------------------------------- heads
class ClassificationHead(TaskHead):
    """Sequence (pair) classification: ``logits [B, C]`` from the pooled ``[CLS]``."""

    name = "classification"
    task_type = "classification"
    labels_required = True
    sdk_outputs = {"probabilities": "Probabilities of the labels."}
    sdk_runners = ("Task Library BertNLClassifier", "MediaPipe TextClassifier")
    sdk_label_scores = True
    onnx_outputs = ("probabilities", "label_id")
    keras_hub_task = "TextClassifier"
    keras_hub_dense = "classifier"
    hf_task = "ForSequenceClassification"              # pooler -> dropout -> classifier
    hf_dense = "classifier"
    hf_problem_type = "single_label_classification"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_classifier
        return build_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        return {"label": lazy_tf().gather(module.label_names, result["label_id"])}

    def decode(self, runner, outs, rows, example):
        probs = outs[0]["probabilities"].astype(float)
        label_id = int(np.argmax(probs))
        return {"label": runner.labels[label_id] if runner.labels else str(label_id),
                "label_id": label_id, "probabilities": probs.tolist()}


class RegressionHead(TaskHead):
    """Sequence regression (STS-B): ``value [B, 1]``; trained by the classification task."""

    name = "regression"
    onnx_outputs = ("value",)
    hf_task = "ForSequenceClassification"              # num_labels=1
    hf_dense = "regressor"
    hf_problem_type = "regression"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_regressor
        return build_regressor(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])}

    def decode(self, runner, outs, rows, example):
        return {"value": float(np.reshape(outs[0]["value"], [-1])[0])}


class SpanHead(TaskHead):
    """SQuAD span extraction over ``[CLS] question [SEP] context [SEP]``."""

    name = "span"
    task_type = "squad"
    training_task_class = "albert_tf.training.squad_task:SquadTask"
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

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_span_extractor
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


class MultipleChoiceHead(TaskHead):
    """Pick one of C candidate second texts for a context: ``logits [B, C]``.

    Each (context, choice) pair is one encoder row scored by ``Dense(1)`` on the pooled
    ``[CLS]``; C is not fixed by the model. Serving: ``context`` string ``[B]`` and
    ``choices`` string ``[B, C]`` in; ``probabilities [B, C]``, ``choice_id [B]`` and the
    chosen ``choice`` string out. TFLite: one pair per id row, output ``score [batch]``
    (the runner packs the C rows of an example and takes the softmax over their scores).
    """

    name = "multiple_choice"
    task_type = "multiple_choice"
    training_task_class = "albert_tf.training.tasks:MultipleChoiceTask"
    lite_tokenizer = False
    hf_task = "ForMultipleChoice"                      # pooler -> dropout -> Linear(H, 1)
    hf_dense = "choice_scorer"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_multiple_choice
        build_kwargs.pop("seq_length", None)   # any number of choices and length
        return build_multiple_choice(config, **build_kwargs)

    def text_inputs(self, info):
        return ("context", "choices")

    def text_shape(self, name, batch_size=None):
        return [batch_size, None] if name == "choices" else [batch_size]

    def tokenize(self, tokenizer, texts, names):
        tf = lazy_tf()
        context, choices = tf.reshape(texts[0], [-1]), texts[1]
        check = tf.debugging.assert_equal(
            tf.size(context), tf.shape(choices)[0],
            message="context and choices must have the same batch size (one row per example)")
        with tf.control_dependencies([check]):
            num = tf.shape(choices)[1]
        features = tokenizer(tf.repeat(context, num), tf.reshape(choices, [-1]))
        return {k: tf.reshape(v, [-1, num, tf.shape(v)[-1]]) for k, v in features.items()}

    def model_features(self, features):
        return {k: v[:, None, :] for k, v in features.items()}   # one choice per row

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "choice_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        return {"choice": lazy_tf().gather(texts[1], result["choice_id"], batch_dims=1)}

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        logits = model(self.model_features(features), training=False)["logits"]
        return {"score": tf.reshape(tf.cast(logits, tf.float32), [-1])}

    def runner_pair(self, meta):
        return True

    def runner_rows(self, text_a, text_b):
        if isinstance(text_b, str) or not text_b:
            raise ValueError("a multiple-choice model takes a list of candidate texts per "
                             "example (texts_b=[[choice, ...], ...]; --choice on the CLI)")
        return [(text_a, choice) for choice in text_b]

    def decode(self, runner, outs, rows, example):
        scores = np.array([float(np.reshape(o["score"], [-1])[0]) for o in outs])
        probs = softmax(scores)
        best = int(np.argmax(scores))
        return {"choice": example[1][best], "choice_id": best,
                "probabilities": probs.tolist()}


class TokenClassificationHead(TaskHead):
    """Tag every word: ``logits [B, S, T]``, trained on each word's first piece.

    Serving: ``text`` in; per piece ``token`` string, ``label`` string, ``label_id`` and
    ``probabilities`` out (``[B, S]``, ``[B, S, T]``; a word's tag is its first piece's).
    The runner answers per whitespace-separated word of the text, as training tags them
    (`word_labels`): ``words`` and ``labels``.
    """

    name = "token_classification"
    task_type = "token_classification"
    training_task_class = "albert_tf.training.tasks:TokenClassificationTask"
    labels_required = True
    lite_tokenizer = False
    hf_task = "ForTokenClassification"                 # dropout -> classifier, no pooler
    hf_dense = "token_classifier"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_token_classifier
        return build_token_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        tf = lazy_tf()
        return {"label": tf.gather(module.label_names, result["label_id"]),
                "token": module.tokenizer.id_to_token(features["input_word_ids"])}

    def decode(self, runner, outs, rows, example):
        text = example[0]
        _, spans = runner.tokenizer.encode_with_offsets(text)
        pieces = int(np.sum(rows[0]["input_mask"])) - 2          # [CLS] pieces [SEP]
        label_ids = np.argmax(outs[0]["probabilities"], -1)[1:pieces + 1]
        words, labels = word_labels(text, spans[:pieces], label_ids)
        return {"words": words, "labels": [runner.labels[i] for i in labels]}


class PretrainingHead(TaskHead):
    """Masked LM + sentence order (a pretrained model directory): serves ``pooled_output``."""

    name = "pretraining"
    task_type = "pretraining"
    onnx_outputs = ("sequence_output", "pooled_output")
    training_task_class = "albert_tf.training.tasks:PretrainingTask"
    hf_task = "ForPreTraining"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.pretrainer import build_pretrainer
        return build_pretrainer(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"pooled_output": tf.cast(outputs["pooled_output"], tf.float32)}

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        encoded = source.encoder(features, training=False)
        return {k: tf.cast(v, tf.float32) for k, v in encoded.items()}


class EmbeddingHead(TaskHead):
    """A sentence embedding from any model's encoder (an export view, never trained):
    ``embedding [B, H]``, the mean of ``sequence_output`` over the mask, L2-normalized (what
    MediaPipe ``TextEmbedder`` reads; cosine similarity is then a dot product).

    ``albert-tf-export --format=tflite --head=embedding`` exports it from a finetuned or a
    pretrained model directory.
    """

    name = "embedding"
    sdk_outputs = {"embedding": "Mean of the last hidden states over the mask, L2-normalized."}
    sdk_runners = ("MediaPipe TextEmbedder",)

    def text_inputs(self, info):
        return ("text",)

    def runner_pair(self, meta):
        return False

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        sequence = tf.cast(source.encoder(features, training=False)["sequence_output"],
                           tf.float32)                                     # [B, S, H]
        mask = tf.cast(features["input_mask"], tf.float32)[:, :, tf.newaxis]  # [B, S, 1]
        mean = tf.reduce_sum(sequence * mask, axis=1) / tf.maximum(
            tf.reduce_sum(mask, axis=1), 1.0)                              # [B, H]
        return {"embedding": tf.math.l2_normalize(mean, axis=-1)}

    def decode(self, runner, outs, rows, example):
        return {"embedding": np.asarray(outs[0]["embedding"], float).reshape(-1).tolist()}


HEADS: dict[str, TaskHead] = {head.name: head for head in (
    ClassificationHead(), RegressionHead(), SpanHead(), TokenClassificationHead(),
    MultipleChoiceHead(), PretrainingHead())}
#: Heads an export can put on any model (``--head=``); no model directory is trained as one.
EXPORT_HEADS: dict[str, TaskHead] = {head.name: head for head in (EmbeddingHead(),)}


def get(name: str) -> TaskHead:
    """The registered head ``name`` (a ValueError listing the heads otherwise)."""
    head = HEADS.get(name) or EXPORT_HEADS.get(name)
    if head is None:
        raise ValueError(f"unknown head {name!r}; use one of {tuple(HEADS)}.")
    return head


def every_head() -> dict[str, TaskHead]:
    """Every registered head by name: the trained ones (`HEADS`), then `EXPORT_HEADS`."""
    return {**HEADS, **EXPORT_HEADS}


def sdk_heads() -> dict[str, tuple[str, ...]]:
    """Head name -> the mobile SDK tasks that run its SDK-shaped TFLite export."""
    return {name: head.sdk_runners for name, head in every_head().items() if head.sdk_outputs}


def onnx_heads() -> tuple[str, ...]:
    """The heads the ONNX export writes (``onnx_outputs``)."""
    return tuple(name for name, head in every_head().items() if head.onnx_outputs)


def for_keras_hub_task(is_task: Callable[[str], bool]) -> TaskHead | None:
    """The head whose keras-hub task base class name satisfies ``is_task`` (e.g. "a keras-hub
    task object is an instance of it"); None when no head has such a keras-hub task."""
    return next((head for head in HEADS.values()
                 if head.keras_hub_task is not None and is_task(head.keras_hub_task)), None)


def hf_heads() -> tuple[str, ...]:
    """The heads that export to a Hugging Face class (``hf_task``)."""
    return tuple(name for name, head in HEADS.items() if head.hf_task)


def for_hf_task(hf_task: str, problem_type: str | None) -> TaskHead | None:
    """The head computed by Hugging Face class suffix ``hf_task`` (e.g.
    ``"ForSequenceClassification"``) with config ``problem_type``; None when no head is."""
    return next((head for head in HEADS.values() if head.hf_dense and head.hf_task == hf_task
                 and head.hf_problem_type in (None, problem_type)), None)


def task_types() -> tuple[str, ...]:
    """Every ``task.type`` the trainer runs: the training task of a head."""
    return tuple(head.task_type for head in HEADS.values() if head.task_type)


def for_task_type(task_type: str) -> TaskHead:
    """The head whose training task ``task.type`` names."""
    for head in HEADS.values():
        if head.task_type == task_type:
            return head
    raise ValueError(f"task.type: unknown task type {task_type!r}; use one of "
                     f"{sorted(task_types())}.")
