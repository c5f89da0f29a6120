"""SQuAD v1.1 / v2.0: JSON -> span features (with doc stride) -> answers back to text.

    examples = read_squad_examples("train-v2.0.json", is_training=True)
    features = convert_examples_to_features(examples, tok, max_seq_length=384, doc_stride=128,
                                            max_query_length=64, is_training=True)
    ds = squad_dataset(features, batch_size=32, is_training=True, seed=0)
    ...
    answers = postprocess_predictions(examples, features, start_logits, end_logits)

Layout: ``[CLS] question [SEP] context-window [SEP]``. Every context token keeps the character
span of the original context it came from (the tokenizer's ``encode_with_offsets``, either
vocabulary: `AlbertTokenizer` spans include a piece's leading space, `WordPieceTokenizer`
spans are a piece's characters, a ``##`` piece's part of its word), so a predicted token
span maps back to the exact original text. ``start_position`` /
``end_position`` are 0 (``[CLS]``) for unanswerable questions and for windows that do not
contain the whole answer.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import math
from typing import Sequence

import numpy as np

from albert_tf.data.task_data import batch_slices

log = logging.getLogger(__name__)


class SquadError(ValueError):
    """An unreadable SQuAD file."""


_KIND_NAMES = {str: "a string", int: "an integer", bool: "a boolean (true/false)", list: "a list",
               (list, type(None)): "a list", (str, int): "a string or an integer"}


@dataclasses.dataclass
class SquadExample:
    qas_id: str
    question_text: str
    context_text: str
    answer_text: str | None = None
    start_char: int | None = None
    is_impossible: bool = False
    answers: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class SquadFeature:
    unique_id: int
    example_index: int
    doc_span_index: int
    input_word_ids: list[int]
    input_mask: list[int]
    input_type_ids: list[int]
    token_spans: list[tuple[int, int] | None]   # character span in the context, per position
    token_is_max_context: list[bool]
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = False


def read_squad_examples(source, is_training: bool, skipped: dict | None = None
                        ) -> list[SquadExample]:
    """Examples from a SQuAD JSON file (path) or an already loaded dict. In training, an
    answer whose text is not at ``answer_start`` in the context is skipped (counted)."""
    if isinstance(source, dict):
        data = source
    else:
        try:
            # utf-8-sig: a byte-order mark before the JSON is not an error
            with open(source, encoding="utf-8-sig") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise SquadError(f"SQuAD file not found: {source}") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise SquadError(f"{source} is not SQuAD JSON: {e}") from None
    name = source if not isinstance(source, dict) else "input"
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SquadError(f"{name}: expected "
                         "{'data': [{'paragraphs': [...]}]}")

    def get(obj, key, kind, where, default=None):
        """``obj[key]`` checked to be ``kind`` (``default`` when absent and not None)."""
        if not isinstance(obj, dict):
            raise SquadError(f"{name}: {where} must be a JSON object, got {obj!r:.80}")
        if key not in obj and default is not None:
            return default
        value = obj.get(key)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise SquadError(f"{name}: {where}.{key} must be {_KIND_NAMES[kind]}, got "
                             f"{value!r:.80}")
        return value

    out: list[SquadExample] = []
    bad = 0
    for i, article in enumerate(data["data"]):
        for j, para in enumerate(get(article, "paragraphs", list, f"data[{i}]", [])):
            where = f"data[{i}].paragraphs[{j}]"
            context = get(para, "context", str, where)
            for k, qa in enumerate(get(para, "qas", list, where, [])):
                at = f"{where}.qas[{k}]"
                impossible = get(qa, "is_impossible", bool, at, False)
                answers = get(qa, "answers", (list, type(None)), at, []) or []
                texts = [get(a, "text", str, f"{at}.answers[{n}]") for n, a in enumerate(answers)]
                qas_id = get(qa, "id", (str, int), at)
                ex = SquadExample(str(qas_id), get(qa, "question", str, at), context,
                                  is_impossible=impossible, answers=texts)
                if is_training and not impossible:
                    if not answers:
                        bad += 1
                        continue
                    a = answers[0]
                    start = get(a, "answer_start", int, f"{at}.answers[0]")
                    if (start < 0 or not a["text"]
                            or context[start:start + len(a["text"])] != a["text"]):
                        bad += 1
                        continue
                    ex.answer_text, ex.start_char = a["text"], start
                out.append(ex)
    if bad:
        log.warning("skipped %d SQuAD questions whose answer is not in the context", bad)
    if skipped is not None:
        skipped["bad_answers"] = skipped.get("bad_answers", 0) + bad
    return out


def _max_context(spans: list[tuple[int, int]], span_index: int, position: int) -> bool:
    best_score, best = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best = score, i
    return best == span_index


def convert_examples_to_features(examples: Sequence[SquadExample], tokenizer,
                                 max_seq_length: int = 384, doc_stride: int = 128,
                                 max_query_length: int = 64, is_training: bool = False
                                 ) -> list[SquadFeature]:
    features: list[SquadFeature] = []
    unique_id = 1_000_000_000
    for ex_index, ex in enumerate(examples):
        query = tokenizer.encode(ex.question_text)[:max_query_length]
        doc_ids, doc_spans = tokenizer.encode_with_offsets(ex.context_text)
        tok_start = tok_end = None
        if is_training and not ex.is_impossible:
            a0, a1 = ex.start_char, ex.start_char + len(ex.answer_text)
            inside = [i for i, (s, e) in enumerate(doc_spans) if e > a0 and s < a1 and e > s]
            if not inside:
                continue
            tok_start, tok_end = inside[0], inside[-1]
        max_doc = max_seq_length - len(query) - 3
        if max_doc < 1:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the context")
        windows: list[tuple[int, int]] = []
        start = 0
        while start < len(doc_ids):
            length = min(len(doc_ids) - start, max_doc)
            windows.append((start, length))
            if start + length == len(doc_ids):
                break
            start += min(length, doc_stride)
        if not windows:
            windows = [(0, 0)]
        for w_index, (w_start, w_len) in enumerate(windows):
            ids = [tokenizer.cls_id] + query + [tokenizer.sep_id]
            types = [0] * len(ids)
            spans: list[tuple[int, int] | None] = [None] * len(ids)
            max_ctx = [False] * len(ids)
            for k in range(w_start, w_start + w_len):
                ids.append(doc_ids[k])
                types.append(1)
                spans.append(doc_spans[k])
                max_ctx.append(_max_context(windows, w_index, k))
            ids.append(tokenizer.sep_id)
            types.append(1)
            spans.append(None)
            max_ctx.append(False)
            n = len(ids)
            pad = max_seq_length - n
            feat = SquadFeature(unique_id, ex_index, w_index, ids + [tokenizer.pad_id] * pad,
                                [1] * n + [0] * pad, types + [0] * pad,
                                spans + [None] * pad, max_ctx + [False] * pad)
            if is_training:
                offset = len(query) + 2
                if ex.is_impossible or not (w_start <= tok_start and tok_end < w_start + w_len):
                    feat.start_position = feat.end_position = 0
                    feat.is_impossible = True
                else:
                    feat.start_position = tok_start - w_start + offset
                    feat.end_position = tok_end - w_start + offset
            else:
                feat.is_impossible = ex.is_impossible
            features.append(feat)
            unique_id += 1
    return features


def span_to_text(example: SquadExample, feature: SquadFeature, start: int, end: int) -> str:
    """The original context text covered by token positions ``start..end`` of ``feature``."""
    s, e = feature.token_spans[start], feature.token_spans[end]
    if s is None or e is None or end < start:
        return ""
    return example.context_text[s[0]:e[1]].strip()


def squad_dataset(features: Sequence[SquadFeature], batch_size: int, is_training: bool,
                  seed: int | None = None, input_context=None):
    """(inputs, labels) with labels ``{"start_positions", "end_positions"}`` for training;
    inputs alone plus ``unique_ids`` for prediction."""
    from albert_tf.backend import tf
    inputs = {k: np.array([getattr(f, k) for f in features], np.int32)
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    if is_training:
        labels = {"start_positions": np.array([f.start_position for f in features], np.int32),
                  "end_positions": np.array([f.end_position for f in features], np.int32)}
        ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
    else:
        inputs["unique_ids"] = np.array([f.unique_id for f in features], np.int64)
        ds = tf.data.Dataset.from_tensor_slices(inputs)
    return batch_slices(ds, len(features), batch_size, is_training, seed, input_context,
                        drop_remainder=is_training)


def _best_indexes(logits, n: int) -> list[int]:
    return [int(i) for i in np.argsort(-np.asarray(logits), kind="stable")[:n]]


def postprocess_predictions(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                            start_logits, end_logits, n_best_size: int = 20,
                            max_answer_length: int = 30, version_2_with_negative: bool = False,
                            null_score_diff_threshold: float = 0.0) -> dict[str, str]:
    """qas_id -> predicted answer text ("" for no answer in v2). ``start_logits`` /
    ``end_logits``: one row per feature, in the order of ``features``."""
    by_example: dict[int, list[int]] = collections.defaultdict(list)
    for i, f in enumerate(features):
        by_example[f.example_index].append(i)
    predictions: dict[str, str] = {}
    for ex_index, ex in enumerate(examples):
        best_score, best_text = -math.inf, ""
        null_score = math.inf
        for i in by_example.get(ex_index, []):
            f = features[i]
            sl, el = np.asarray(start_logits[i]), np.asarray(end_logits[i])
            null_score = min(null_score, float(sl[0] + el[0]))
            for s in _best_indexes(sl, n_best_size):
                for e in _best_indexes(el, n_best_size):
                    if f.token_spans[s] is None or f.token_spans[e] is None:
                        continue
                    if e < s or e - s + 1 > max_answer_length or not f.token_is_max_context[s]:
                        continue
                    score = float(sl[s] + el[e])
                    if score > best_score:
                        best_score, best_text = score, span_to_text(ex, f, s, e)
        if version_2_with_negative and (best_score == -math.inf
                                        or null_score - best_score > null_score_diff_threshold):
            predictions[ex.qas_id] = ""
        else:
            predictions[ex.qas_id] = best_text
    return predictions


def gold_answers(examples: Sequence[SquadExample]) -> dict[str, list[str]]:
    """qas_id -> gold answer texts (``[]`` for unanswerable questions), the ``answers``
    argument of `albert_tf.training.metrics.squad_metrics`."""
    return {ex.qas_id: ([] if ex.is_impossible else list(ex.answers)) for ex in examples}
