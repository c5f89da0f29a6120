"""Finetunes a small ALBERT on SST-2 (train split only) for the export must-show measurements.

    make figures NAME=export-finetune-sst2 ARGS=--output=/tmp/sst2_mini

The model is ``albert_mini`` (H=128, L=4, 8k vocabulary) trained from random initialization
(no pretrained checkpoint of that size ships with the project), batches padded to their
longest row (length-sorted buckets) so that the short SST-2 phrases train quickly on a CPU.
Selection uses the dev split only to report; the final weights are what is saved. The model
directory (config.json, weights, task.json, vocab.model) is what ``albert-tf-export`` reads.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from albert_tf.backend import keras, tf  # noqa: E402

VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


def read_sst2(path: str) -> list[tuple[str, int]]:
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r[0], int(r[1])) for r in rows[1:]]


def batches(encoded: list[list[int]], labels: list[int], batch_size: int, max_len: int,
            cls_id: int, sep_id: int, shuffle: bool, rng: random.Random):
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        rng.shuffle(chunks)
    for chunk in chunks:
        rows = [[cls_id] + encoded[i][:max_len - 2] + [sep_id] for i in chunk]
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), np.int32)
        mask = np.zeros((len(rows), width), np.int32)
        for j, r in enumerate(rows):
            ids[j, :len(r)] = r
            mask[j, :len(r)] = 1
        yield ({"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)},
               np.array([labels[i] for i in chunk], np.int32))


def train_step_fn(model, optimizer, clip_norm: float | None = None):
    """One compiled SST-2 training step of ``model`` (logits, sparse cross-entropy), the
    gradients clipped to ``clip_norm`` (global norm) when given."""
    import albert_tf
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    spec = {n: tf.TensorSpec([None, None], tf.int32) for n in albert_tf.INPUT_NAMES}

    @tf.function(input_signature=[spec, tf.TensorSpec([None], tf.int32)])
    def train_step(features, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True)["logits"])
        grads = tape.gradient(loss, model.trainable_variables)
        if clip_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return train_step


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--data_dir", default=os.environ.get(
        "ALBERT_TF_DATA_DIR", os.path.join(ROOT, "..", "shared", "data")),
        help="default: $ALBERT_TF_DATA_DIR, else ../shared/data beside the checkout")
    parser.add_argument("--config", default="albert_mini")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--max_seq_length", type=int, default=128)
    args = parser.parse_args(argv)

    import albert_tf
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.text.tokenizer import AlbertTokenizer

    tf.random.set_seed(0)
    rng = random.Random(0)
    tok = AlbertTokenizer(VOCAB)
    train = read_sst2(os.path.join(args.data_dir, "glue", "SST-2", "train.tsv"))
    dev = read_sst2(os.path.join(args.data_dir, "glue", "SST-2", "dev.tsv"))
    train_ids = [tok.encode(t) for t, _ in train]
    dev_ids = [tok.encode(t) for t, _ in dev]
    config = albert_tf.load_config(args.config).replace(hidden_dropout_prob=0.1,
                                                        classifier_dropout_prob=0.1)
    model = albert_tf.build_classifier(config, num_classes=2)
    steps = args.epochs * ((len(train) + args.batch_size - 1) // args.batch_size)
    schedule = keras.optimizers.schedules.PolynomialDecay(args.learning_rate, steps, 0.0)
    train_step = train_step_fn(model, keras.optimizers.Adam(schedule), clip_norm=1.0)
    spec = {n: tf.TensorSpec([None, None], tf.int32) for n in albert_tf.INPUT_NAMES}

    @tf.function(input_signature=[spec])
    def predict(features):
        return model(features, training=False)["logits"]

    def evaluate() -> float:
        correct = 0
        for features, labels in batches(dev_ids, [y for _, y in dev], 128, args.max_seq_length,
                                        tok.cls_id, tok.sep_id, False, rng):
            correct += int(np.sum(np.argmax(predict(features), -1) == labels))
        return correct / len(dev)

    start = time.time()
    for epoch in range(args.epochs):
        losses = []
        for step, (features, labels) in enumerate(batches(
                train_ids, [y for _, y in train], args.batch_size, args.max_seq_length,
                tok.cls_id, tok.sep_id, True, rng)):
            losses.append(float(train_step(features, labels)))
            if step % 200 == 0:
                print(f"epoch {epoch} step {step} loss {np.mean(losses[-200:]):.4f} "
                      f"({time.time() - start:.0f}s)", flush=True)
        print(f"epoch {epoch}: dev accuracy {evaluate():.4f} ({time.time() - start:.0f}s)",
              flush=True)
    task_info = TaskInfo("sst2", "classification", ("0", "1"), args.max_seq_length)
    albert_tf.save_model_dir(model, args.output, config=config, task_info=task_info,
                             vocab_file=VOCAB)
    print(f"saved {args.output}")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
