"""Running exports: raw text in, answers out, and token ids in, timings out.

What the export side writes (`albert_tf.export`), this package runs, for the CLIs of
``albert_tflite``, `albert_tf.benchmark` and Python users alike:

- `runner`: `ExportRunner`, the runtime-agnostic text runner (metadata, preprocessing,
  decoding with the export's head) and `open_runner` (any export directory);
- `tflite`, `onnx`, `openvino`: its subclasses for LiteRT, ONNX Runtime and OpenVINO;
- `preprocessor`: `Preprocessor`, raw text to packed, bucketed, batched ids;
- `evaluate`: an export's score on a task split (``python -m albert_tf.runtime.evaluate``);
- `sessions`: one class per runtime that runs an artifact on token ids of one shape (what
  `albert_tf.benchmark.worker` times).
"""

from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "open_runner": "albert_tf.runtime.runner",
    "ExportRunner": "albert_tf.runtime.runner",
    "TFLiteRunner": "albert_tf.runtime.tflite",
    "OnnxClassifier": "albert_tf.runtime.onnx",
    "OpenVinoClassifier": "albert_tf.runtime.openvino",
    "Preprocessor": "albert_tf.runtime.preprocessor",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
