"""Two probes of a pretraining run: does the MLM use word order, and how much of SOP is
learnable from bags of words?

    .venv/bin/python studies/figures.py pretraining-probes --model_dir=/tmp/albert_mini_imdb/best \
        --train_files=/tmp/imdb_pt/train.tfrecord --eval_files=/tmp/imdb_pt/heldout.tfrecord

* order: held-out MLM loss and accuracy of the pretrainer on the real inputs and on the
  same inputs with the unmasked context tokens shuffled within each sequence (masked
  positions, [CLS] and [SEP] stay). Equal figures mean the model is a bag-of-words
  predictor: it has not learned to use positions yet.
* SOP ceiling of shallow features: logistic regression on which word pieces occur in
  segment A and which in segment B (2 x V binary features, masked tokens restored),
  trained on ``--probe_train`` training instances, scored on the held-out instances.
  What any model that sees which segment a token is in could reach without word order.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf  # noqa: E402

from albert_tf.data.pretraining import feature_spec  # noqa: E402


def read_instances(path: str, limit: int, seq: int, predictions: int) -> dict[str, np.ndarray]:
    """The first ``limit`` records of a pretraining TFRecord file as stacked arrays."""
    spec = feature_spec(seq, predictions)
    rows = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(path).take(limit)]
    return {k: np.stack([r[k].numpy() for r in rows]) for k in spec}


def shuffle_context(data: dict[str, np.ndarray], seed: int = 0) -> np.ndarray:
    """``input_ids`` with each sequence's unmasked word pieces permuted ([CLS], [SEP],
    padding and the masked positions stay where they are)."""
    rng = np.random.default_rng(seed)
    ids = data["input_ids"].copy()
    for i in range(len(ids)):
        length = int(data["input_mask"][i].sum())
        special = {int(ids[i, 0]), int(ids[i, length - 1])}          # [CLS], [SEP]
        masked = set(data["masked_lm_positions"][i][data["masked_lm_weights"][i] > 0].tolist())
        movable = [j for j in range(length) if j not in masked and int(ids[i, j]) not in special]
        ids[i, movable] = ids[i, rng.permutation(movable)]
    return ids


def mlm_figures(model, data: dict[str, np.ndarray], ids: np.ndarray) -> tuple[float, float]:
    """Held-out MLM loss and accuracy of the pretrainer on ``ids``."""
    inputs = {"input_word_ids": ids.astype(np.int32),
              "input_mask": data["input_mask"].astype(np.int32),
              "input_type_ids": data["segment_ids"].astype(np.int32),
              "masked_lm_positions": data["masked_lm_positions"].astype(np.int32)}
    logits = model.predict(inputs, batch_size=64, verbose=0)["mlm_logits"]
    labels, weights = data["masked_lm_ids"], data["masked_lm_weights"]
    log_probs = tf.nn.log_softmax(logits).numpy()
    nll = -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    correct = logits.argmax(-1) == labels
    return float((nll * weights).sum() / weights.sum()), float((correct * weights).sum()
                                                              / weights.sum())


def segment_bags(data: dict[str, np.ndarray], vocab_size: int):
    """Sparse binary features ``[N, 2V]``: word pieces of segment A, then of segment B."""
    import scipy.sparse as sp
    ids = data["input_ids"].copy()
    for i in range(len(ids)):
        keep = data["masked_lm_weights"][i] > 0
        ids[i, data["masked_lm_positions"][i][keep]] = data["masked_lm_ids"][i][keep]
    real = data["input_mask"] > 0
    rows, cols = np.nonzero(real)
    cols_out = ids[rows, cols] + vocab_size * data["segment_ids"][rows, cols]
    x = sp.csr_matrix((np.ones(len(rows)), (rows, cols_out)), shape=(len(ids), 2 * vocab_size))
    x.data = np.minimum(x.data, 1.0)
    return x


def logistic_regression(x, y, epochs: int = 8, lr: float = 0.05, l2: float = 1e-4,
                        seed: int = 0) -> tuple[np.ndarray, float]:
    """Minibatch gradient descent on the logistic loss (no dependency beyond NumPy)."""
    rng = np.random.default_rng(seed)
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(epochs):
        order = rng.permutation(x.shape[0])
        for start in range(0, len(order), 256):
            j = order[start:start + 256]
            p = 1.0 / (1.0 + np.exp(-(x[j] @ w + b)))
            w -= lr * (x[j].T @ (p - y[j]) / len(j) + l2 * w)
            b -= lr * float((p - y[j]).mean())
    return w, b


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="pretrainer model directory")
    parser.add_argument("--train_files", required=True)
    parser.add_argument("--eval_files", required=True)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--probe_train", type=int, default=60000)
    parser.add_argument("--eval_instances", type=int, default=3000)
    args = parser.parse_args(argv)
    from albert_tf.checkpoints import load_pretrainer
    shape = (args.max_seq_length, args.max_predictions_per_seq)
    heldout = read_instances(args.eval_files, args.eval_instances, *shape)
    model = load_pretrainer(args.model_dir, masked_lm_positions=True)
    loss, acc = mlm_figures(model, heldout, heldout["input_ids"])
    s_loss, s_acc = mlm_figures(model, heldout, shuffle_context(heldout))
    print(f"held-out MLM, real order:       loss {loss:.4f}  accuracy {acc:.4f}")
    print(f"held-out MLM, context shuffled: loss {s_loss:.4f}  accuracy {s_acc:.4f}")
    vocab_size = model.albert_config.vocab_size
    train = read_instances(args.train_files, args.probe_train, *shape)
    y_train = train["next_sentence_labels"][:, 0].astype(float)
    y_heldout = heldout["next_sentence_labels"][:, 0]
    w, b = logistic_regression(segment_bags(train, vocab_size), y_train)
    predicted = (segment_bags(heldout, vocab_size) @ w + b) > 0
    majority = max(y_heldout.mean(), 1 - y_heldout.mean())
    print(f"SOP from segment bags of words (logistic regression, {len(y_train)} train): "
          f"held-out accuracy {(predicted == y_heldout).mean():.4f} (majority class "
          f"{majority:.4f})")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
