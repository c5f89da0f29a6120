"""Tiny random-weight task model directories and their exports, built once per test session
(`tests/session_builds.py`) and shared read-only by the modules that export the same heads
the same way: `tests/test_export_saved_model.py` (layout, signatures, parity),
`tests/test_fuzz_serving.py` (property-based fuzzing of the same signatures and of the
TFLite runner) and `tests/test_concurrency.py` (the same SavedModel and TFLite export under
threads).

A SavedModel export with its in-graph tokenizer is seconds of tracing per head, a TFLite
conversion a few more; the tests only read them (load them, run their signatures, list
their files).
"""

from __future__ import annotations

import json
import os

__all__ = ["served_head"]

# head -> the seed its random weights are built with
HEADS = {"classification": 0, "span": 1, "pretraining": 2}
SEQ = 32                   # test_export_saved_model.SEQ: the task's max_seq_length
TFLITE_LENGTHS = [16, SEQ]  # the TFLite export's buckets, of static batch TFLITE_BATCH
TFLITE_BATCH = 2


def _build(head: str, leaf: str) -> None:
    """``head``'s model directory and exports under ``leaf``; their paths, relative to
    ``leaf`` (which is renamed once built), in ``leaf/paths.json``.

    The classifier (albert_tiny, labels negative and positive, max_seq_length `SEQ`) is
    `albert_tf.benchmark.concurrency.build_exports`, test_concurrency.py's exports: the
    SavedModel and the float TFLite export at `TFLITE_LENGTHS`; the other heads are
    `make_model_dir`'s with their SavedModel export (default name and version)."""
    from albert_tf.backend import keras
    os.makedirs(leaf)
    keras.utils.set_random_seed(HEADS[head])
    if head == "classification":
        from albert_tf.benchmark.concurrency import build_exports
        paths = build_exports(leaf, "albert_tiny", seq_length=SEQ,
                              tflite_batch=TFLITE_BATCH, seq_lengths=TFLITE_LENGTHS)
    else:
        from albert_tf.export.saved_model import export_saved_model
        from test_export_saved_model import make_model_dir
        model_dir = os.path.join(leaf, "model")
        make_model_dir(model_dir, head=head)
        paths = {"model_dir": model_dir,
                 "saved_model": export_saved_model(model_dir, os.path.join(leaf, "serving"))}
    with open(os.path.join(leaf, "paths.json"), "w", encoding="utf-8") as f:
        json.dump({k: os.path.relpath(v, leaf) for k, v in paths.items()}, f)


def served_head(tmp_path_factory, head: str) -> dict[str, str]:
    """``head``'s shared model directory and exports (read-only: copy with
    `session_builds.writable_copy` to change them): ``root`` (the directory holding them),
    ``model_dir``, ``path`` (the SavedModel version directory `export_saved_model`
    returned, ``<root>/serving/<task>/<version>``) and, for the classifier, ``tflite``
    (the TFLite export directory)."""
    from session_builds import build_once
    root = build_once(tmp_path_factory, f"served_{head}", "served",
                      lambda leaf: _build(head, leaf))
    with open(os.path.join(root, "paths.json"), encoding="utf-8") as f:
        paths = {k: os.path.join(root, v) for k, v in json.load(f).items()}
    paths["path"] = paths.pop("saved_model")
    return dict(paths, root=root)
