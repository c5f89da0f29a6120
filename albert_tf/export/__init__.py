"""Export: SavedModel for TF Serving and TFLite for phones and CPUs (``albert-tf-export``).

    from albert_tf.export import export_saved_model, export_tflite
    export_saved_model("runs/sst2", "serving")              # serving/sst2/1/
    export_tflite("runs/sst2", "edge/sst2_int8", quantization="int8")

Submodules import TensorFlow; `albert_tf.export.metadata` does not (the edge runner uses it).
"""

import importlib

_EXPORTS = {
    "ExportError": "albert_tf.export.common",
    "load_source": "albert_tf.export.common",
    "export_saved_model": "albert_tf.export.saved_model",
    "export_tflite": "albert_tf.export.tflite",
    "QUANTIZATIONS": "albert_tf.export.tflite",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'albert_tf.export' has no attribute {name!r}")
