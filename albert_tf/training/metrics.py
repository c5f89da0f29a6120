"""Losses and task metrics.

Losses are written for synchronous data parallelism: each replica returns its
share of the *global* mean (sum over its examples / global count), so that summing
gradients over replicas gives exactly the one-device gradient of the same global
batch. The MLM loss normalizes by the global number of masked positions, obtained
with a cross-replica all-reduce.

Metrics are computed in NumPy on the gathered predictions of a whole split:
accuracy, F1 (binary, positive class 1), Matthews correlation (CoLA), Pearson and
Spearman correlation (STS-B), and SQuAD exact match / F1.
"""

from __future__ import annotations

import collections
import re
import string

import numpy as np

from albert_tf.backend import tf


# ------------------------------------------------------------------------- losses
def global_sum(value: tf.Tensor) -> tf.Tensor:
    """Sum of ``value`` over all replicas (identity without a strategy)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def sparse_xent(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=tf.cast(logits, tf.float32))


def weighted_mean_loss(per_example: tf.Tensor, weights: tf.Tensor | None = None):
    """``(replica share of the global weighted mean, local sum, local weight)``."""
    per_example = tf.reshape(tf.cast(per_example, tf.float32), [-1])
    if weights is None:
        weights = tf.ones_like(per_example)
    weights = tf.reshape(tf.cast(weights, tf.float32), [-1])
    local_sum = tf.reduce_sum(per_example * weights)
    local_weight = tf.reduce_sum(weights)
    total_weight = tf.stop_gradient(global_sum(local_weight))
    return local_sum / tf.maximum(total_weight, 1e-9), local_sum, local_weight


# ------------------------------------------------------------------------ metrics
def accuracy(predictions, labels) -> float:
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    return float(np.mean(predictions == labels)) if labels.size else 0.0


def f1_binary(predictions, labels, positive: int = 1) -> float:
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    tp = np.sum((predictions == positive) & (labels == positive))
    fp = np.sum((predictions == positive) & (labels != positive))
    fn = np.sum((predictions != positive) & (labels == positive))
    return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


def matthews_corrcoef(predictions, labels) -> float:
    """Matthews correlation coefficient of binary predictions (0 when undefined)."""
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    tp = float(np.sum((predictions == 1) & (labels == 1)))
    tn = float(np.sum((predictions == 0) & (labels == 0)))
    fp = float(np.sum((predictions == 1) & (labels == 0)))
    fn = float(np.sum((predictions == 0) & (labels == 1)))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y) -> float:
    x, y = np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def _ranks(x) -> np.ndarray:
    """Ranks with ties averaged (as scipy.stats.rankdata)."""
    x = np.asarray(x, np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x, y) -> float:
    return pearson(_ranks(x), _ranks(y))


def classification_metrics(logits, labels) -> dict[str, float]:
    """accuracy, and for two classes F1 and Matthews correlation."""
    logits, labels = np.asarray(logits), np.asarray(labels).astype(np.int64)
    predictions = np.argmax(logits, axis=-1)
    result = {"accuracy": accuracy(predictions, labels)}
    if logits.shape[-1] == 2:
        result["f1"] = f1_binary(predictions, labels)
        result["matthews_corr"] = matthews_corrcoef(predictions, labels)
    return result


def regression_metrics(values, labels) -> dict[str, float]:
    values, labels = np.asarray(values).ravel(), np.asarray(labels).ravel()
    p, s = pearson(values, labels), spearman(values, labels)
    return {"pearson": p, "spearman": s, "pearson_spearman": (p + s) / 2.0,
            "mse": float(np.mean((values - labels) ** 2)) if labels.size else 0.0}


# Names a task may give as its main metric -> the key of our metric dicts.
METRIC_ALIASES = {"acc": "accuracy", "accuracy": "accuracy", "f1": "f1",
                  "mcc": "matthews_corr", "matthews": "matthews_corr",
                  "matthews_corr": "matthews_corr", "matthews_corrcoef": "matthews_corr",
                  "pearson": "pearson", "spearman": "spearman", "corr": "pearson_spearman",
                  "pearson_spearman": "pearson_spearman", "spearmanr": "spearman",
                  "pearsonr": "pearson", "exact_match": "exact_match", "em": "exact_match"}


def metric_key(name: str) -> str:
    return METRIC_ALIASES.get((name or "accuracy").lower(), (name or "accuracy").lower())


# ---------------------------------------------------------------- token tagging
def tagging_metrics(predictions, labels, label_list, outside: str = "O") -> dict[str, float]:
    """Word-level tagging metrics; ``predictions``/``labels`` are label indices of the
    tagged positions (labels < 0 are ignored). ``accuracy`` over words; ``precision``,
    ``recall`` and ``f1`` micro-averaged over the tags other than ``outside``."""
    predictions, labels = np.asarray(predictions).ravel(), np.asarray(labels).ravel()
    keep = labels >= 0
    predictions, labels = predictions[keep], labels[keep]
    out = list(label_list).index(outside) if outside in label_list else -1
    tp = float(np.sum((predictions == labels) & (labels != out)))
    pred_pos = float(np.sum(predictions != out))
    gold_pos = float(np.sum(labels != out))
    precision = tp / pred_pos if pred_pos else 0.0
    recall = tp / gold_pos if gold_pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": accuracy(predictions, labels), "precision": precision,
            "recall": recall, "f1": f1}


# -------------------------------------------------------------------------- SQuAD
def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, articles and extra whitespace (official SQuAD v1.1)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_exact(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def squad_f1(prediction: str, truth: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    truth_tokens = normalize_answer(truth).split()
    if not pred_tokens or not truth_tokens:
        return float(pred_tokens == truth_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(truth_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_metrics(predictions: dict, answers: dict) -> dict[str, float]:
    """``{"exact_match", "f1"}`` in percent; ``answers`` maps id -> list of gold texts
    (an empty list / ``[""]`` for unanswerable SQuAD 2.0 questions)."""
    em = f1 = 0.0
    for qid, golds in answers.items():
        golds = [g for g in golds if normalize_answer(g)] or [""]
        prediction = predictions.get(qid, "")
        em += max(squad_exact(prediction, g) for g in golds)
        f1 += max(squad_f1(prediction, g) for g in golds)
    n = max(1, len(answers))
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}
