"""Small fixtures for the compression tests: tiny models, tiny real-data task directories."""

from __future__ import annotations

import os

import numpy as np

from albert_tf import resources
from albert_tf.checkpoints import TaskInfo, save_model_dir
from albert_tf.config import AlbertConfig, load_config
from albert_tf.models import build_classifier

VOCAB = resources.resolve(resources.DEFAULT_VOCAB)


def tiny_config(**changes) -> AlbertConfig:
    """albert_tiny (H=32, 4 heads, I=64, L=4) on the 8k vocabulary."""
    return load_config("albert_tiny").replace(vocab_size=8000, **changes)


def random_features(config: AlbertConfig, batch: int = 8, seq: int = 16, seed: int = 0,
                    pad_from: int | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    features = {"input_word_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32),
                "input_mask": np.ones((batch, seq), np.int32),
                "input_type_ids": np.zeros((batch, seq), np.int32)}
    if pad_from is not None:
        features["input_mask"][batch // 2:, pad_from:] = 0
    return features


def sst2_task_info(max_seq_length: int = 32) -> TaskInfo:
    return TaskInfo(task="sst2", head="classification", label_list=("0", "1"),
                    max_seq_length=max_seq_length)


def tiny_model_dir(directory: str, config: AlbertConfig | None = None, seed: int = 0,
                   max_seq_length: int = 32) -> str:
    """A (randomly initialised) "finetuned" SST-2 model directory with task.json + vocab."""
    from albert_tf.backend import keras
    keras.utils.set_random_seed(seed)
    config = config or tiny_config()
    model = build_classifier(config, 2)
    return save_model_dir(model, directory, config, sst2_task_info(max_seq_length), VOCAB)


def tiny_sst2_dir(directory: str, real_data_dir: str, train: int = 256, dev: int = 64,
                  test: int = 0) -> str:
    """A GLUE-layout data directory with the first rows of the real SST-2 splits (no
    test split unless ``test`` rows are asked for)."""
    target = os.path.join(directory, "glue", "SST-2")
    os.makedirs(target, exist_ok=True)
    for split, n in (("train", train), ("dev", dev), ("test", test)):
        if not n:
            continue
        with open(os.path.join(real_data_dir, "glue", "SST-2", f"{split}.tsv"),
                  encoding="utf-8") as f:
            lines = [next(f) for _ in range(n + 1)]
        with open(os.path.join(target, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.writelines(lines)
    return directory
