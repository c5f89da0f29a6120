"""Span extraction decoding (the ``span`` head of `albert_tf.heads`): the best answer
span inside the context, in TensorFlow (`best_spans`, in exported graphs) and NumPy
(`best_span`, the edge runner), and the logits of the SDK-shaped TFLite export that make
TFLite Task Library's ``BertQuestionAnswerer`` answer that span (`sdk_span_logits`)."""

from __future__ import annotations

import numpy as np

from albert_tf.heads.base import lazy_tf

# Longest answer (in tokens) considered when decoding spans.
MAX_ANSWER_LENGTH = 30
# BertQuestionAnswerer (tflite-support) feeds one [1, 384] row: its kMaxSeqLen.
SDK_SPAN_SEQ_LENGTH = 384
# The logit outside the context, and what the best span's start and end logits are raised
# by, in the SDK-shaped span export (`sdk_span_logits`).
SDK_SPAN_MASK = -10_000.0
SDK_SPAN_BOOST = 10_000.0


def best_spans(start_logits, end_logits, input_type_ids, input_mask, input_word_ids,
               sep_id: int, max_answer_length: int = MAX_ANSWER_LENGTH):
    """Best ``start <= end < start + max_answer_length`` inside the context segment.

    Returns ``start_index``, ``end_index`` (int32 token positions of the packed input) and
    ``score`` (``start_logit + end_logit``) per row; ``-1`` indices when there is no context.
    """
    tf = lazy_tf()
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
    tf = lazy_tf()
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


def sdk_problem(info, seq_length: int) -> str | None:
    """Why ``BertQuestionAnswerer`` cannot run a span export of ``seq_length`` ids for the
    model of ``info`` (a `TaskInfo`); None when it can."""
    if seq_length != SDK_SPAN_SEQ_LENGTH:
        return (f"BertQuestionAnswerer feeds [1, {SDK_SPAN_SEQ_LENGTH}] ids (fixed in "
                f"tflite-support), not {seq_length}: export with "
                f"--seq_lengths={SDK_SPAN_SEQ_LENGTH} (max_position_embeddings >= "
                f"{SDK_SPAN_SEQ_LENGTH})")
    if not info.do_lower_case:
        return ("BertQuestionAnswerer lower-cases ASCII before tokenizing: a cased model "
                "(do_lower_case=false) would get other ids than ours")
    return None


def decode_answer(runner, out: dict, row: dict | None) -> dict:
    """The edge runner's answer for one span row: the in-graph decoding's indices (in-graph
    tokenizer models), else `best_span` on the logits and the detokenized answer."""
    if "start_index" in out:
        return {"start_index": int(out["start_index"]), "end_index": int(out["end_index"]),
                "score": float(out["score"])}
    ids = np.array(row["input_word_ids"])
    i, j, score = best_span(out["start_logits"], out["end_logits"],
                            np.array(row["input_type_ids"]), np.array(row["input_mask"]),
                            ids, runner.special["sep"])
    answer = runner.tokenizer.decode(ids[i:j + 1].tolist()) if i >= 0 else ""
    return {"answer": answer, "start_index": i, "end_index": j, "score": score}
