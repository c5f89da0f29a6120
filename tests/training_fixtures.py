"""Small deterministic tasks and data for the tests of the training library.

``ToyClassificationTask``   a learnable synthetic sentence classification task whose
                            input pipeline is sharded per worker, so one-device,
                            mirrored and multi-worker runs see the same global batches
``write_pretraining_tfrecords``  synthetic TFRecords in the format (feature names) of
                            ``albert-tf-create-pretraining-data``
``tiny_experiment``         an `ExperimentConfig` for ``albert_tiny`` that runs in seconds

Tests import it as ``tests.training_fixtures`` (like ``tests.compression_fixtures``); it is
not part of the package. Run by path, ``python tests/training_fixtures.py --model_dir=D
--steps=N [--strategy=...]`` trains the toy task and prints ``FINAL_LOSS <value>`` (the
multi-worker test runs one such process per worker, each with its own ``TF_CONFIG``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types

import numpy as np

if __name__ == "__main__":   # run by path: sys.path[0] is tests/; import the checkout's albert_tf
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.backend import tf  # noqa: E402
from albert_tf.training.experiment_config import DataConfig, ExperimentConfig  # noqa: E402
from albert_tf.training.tasks import ClassificationTask  # noqa: E402

TOY_SEQ = 16
TOY_VOCAB = 1000


def toy_examples(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids [n, 16], mask [n, 16], labels [n])``: label-1 sequences mostly use tokens
    5..59, label-0 sequences mostly 60..109 (70% of tokens; the rest uniform)."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=n).astype(np.int32)
    lengths = rng.randint(4, TOY_SEQ + 1, size=n)
    low = np.where(labels[:, None] == 1, 5, 60)
    ids = (low + rng.randint(0, 50, size=(n, TOY_SEQ))).astype(np.int32)
    noise = rng.rand(n, TOY_SEQ) < 0.3
    ids = np.where(noise, rng.randint(5, 110, size=(n, TOY_SEQ)), ids).astype(np.int32)
    mask = (np.arange(TOY_SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    ids = ids * mask
    ids[:, 0] = 2  # [CLS]
    return ids, mask, labels


class ToyClassificationTask(ClassificationTask):
    """Binary classification of synthetic sequences (no tokenizer, no files)."""

    def __init__(self, config: ExperimentConfig, num_train: int = 512, num_dev: int = 96):
        data = types.SimpleNamespace(is_regression=False, label_list=["0", "1"],
                                     metric="accuracy", train=[None] * num_train,
                                     dev=[None] * num_dev, test=[None] * num_dev)
        super().__init__(config, task_data=data, tokenizer=object())
        self.sizes = {"train": num_train, "dev": num_dev, "test": num_dev}

    def build_inputs(self, data_config, input_context=None) -> tf.data.Dataset:
        split = data_config.split
        ids, mask, labels = toy_examples(self.sizes[split], seed={"train": 1, "dev": 2,
                                                                  "test": 3}[split])
        features = {"input_word_ids": ids, "input_mask": mask,
                    "input_type_ids": np.zeros_like(ids)}
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        batch = self.per_replica_batch_size(data_config.global_batch_size, input_context)
        seed = data_config.shuffle_seed if data_config.shuffle_seed is not None \
            else self.config.runtime.seed
        if data_config.is_training:
            dataset = dataset.shuffle(len(labels), seed=seed, reshuffle_each_iteration=True)
            dataset = dataset.repeat()
        if input_context and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        return dataset.batch(batch, drop_remainder=data_config.is_training)


def tiny_experiment(model_dir: str, steps: int = 20, batch_size: int = 8,
                    strategy: str = "one_device") -> ExperimentConfig:
    """albert_tiny, AdamW, float32, checkpoints and evals every few steps."""
    config = ExperimentConfig(model_dir=model_dir)
    config.task.type = "classification"
    config.task.name = "toy"
    config.task.max_seq_length = TOY_SEQ
    config.task.train_data = DataConfig(global_batch_size=batch_size)
    config.task.validation_data = DataConfig(global_batch_size=32, is_training=False,
                                             split="dev")
    config.model.config = "albert_tiny"
    config.optimizer.type = "adamw"
    config.optimizer.learning_rate = 1e-3
    config.optimizer.warmup_steps = 2
    config.trainer.train_steps = steps
    config.trainer.steps_per_loop = 5
    config.trainer.checkpoint_interval = 10
    config.trainer.validation_interval = 10
    config.runtime.distribution_strategy = strategy
    return config


def write_pretraining_tfrecords(path: str, num_examples: int = 64, seq_length: int = 32,
                                max_predictions: int = 5, vocab_size: int = 1000,
                                seed: int = 0) -> str:
    """Synthetic pretraining examples with the original feature names."""
    rng = np.random.RandomState(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(map(int, values))))

    def floats(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(map(float, values))))

    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(num_examples):
            length = rng.randint(seq_length // 2, seq_length + 1)
            ids = np.zeros(seq_length, np.int64)
            ids[:length] = rng.randint(5, vocab_size, size=length)
            ids[0] = 2
            mask = (np.arange(seq_length) < length).astype(np.int64)
            segments = (np.arange(seq_length) >= length // 2).astype(np.int64) * mask
            n = rng.randint(1, max_predictions + 1)
            positions = np.zeros(max_predictions, np.int64)
            positions[:n] = np.sort(rng.choice(np.arange(1, length), size=n, replace=False))
            masked_ids = np.zeros(max_predictions, np.int64)
            masked_ids[:n] = ids[positions[:n]]
            ids[positions[:n]] = 4  # [MASK]
            weights = (np.arange(max_predictions) < n).astype(np.float32)
            example = tf.train.Example(features=tf.train.Features(feature={
                "input_ids": ints(ids), "input_mask": ints(mask), "segment_ids": ints(segments),
                "masked_lm_positions": ints(positions), "masked_lm_ids": ints(masked_ids),
                "masked_lm_weights": floats(weights),
                "next_sentence_labels": ints([rng.randint(0, 2)])}))
            writer.write(example.SerializeToString())
    return path


def run_toy(model_dir: str, steps: int = 10, batch_size: int = 8, strategy: str = "one_device",
            num_cpu_devices: int = 1, checkpoint_interval: int = 0, steps_per_loop: int = 5,
            mode: str = "train", log=None) -> dict:
    """`run_experiment` on the toy task as ``main`` runs it (in a test's own process or in
    one started per worker); returns its result."""
    from albert_tf.training.trainer import run_experiment
    config = tiny_experiment(model_dir, steps, batch_size, strategy)
    config.runtime.num_cpu_devices = num_cpu_devices
    config.trainer.checkpoint_interval = checkpoint_interval
    config.trainer.steps_per_loop = steps_per_loop
    config.trainer.validation_interval = steps
    return run_experiment(config, mode, task=ToyClassificationTask(config), log=log)


def main(argv=None) -> None:
    import time
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--strategy", default="one_device")
    parser.add_argument("--num_cpu_devices", type=int, default=1)
    parser.add_argument("--checkpoint_interval", type=int, default=0)
    parser.add_argument("--steps_per_loop", type=int, default=5)
    parser.add_argument("--mode", default="train")
    parser.add_argument("--delay", type=float, default=0.0,
                        help="seconds to sleep after each loop (lets tests kill mid-run)")
    args = parser.parse_args(argv)

    def log(line):
        print(line, flush=True)
        if args.delay and line.startswith("step "):
            time.sleep(args.delay)

    result = run_toy(args.model_dir, args.steps, args.batch_size, args.strategy,
                     args.num_cpu_devices, args.checkpoint_interval, args.steps_per_loop,
                     args.mode, log)
    print("FINAL_LOSS " + json.dumps(result["train"]["loss"]), flush=True)
    if "eval" in result:
        print("FINAL_EVAL " + json.dumps(result["eval"]), flush=True)

if __name__ == "__main__":
    main()
