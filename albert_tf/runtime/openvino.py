"""Raw text in, answers out, with an OpenVINO export (`albert_tf.export.openvino`).

    from albert_tf.runtime.openvino import OpenVinoClassifier
    model = OpenVinoClassifier("ov/sst2", threads=2)
    model.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

Tokenization, bucketing, batching and decoding are every export runner's
(`albert_tf.runtime.runner.IdExportRunner` on `albert_tf.runtime.runner.ExportRunner`, with
the preprocessor `albert_tf.runtime.preprocessor.Preprocessor`): `OpenVinoClassifier`
subclasses it and supplies only what runs the model. Each text is tokenized with the
export's vocabulary by our Python tokenizer (`albert_tf.text.vocabulary.load_tokenizer`),
packed into the smallest sequence-length bucket that holds it (the largest truncates) and
run in batches of ``batch_size`` (the last one padded). A dynamic IR is compiled lazily for
each static ``[batch_size, bucket]`` shape it meets (OpenVINO plans per shape); a static IR
has its one shape. Any head of the export is
decoded (`albert_tf.heads`); the name says what it is mostly for.

Threads: compiled models are shared; each calling thread gets its own infer requests. Needs
``openvino`` only (no TensorFlow).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from albert_tf.export.errors import unreadable_model
from albert_tf.export.metadata import OPENVINO_FORMAT
from albert_tf.export.sparsity import compile_config as sparse_compile_config
# The shared runner and its bucket defaults (public here too: `default_buckets` is the
# OpenVINO export's default, `albert_tf.export.openvino`).
from albert_tf.runtime.runner import (BUCKETS, SIGNATURE, IdExportRunner,  # noqa: F401
                                     default_buckets)


def compile_config(threads: int, precision: str | None = None) -> dict[str, Any]:
    """The CPU compile options every runner of an IR uses: ``PERFORMANCE_HINT`` LATENCY,
    ``threads`` inference threads and, when given, ``INFERENCE_PRECISION_HINT`` (``"f32"``,
    ``"bf16"``; None: OpenVINO's default, bf16 on CPUs with AVX-512 BF16 / AMX)."""
    config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
    if precision:
        config["INFERENCE_PRECISION_HINT"] = precision
    return config


class OpenVinoClassifier(IdExportRunner):
    """Tokenize, bucket, batch, run (OpenVINO on CPU) and decode with an OpenVINO export.

    Args:
      export_dir: an `albert_tf.export.openvino` export directory (or its ``model.xml``).
      threads: ``INFERENCE_NUM_THREADS``.
      precision: ``INFERENCE_PRECISION_HINT`` (``"f32"``, ``"bf16"``); None: OpenVINO's
        default (bf16 on CPUs with AVX-512 BF16 / AMX, f32 elsewhere).
      buckets: sequence lengths of a dynamic IR (default `default_buckets` of the export's
        ``max_seq_length``); a static IR has its own.
      batch_size: rows per call (default: the IR's static batch, else 8).

    An export with sparse weights (``albert-tf-export --sparse_weights``) is compiled with
    the options its ``metadata.json`` records (``sparse_weights.compile_config``:
    ``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE``).
    """

    export_format = OPENVINO_FORMAT

    def __init__(self, export_dir: str, threads: int = 2, precision: str | None = None,
                 buckets: Sequence[int] | None = None, batch_size: int | None = None):
        import openvino as ov
        super().__init__(export_dir, threads, buckets, batch_size)
        self.core = ov.Core()
        with unreadable_model(self.path, "OpenVINO"):   # the .xml and its .bin
            self.model = self.core.read_model(self.path)
        self.config = compile_config(threads, precision)
        # A sparse export (--sparse_weights): its int8 weights kept sparse on AMX CPUs.
        self.config.update(sparse_compile_config(self.meta))
        self._compiled: dict[str, object] = {}
        self._compile_lock = threading.Lock()

    def compiled(self, key: str):
        """The model compiled for ``[batch_size, seq]`` of bucket ``key`` (once, shared)."""
        with self._compile_lock:
            if key not in self._compiled:
                model = self.model.clone()
                model.reshape({name: [self._batch, self.bucket_length(key)]
                               for name in self.input_names})
                self._compiled[key] = self.core.compile_model(model, "CPU", self.config)
            return self._compiled[key]

    def runner(self, key: str) -> Callable[..., dict[str, np.ndarray]]:
        """The calling thread's call of bucket ``key``: int32 ids in, outputs (copies) out."""
        requests = self._local.__dict__.setdefault("requests", {})
        if key not in requests:
            requests[key] = self.compiled(key).create_infer_request()
        request = requests[key]

        def run(**inputs: np.ndarray) -> dict[str, np.ndarray]:
            results = request.infer({n: inputs[n] for n in self.input_names})
            return {name: np.array(results[name]) for name in self.output_names}
        return run
