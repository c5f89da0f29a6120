"""Raw text in, answers out, with an OpenVINO export (`albert_tf.export.openvino`).

    from albert_tf.export.openvino_runner import OpenVinoClassifier
    model = OpenVinoClassifier("ov/sst2", threads=2)
    model.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

Tokenization, bucketing, batching and decoding are the TFLite runner's
(`albert_tflite.runner.TFLiteRunner`, which imports LiteRT only when it makes an interpreter):
`OpenVinoClassifier` subclasses it and replaces only what runs the model. Each text is
tokenized with the export's vocabulary by our Python tokenizer
(`albert_tf.text.vocabulary.load_tokenizer`), packed into the smallest sequence-length bucket
that holds it (the largest truncates) and run in batches of ``batch_size`` (the last one
padded). A dynamic IR is compiled lazily for each static ``[batch_size, bucket]`` shape it
meets (OpenVINO plans per shape); a static IR has its one shape. Any head of the export is
decoded (`albert_tf.task_heads`); the name says what it is mostly for.

Threads: compiled models are shared; each calling thread gets its own infer requests. Needs
``openvino`` only (no TensorFlow).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

from albert_tf.export.metadata import OPENVINO_FORMAT, read_metadata
from albert_tf.export.signatures import bucket_lengths, signature_key
from albert_tflite.runner import TFLiteRunner

SIGNATURE = "serving_default"
# Buckets of a dynamic IR (those up to the model's max_seq_length, then it): few shapes, as
# each one is compiled once.
BUCKETS = (16, 32, 64, 128, 256, 512)


def compile_config(threads: int, precision: str | None = None) -> dict[str, Any]:
    """The CPU compile options every runner of an IR uses: ``PERFORMANCE_HINT`` LATENCY,
    ``threads`` inference threads and, when given, ``INFERENCE_PRECISION_HINT`` (``"f32"``,
    ``"bf16"``; None: OpenVINO's default, bf16 on CPUs with AVX-512 BF16 / AMX)."""
    config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
    if precision:
        config["INFERENCE_PRECISION_HINT"] = precision
    return config


def default_buckets(max_seq_length: int) -> list[int]:
    """`BUCKETS` below ``max_seq_length``, then ``max_seq_length``."""
    return [b for b in BUCKETS if b < max_seq_length] + [int(max_seq_length)]


class IdExportRunner(TFLiteRunner):
    """The shared part of the server-export runners (OpenVINO IR, ONNX): reads the export's
    metadata, fixes the buckets and the batch size, and leaves `runner` to the subclass.

    A static export has its one ``[batch, seq]``; a dynamic one runs ``buckets`` (default
    `default_buckets` of the export's ``max_seq_length``) at ``batch_size`` rows (default 8).
    """

    export_format = ""          # metadata ``format`` of the export the subclass runs

    def __init__(self, export_dir: str, threads: int, buckets: Sequence[int] | None,
                 batch_size: int | None):
        directory = export_dir if os.path.isdir(export_dir) else os.path.dirname(
            os.path.abspath(export_dir))
        self.meta = read_metadata(directory, self.export_format)
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, self.meta["model_file"])
        self.num_threads, self.xnnpack = threads, False
        signature = self.meta["signatures"][SIGNATURE]
        self.input_names = list(signature["inputs"])
        self.output_names = list(signature["outputs"])
        static_seq, static_batch = signature.get("seq_length"), signature.get("batch_size")
        if static_seq:
            if buckets and list(buckets) != [static_seq]:
                raise ValueError(f"{self.path} has static sequence length {static_seq}; "
                                 f"buckets {list(buckets)} need a dynamic export.")
            lengths = [static_seq]
        else:
            lengths = bucket_lengths(buckets or default_buckets(self.meta["max_seq_length"]))
            if lengths[0] < 3:
                raise ValueError(f"buckets {lengths}: each must be >= 3 ([CLS] x [SEP]).")
        if static_batch and batch_size and batch_size != static_batch:
            raise ValueError(f"{self.path} has static batch size {static_batch}; "
                             f"batch_size={batch_size} needs a dynamic export.")
        self._batch = int(static_batch or batch_size or 8)
        self.buckets = [(seq, signature_key(seq)) for seq in lengths]
        self._local = threading.local()   # per thread: .requests / .sessions
        self._init_text()

    @property
    def interpreter(self):
        raise AttributeError(f"a {self.export_format} export has no LiteRT interpreter")

    def batch_size(self, key: str) -> int:
        return self._batch

    def bucket_length(self, key: str) -> int:
        return dict((k, s) for s, k in self.buckets)[key]


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
    """

    export_format = OPENVINO_FORMAT

    def __init__(self, export_dir: str, threads: int = 2, precision: str | None = None,
                 buckets: Sequence[int] | None = None, batch_size: int | None = None):
        import openvino as ov
        super().__init__(export_dir, threads, buckets, batch_size)
        self.core = ov.Core()
        self.model = self.core.read_model(self.path)
        self.config = compile_config(threads, precision)
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
