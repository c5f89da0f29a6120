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
``sdk_outputs`` /        the outputs a mobile-SDK-shaped TFLite export keeps, and the SDK
``sdk_runners``          tasks that run it (`albert_tf.export.sdk_metadata`); empty: none
``keras_hub_task`` /     the keras-hub task that computes the head exactly, and our Dense
``keras_hub_dense``      layer that is its ``logits`` (`albert_tf.interop.keras_hub`)
``hf_task`` /            the Hugging Face class (``AlbertFor...``/``BertFor...``) that computes
``hf_dense`` /           the head exactly, our Dense layer that is its Linear, that Linear's
``hf_linear``            name, and its ``problem_type`` (`albert_tf.interop.hf_tasks`)
``runner_rows`` /        the edge runner (`albert_tflite.runner`): which packed rows one
``decode``               example becomes, and how their outputs become the answer
=======================  ==============================================================

Adding a head: subclass `TaskHead` here, register it in `HEADS`, add its model builder
to `albert_tf.models.task_models` (and, when it trains differently from the existing tasks, its
`Task` to `albert_tf.training.tasks`), and test it.

This module imports neither TensorFlow nor the rest of the package at import time: the
TFLite runner uses it without TensorFlow.
"""

from __future__ import annotations

import bisect
import importlib
import re
from typing import Any, Callable, Sequence

import numpy as np

# Longest answer (in tokens) considered when decoding spans.
MAX_ANSWER_LENGTH = 30


def _tf():
    from albert_tf.backend import tf
    return tf


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---------------------------------------------------------------------------- spans
def best_spans(start_logits, end_logits, input_type_ids, input_mask, input_word_ids,
               sep_id: int, max_answer_length: int = MAX_ANSWER_LENGTH):
    """Best ``start <= end < start + max_answer_length`` inside the context segment.

    Returns ``start_index``, ``end_index`` (int32 token positions of the packed input) and
    ``score`` (``start_logit + end_logit``) per row; ``-1`` indices when there is no context.
    """
    tf = _tf()
    in_context = ((input_type_ids == 1) & (input_mask == 1)
                  & tf.not_equal(input_word_ids, sep_id))                  # [B, S]
    neg = (tf.constant(-2 ** 30, tf.int32) if start_logits.dtype.is_integer  # fixed point:
           else tf.constant(-1e30, tf.float32))                        # sdk_span_logits
    start = tf.where(in_context, start_logits, neg)
    end = tf.where(in_context, end_logits, neg)
    seq = tf.shape(start)[1]
    i = tf.range(seq)
    band = (i[tf.newaxis, :] >= i[:, tf.newaxis]) & (
        i[tf.newaxis, :] < i[:, tf.newaxis] + max_answer_length)           # [S, S] start x end
    scores = start[:, :, tf.newaxis] + end[:, tf.newaxis, :]
    scores = tf.where(band[tf.newaxis], scores, neg)
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.cast(tf.argmax(flat, axis=-1), tf.int32)
    score = tf.reduce_max(flat, axis=-1)
    found = tf.reduce_any(in_context, axis=-1)
    start_index = tf.where(found, best // seq, -1)
    end_index = tf.where(found, best % seq, -1)
    return {"start_index": start_index, "end_index": end_index,
            "score": tf.where(found, score, tf.zeros_like(score))}


def best_span(start: np.ndarray, end: np.ndarray, type_ids: np.ndarray, mask: np.ndarray,
              word_ids: np.ndarray, sep_id: int, max_answer_length: int = MAX_ANSWER_LENGTH):
    """(start, end, score) of the best context span, as `best_spans` (NumPy, one row)."""
    ok = (type_ids == 1) & (mask == 1) & (word_ids != sep_id)
    positions = np.flatnonzero(ok)
    if positions.size == 0:
        return -1, -1, 0.0
    best = (-1, -1, -np.inf)
    for i in positions:
        js = positions[(positions >= i) & (positions < i + max_answer_length)]
        j = js[np.argmax(end[js])]
        score = float(start[i] + end[j])
        if score > best[2]:
            best = (int(i), int(j), score)
    return best


# BertQuestionAnswerer (tflite-support) feeds one [1, 384] row: its kMaxSeqLen.
SDK_SPAN_SEQ_LENGTH = 384
# The logit outside the context, and what the best span's start and end logits are raised
# by, in the SDK-shaped span export (`sdk_span_logits`).
SDK_SPAN_MASK = -10_000.0
SDK_SPAN_BOOST = 10_000.0


def sdk_span_logits(start_logits, end_logits, input_type_ids, input_mask, input_word_ids,
                    sep_id: int) -> dict:
    """``start_logits``, ``end_logits`` float ``[B, S]`` whose best answer for TFLite Task
    Library's ``BertQuestionAnswerer`` is the span of `best_spans`.

    The SDK ranks only the pairs of its 5 highest start and 5 highest end logits over the
    whole row (question and padding included), up to 32 tokens long, so on its own it may
    miss the span that `best_spans` (every start <= end < start + 30 in the context) finds.
    Here the logits outside the context are `SDK_SPAN_MASK`, and the best span's start and
    end logits are raised by `SDK_SPAN_BOOST`: the SDK's first answer is that span, its
    other answers are ranked by the model's logits. No context: no span, no answer.

    The span is found on int32 fixed-point logits (1/65536), the boost is int32 and the
    float arithmetic MUL/ADD/SUB only: an int8 export quantizes none of the decoding (int8
    ``SELECT_V2``, ``RESHAPE`` or ``ONE_HOT`` tensors spanning the masks lose the logits).
    """
    tf = _tf()
    in_context = tf.cast((input_type_ids == 1) & (input_mask == 1)
                         & tf.not_equal(input_word_ids, sep_id), tf.float32)   # [B, S]
    start = tf.cast(start_logits, tf.float32) * in_context + SDK_SPAN_MASK * (1.0 - in_context)
    end = tf.cast(end_logits, tf.float32) * in_context + SDK_SPAN_MASK * (1.0 - in_context)
    spans = best_spans(tf.cast(start * 65536.0, tf.int32), tf.cast(end * 65536.0, tf.int32),
                       input_type_ids, input_mask, input_word_ids, sep_id)
    positions = tf.range(tf.shape(start)[1])[tf.newaxis, :]               # [1, S]

    def boost(index):                                                    # [B] -> [B, S]
        hit = tf.cast(positions == index[:, tf.newaxis], tf.int32)      # an int32 ONE_HOT
        return tf.cast(hit * int(SDK_SPAN_BOOST), tf.float32)

    return {"start_logits": start + boost(spans["start_index"]),
            "end_logits": end + boost(spans["end_index"])}


# ----------------------------------------------------------------------------- base
class TaskHead:
    """What one head does; see the module docstring. Subclasses override what differs."""

    name = ""
    #: ``task.type`` of the experiment whose training task builds this head (None: another
    #: head's task trains it, e.g. regression is trained by the classification task).
    task_type: str | None = None
    #: ``"module:Class"`` of the `Task` that trains it.
    training_task_class = "albert_tf.training.tasks:ClassificationTask"
    labels_required = False
    #: whether a TFLite export may put the tokenizer in the graph (``--with_tokenizer``).
    lite_tokenizer = True
    #: the outputs of an SDK-shaped TFLite export, in the order the SDKs read them (empty:
    #: no mobile SDK runs this head), and the SDK tasks that run it.
    sdk_outputs: tuple[str, ...] = ()
    sdk_runners: tuple[str, ...] = ()
    #: the keras-hub task base class that computes this head exactly (``"TextClassifier"``:
    #: pooled ``[CLS]`` -> dropout -> Dense ``logits``) and our Dense layer that is its
    #: ``logits`` layer (`albert_tf.interop.keras_hub`); None: keras-hub has no such task.
    keras_hub_task: str | None = None
    keras_hub_dense: str | None = None
    #: Hugging Face: the class suffix (``Albert``/``Bert`` + ``hf_task``) whose head computes
    #: this one from the same encoder outputs, our Dense layer that is that head's
    #: ``nn.Linear`` (``hf_linear``) and the config's ``problem_type``; None: no Hugging Face
    #: class. ``hf_dense`` None with an ``hf_task``: the name map's own heads (mlm/, sop/).
    hf_task: str | None = None
    hf_dense: str | None = None
    hf_linear: str = "classifier"
    hf_problem_type: str | None = None
    #: what differs from the Hugging Face class, for the conversion report ("": nothing).
    hf_note = ""

    # -- task.json ---------------------------------------------------------------------
    def validate(self, info) -> None:
        if self.labels_required and not info.label_list:
            raise ValueError(f"task.json label_list: a {self.name} task needs its labels.")

    # -- model and training ------------------------------------------------------------
    def build_model(self, config, info, **build_kwargs):
        raise NotImplementedError

    def training_task(self, config, **kwargs):
        module, _, name = self.training_task_class.partition(":")
        return getattr(importlib.import_module(module), name)(config, **kwargs)

    # -- SavedModel serving ------------------------------------------------------------
    def text_inputs(self, info) -> tuple[str, ...]:
        """Names of the string inputs of the serving signatures."""
        return ("text_a", "text_b") if info.text_pair else ("text",)

    def text_shape(self, name: str, batch_size: int | None = None) -> list:
        """Shape of string input ``name`` (``[batch]``; ``None`` = any batch)."""
        return [batch_size]

    def tokenize(self, tokenizer, texts: Sequence, names: Sequence[str]) -> dict:
        """The three int32 id tensors of raw-text inputs ``texts`` (in ``names`` order)."""
        tf = _tf()
        text_a = tf.reshape(texts[0], [-1])
        text_b = tf.reshape(texts[1], [-1]) if len(texts) > 1 else None
        if text_b is not None:       # else an obscure shape error deep in the tokenizer
            check = tf.debugging.assert_equal(
                tf.size(text_a), tf.size(text_b), message=(
                    f"{names[0]} and {names[1]} must have the same batch size (one pair per "
                    "row)"))
            with tf.control_dependencies([check]):
                text_a = tf.identity(text_a)
        return tokenizer(text_a, text_b)

    def model_features(self, features: dict) -> dict:
        """``[B, S]`` ids as the model takes them (id signatures, encoder view)."""
        return features

    def prepare_serving(self, module) -> None:
        """Adds what `serving_strings` needs to the `ServingModule` (tracked assets)."""

    def outputs(self, source, outputs: dict, features: dict, sep_id: int) -> dict:
        """Task outputs (tensors) of a model call on tokenized raw text."""
        raise NotImplementedError

    def serving_strings(self, module, result: dict, features: dict, texts: Sequence) -> dict:
        """String outputs added to `outputs` in the SavedModel (labels, answers)."""
        return {}

    # -- TFLite ------------------------------------------------------------------------
    def lite_outputs(self, source, model, features: dict, sep_id: int) -> dict:
        """Outputs of a TFLite id signature: ``features`` are ``[batch, seq]`` ids."""
        raw = model(self.model_features(features), training=False)
        return self.outputs(source, raw, features, sep_id)

    def sdk_lite_outputs(self, source, model, features: dict, sep_id: int) -> dict:
        """Outputs of the SDK-shaped TFLite export (``sdk_outputs``; ``[1, seq]`` ids in)."""
        result = self.lite_outputs(source, model, features, sep_id)
        return {k: result[k] for k in self.sdk_outputs}

    def sdk_problem(self, info, seq_length: int) -> str | None:
        """Why the SDKs cannot run this head's export of ``seq_length`` ids (None: they can)."""
        return None

    # -- edge runner -------------------------------------------------------------------
    def runner_pair(self, meta: dict) -> bool:
        """Whether each example has a second input (``texts_b``)."""
        return bool(meta.get("text_pair"))

    def runner_rows(self, text_a: str, text_b: Any) -> list[tuple[str, str | None]]:
        """The (text_a, text_b) rows one example is packed into (one per model row)."""
        return [(text_a, text_b)]

    def decode(self, runner, outs: list[dict], rows: list[dict] | None,
               example: tuple[str, Any]) -> dict:
        """The answer for one example from the outputs of its rows (packed ``rows``; None
        for in-graph tokenizer models)."""
        return {k: np.asarray(v).tolist() for k, v in outs[0].items()}


# -------------------------------------------------------------------------- heads
class ClassificationHead(TaskHead):
    """Sequence (pair) classification: ``logits [B, C]`` from the pooled ``[CLS]``."""

    name = "classification"
    task_type = "classification"
    labels_required = True
    sdk_outputs = ("probabilities",)
    sdk_runners = ("Task Library BertNLClassifier", "MediaPipe TextClassifier")
    keras_hub_task = "TextClassifier"
    keras_hub_dense = "classifier"
    hf_task = "ForSequenceClassification"              # pooler -> dropout -> classifier
    hf_dense = "classifier"
    hf_problem_type = "single_label_classification"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_classifier
        return build_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = _tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        return {"label": _tf().gather(module.label_names, result["label_id"])}

    def decode(self, runner, outs, rows, example):
        probs = outs[0]["probabilities"].astype(float)
        label_id = int(np.argmax(probs))
        return {"label": runner.labels[label_id] if runner.labels else str(label_id),
                "label_id": label_id, "probabilities": probs.tolist()}


class RegressionHead(TaskHead):
    """Sequence regression (STS-B): ``value [B, 1]``; trained by the classification task."""

    name = "regression"
    hf_task = "ForSequenceClassification"              # num_labels=1
    hf_dense = "regressor"
    hf_problem_type = "regression"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_regressor
        return build_regressor(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = _tf()
        return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])}

    def decode(self, runner, outs, rows, example):
        return {"value": float(np.reshape(outs[0]["value"], [-1])[0])}


class SpanHead(TaskHead):
    """SQuAD span extraction over ``[CLS] question [SEP] context [SEP]``."""

    name = "span"
    task_type = "squad"
    training_task_class = "albert_tf.training.squad_task:SquadTask"
    sdk_outputs = ("end_logits", "start_logits")
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
        tf = _tf()
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
        if seq_length != SDK_SPAN_SEQ_LENGTH:
            return (f"BertQuestionAnswerer feeds [1, {SDK_SPAN_SEQ_LENGTH}] ids (fixed in "
                    f"tflite-support), not {seq_length}: export with "
                    f"--seq_lengths={SDK_SPAN_SEQ_LENGTH} (max_position_embeddings >= "
                    f"{SDK_SPAN_SEQ_LENGTH})")
        if not info.do_lower_case:
            return ("BertQuestionAnswerer lower-cases ASCII before tokenizing: a cased model "
                    "(do_lower_case=false) would get other ids than ours")
        return None

    def runner_pair(self, meta):
        return True

    def decode(self, runner, outs, rows, example):
        out = outs[0]
        if "start_index" in out:
            return {"start_index": int(out["start_index"]), "end_index": int(out["end_index"]),
                    "score": float(out["score"])}
        row = rows[0]
        ids = np.array(row["input_word_ids"])
        i, j, score = best_span(out["start_logits"], out["end_logits"],
                                np.array(row["input_type_ids"]), np.array(row["input_mask"]),
                                ids, runner.special["sep"])
        answer = runner.tokenizer.decode(ids[i:j + 1].tolist()) if i >= 0 else ""
        return {"answer": answer, "start_index": i, "end_index": j, "score": score}


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
        tf = _tf()
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
        tf = _tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "choice_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        return {"choice": _tf().gather(texts[1], result["choice_id"], batch_dims=1)}

    def lite_outputs(self, source, model, features, sep_id):
        tf = _tf()
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
        probs = _softmax(scores)
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
        tf = _tf()
        logits = tf.cast(outputs["logits"], tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": tf.cast(tf.argmax(logits, axis=-1), tf.int32)}

    def serving_strings(self, module, result, features, texts):
        tf = _tf()
        return {"label": tf.gather(module.label_names, result["label_id"]),
                "token": module.tokenizer.id_to_token(features["input_word_ids"])}

    def decode(self, runner, outs, rows, example):
        text = example[0]
        _, spans = runner.tokenizer.encode_with_offsets(text)
        pieces = int(np.sum(rows[0]["input_mask"])) - 2          # [CLS] pieces [SEP]
        label_ids = np.argmax(outs[0]["probabilities"], -1)[1:pieces + 1]
        words, labels = word_labels(text, spans[:pieces], label_ids)
        return {"words": words, "labels": [runner.labels[i] for i in labels]}


def word_labels(text: str, spans: Sequence[tuple[int, int]],
                label_ids: Sequence[int]) -> tuple[list[str], list[int]]:
    """The whitespace-separated words of ``text`` that the pieces of ``spans`` (the
    ``(start, end)`` characters of each piece, in order: ``encode_with_offsets``) fall in,
    and the label id of each word's first piece: the words and tags of training
    (`albert_tf.data.task_data.encode_tagged`), for either vocabulary."""
    bounds = [m.span() for m in re.finditer(r"\S+", text)]
    ends = [end for _, end in bounds]
    words: list[str] = []
    labels: list[int] = []
    last = -1
    for (start, end), label in zip(spans, label_ids):
        piece = text[start:end]
        first = start + len(piece) - len(piece.lstrip())   # SentencePiece: a leading space
        word = bisect.bisect_right(ends, first)              # the word at or after ``first``
        if word < len(bounds) and word != last:
            words.append(text[bounds[word][0]:bounds[word][1]])
            labels.append(int(label))
            last = word
    return words, labels


class PretrainingHead(TaskHead):
    """Masked LM + sentence order (a pretrained model directory): serves ``pooled_output``."""

    name = "pretraining"
    task_type = "pretraining"
    training_task_class = "albert_tf.training.tasks:PretrainingTask"
    hf_task = "ForPreTraining"

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.pretrainer import build_pretrainer
        return build_pretrainer(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = _tf()
        return {"pooled_output": tf.cast(outputs["pooled_output"], tf.float32)}

    def lite_outputs(self, source, model, features, sep_id):
        tf = _tf()
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
    sdk_outputs = ("embedding",)
    sdk_runners = ("MediaPipe TextEmbedder",)

    def text_inputs(self, info):
        return ("text",)

    def runner_pair(self, meta):
        return False

    def lite_outputs(self, source, model, features, sep_id):
        tf = _tf()
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


def sdk_heads() -> dict[str, tuple[str, ...]]:
    """Head name -> the mobile SDK tasks that run its SDK-shaped TFLite export."""
    return {name: head.sdk_runners for name, head in {**HEADS, **EXPORT_HEADS}.items()
            if head.sdk_outputs}


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


def for_task_type(task_type: str) -> TaskHead:
    """The head whose training task ``task.type`` names."""
    for head in HEADS.values():
        if head.task_type == task_type:
            return head
    types = sorted(h.task_type for h in HEADS.values() if h.task_type)
    raise ValueError(f"task.type: unknown task type {task_type!r}; use one of {types}.")
