"""Raw text in, answers out, with an ONNX export (`albert_tf.export.onnx`) on ONNX Runtime.

    from albert_tf.runtime.onnx import OnnxClassifier
    model = OnnxClassifier("ort/sst2_int8", threads=2)
    model.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

Tokenization, bucketing, batching and decoding are every export runner's, as for the
OpenVINO runner (`albert_tf.runtime.runner.IdExportRunner`, with the preprocessor
`albert_tf.runtime.preprocessor.Preprocessor`): each text is tokenized with the
export's vocabulary in Python, packed into the smallest bucket that holds it and run in
batches of ``batch_size``. One ONNX Runtime session (CPU provider, ``threads`` intra-op
threads, all graph optimizations) serves every shape. Needs ``onnxruntime`` only (no
TensorFlow).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from albert_tf.export.errors import unreadable_model
from albert_tf.export.metadata import ONNX_FORMAT
from albert_tf.runtime.runner import IdExportRunner


def session_options(threads: int):
    """The ONNX Runtime options every runner of our exports uses: ``threads`` intra-op
    threads, one inter-op thread, every graph optimization."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


class OnnxClassifier(IdExportRunner):
    """Tokenize, bucket, batch, run (ONNX Runtime on CPU) and decode with an ONNX export.

    Args:
      export_dir: an `albert_tf.export.onnx` export directory (or its ``model.onnx``).
      threads: ONNX Runtime intra-op threads.
      buckets: sequence lengths of a dynamic export (default `default_buckets` of the
        export's ``max_seq_length``); a static export has its own.
      batch_size: rows per call (default: the export's static batch, else 8).
    """

    export_format = ONNX_FORMAT

    def __init__(self, export_dir: str, threads: int = 2, buckets: Sequence[int] | None = None,
                 batch_size: int | None = None):
        import onnxruntime as ort
        super().__init__(export_dir, threads, buckets, batch_size)
        with unreadable_model(self.path, "ONNX Runtime"):
            self.session = ort.InferenceSession(self.path, session_options(threads),
                                                providers=["CPUExecutionProvider"])

    def runner(self, key: str) -> Callable[..., dict[str, np.ndarray]]:
        """A call of bucket ``key``: int32 ids in, outputs out (ONNX Runtime sessions may be
        run from several threads at once)."""
        def run(**inputs: np.ndarray) -> dict[str, np.ndarray]:
            results = self.session.run(self.output_names,
                                       {n: np.asarray(inputs[n], np.int32)
                                        for n in self.input_names})
            return dict(zip(self.output_names, results))
        return run
