"""Export: SavedModel for TF Serving, TFLite for phones and CPUs, OpenVINO IR and ONNX (for
ONNX Runtime) for x86 servers (``albert-tf-export``).

    from albert_tf.export import ExportOptions, export
    export("tflite", "runs/sst2", "edge/sst2_int8", ExportOptions(quantization="int8"))
    export("onnx", "runs/sst2", "server/sst2_ort", ExportOptions(quantization="int8"))

Every format takes the same arguments through `albert_tf.export.formats` (the format
registry: ``--format`` and ``--quantization`` choices, what each format takes, its one-line
refusals, its runner). The per-format functions underneath stay public:

    from albert_tf.export import export_openvino, export_saved_model, export_tflite
    export_saved_model("runs/sst2", "serving")              # serving/sst2/1/
    export_tflite("runs/sst2", "edge/sst2_int8", quantization="int8")
    export_openvino("runs/sst2", "server/sst2_ir")          # model.xml + model.bin
    export_onnx("runs/sst2", "server/sst2_ort", quantization="int8")   # model.onnx

`albert_tf.export.quantization` holds the quantization recipes (``--quantization``
choices: `quantization.names()`) and the registration hooks for quantization-aware models.

The runners (raw text in, answers out) live in `albert_tf.runtime` (`TFLiteRunner`,
`OnnxClassifier`, `OpenVinoClassifier` on `albert_tf.runtime.runner.ExportRunner` and the
preprocessor `albert_tf.runtime.preprocessor.Preprocessor`); their names stay importable from
here too. The ``albert_tflite`` edge tools and the benchmark run them.

Submodules import TensorFlow; `albert_tf.export.metadata` and the runners do not, nor does
`albert_tf.export.quantization` until it converts or loads.
"""

from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "export": "albert_tf.export.formats",
    "ExportOptions": "albert_tf.export.formats",
    "open_runner": "albert_tf.runtime.runner",
    "ExportError": "albert_tf.export.common",
    "load_source": "albert_tf.export.common",
    "export_saved_model": "albert_tf.export.saved_model",
    "export_tflite": "albert_tf.export.tflite",
    "export_openvino": "albert_tf.export.openvino",
    "OpenVinoClassifier": "albert_tf.runtime.openvino",
    "export_onnx": "albert_tf.export.onnx",
    "OnnxClassifier": "albert_tf.runtime.onnx",
    "TFLiteRunner": "albert_tf.runtime.tflite",
    "QUANTIZATIONS": "albert_tf.export.tflite",
    "Recipe": "albert_tf.export.quantization",
    "register_qat_loader": "albert_tf.export.quantization",
    "load_qat_model": "albert_tf.export.quantization",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
