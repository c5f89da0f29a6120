"""Shared plumbing of the measured compression experiments (studies/compression/, each
run as a figure: ``make figures NAME=compression-<step>``, all of them ``NAME=compression``).

Everything is measured the same way for every method:

* dev accuracy in Keras on the full SST-2 dev split (872 sentences, never trained on);
* TFLite files written by the export library (`albert_tf.export.tflite`), batch 1,
  sequence 128 (padded), and their dev accuracy computed by running that file;
* latency: `albert_tf.benchmark.worker` (LiteRT + XNNPACK, 2 threads, batch 1, seq 128),
  each file timed in several interleaved rounds, the median of the round medians;
* size: the file and its gzip -9 size.

Outputs go to ``$ALBERT_TF_COMPRESSION_OUT`` (default ``/tmp/albert_tf_compression``):
``start/`` (the finetuned starting model), one directory per method, and
``results/<method>.json`` that ``compression-table`` turns into the table of docs/results/compression-sst2.md.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get("ALBERT_TF_COMPRESSION_OUT", "/tmp/albert_tf_compression")
START = os.path.join(OUT, "start", "best")
SEQ = 128
RESULTS = os.path.join(OUT, "results")

from albert_tf import resources  # noqa: E402
from albert_tf.checkpoints import (load_task_info, load_task_model, save_model_dir,  # noqa: E402
                                  vocab_path)
from albert_tf.compression import data as data_lib  # noqa: E402
from albert_tf.compression.compression_config import CompressionConfig  # noqa: E402


def data_dir() -> str:
    """The task data root: $ALBERT_TF_DATA_DIR (one clear error when unset or missing)."""
    return resources.data_dir()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def path(*parts: str) -> str:
    return os.path.join(OUT, *parts)


def load_start():
    """The finetuned starting model (written by albert-tf-finetune), its task and data."""
    if not os.path.exists(os.path.join(START, "task.json")):
        raise SystemExit(f"no starting model at {START}: run `make figures NAME=compression-start`")
    model, task_info = load_task_model(START)
    vocab = vocab_path(START)
    return model, task_info, vocab, task_inputs(task_info, vocab)


def task_inputs(task_info, vocab: str):
    """SST-2 train and dev of a task, tokenized with ``vocab``, padded to SEQ."""
    return data_lib.load_task_inputs(task_info, data_dir(), vocab, max_seq_length=SEQ)


def model_inputs(model_dir: str):
    """`task_inputs` of a saved model directory (its task and its vocabulary)."""
    return task_inputs(load_task_info(model_dir), vocab_path(model_dir))


def stage_config(**sections) -> CompressionConfig:
    """The `CompressionConfig` the experiments use (AdamW, warmup 10%, batch 32)."""
    config = CompressionConfig()
    config.data.data_dir = data_dir()
    config.data.batch_size = 32
    config.optimizer.learning_rate = 1e-4
    for key, value in sections.items():
        target = config
        *parents, leaf = key.split("__")
        for p in parents:
            target = getattr(target, p)
        setattr(target, leaf, value)
    return config


def keras_accuracy(model, inputs) -> float:
    return data_lib.evaluate(model, inputs.dev_dataset(128))["accuracy"]


# ------------------------------------------------------------------------------ TFLite
def export(model_dir: str, name: str, quantization: str = "none", **kwargs) -> str:
    """``<OUT>/tflite/<name>.tflite`` through the export library."""
    from albert_tf.export.tflite import export_tflite
    target = path("tflite", name)
    export_tflite(model_dir, target, quantization=quantization, seq_lengths=[SEQ],
                  overwrite=True, data_dir=data_dir(), **kwargs)
    return os.path.join(target, "model.tflite")


def write_tflite(content: bytes, name: str) -> str:
    target = path("tflite", name)
    os.makedirs(target, exist_ok=True)
    file = os.path.join(target, "model.tflite")
    with open(file, "wb") as f:
        f.write(content)
    return file


def calibration_features(inputs, n: int = 200, seed: int = 1234) -> dict:
    """``n`` training-split examples, padded to SEQ (for int8 conversion)."""
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(inputs.train), n, replace=False)
    features, _ = inputs.encoded([inputs.train[i] for i in picks], SEQ)
    return features


def tflite_accuracy(file: str, inputs, threads: int = 2) -> float:
    """Dev accuracy of a TFLite file (batch 1, padded to SEQ), by running it."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=file, num_threads=threads)
    runner = interpreter.get_signature_runner()
    features, labels = inputs.encoded(inputs.dev, SEQ)
    correct = 0
    for i in range(len(labels)):
        out = runner(**{k: v[i:i + 1] for k, v in features.items()})
        correct += int(np.argmax(out["probabilities"][0]) == labels[i])
    return correct / len(labels)


def scored(file: str, inputs, key: str = "tflite") -> dict:
    """A TFLite file's result fields: the file, its dev accuracy (run), its sizes."""
    return {key: file, f"{key}_dev_accuracy": tflite_accuracy(file, inputs), **sizes(file)}


def sizes(file: str) -> dict:
    with open(file, "rb") as f:
        content = f.read()
    return {"file_bytes": len(content), "gzip_bytes": len(gzip.compress(content, 9))}


def latency(files: dict[str, str], rounds: int = 3, seconds: float = 4.0) -> dict[str, float]:
    """Median batch-1 seq-128 latency (ms, 2 threads) of each file, rounds interleaved."""
    medians: dict[str, list[float]] = {k: [] for k in files}
    for _ in range(rounds):
        for key, file in files.items():
            out = subprocess.run(
                [sys.executable, "-m", "albert_tf.benchmark.worker", "--runtime=tflite",
                 f"--artifact={file}", f"--shapes=1x{SEQ}", "--vocab_size=8000",
                 "--threads=2", f"--min_seconds={seconds}", "--min_iterations=20"],
                cwd=ROOT, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            medians[key].append(result["results"][0]["median_ms"])
    return {k: float(np.median(v)) for k, v in medians.items()}


def save_result(method: str, result: dict) -> None:
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{method}.json"), "w") as f:
        json.dump(result, f, indent=2, default=float)
    log(f"{method}: {json.dumps(result, default=float)}")


def save(model, name: str, task_info, vocab) -> str:
    return save_model_dir(model, path(name), model.albert_config, task_info, vocab)
