"""albert-tf: ALBERT (and BERT) in Keras 2 for training, compression and deployment on TF.

Public API::

    import albert_tf
    config = albert_tf.load_config("albert_base")        # or AlbertConfig.from_json(path)
    encoder = albert_tf.build_encoder(config)            # inputs/outputs: see the docstring
    albert_tf.encoder_parameter_count(config)            # = encoder.count_params(), no TF
    pretrainer = albert_tf.build_pretrainer(config)      # + mlm_logits, sop_logits
    classifier = albert_tf.build_classifier(config, num_classes=2)
    albert_tf.save_model_dir(pretrainer, "out/model")   # config.json + name-keyed weights
    encoder = albert_tf.load_encoder("out/model")
    # weights from elsewhere: albert_tf.interop.convert("hf" | "google" | "keras_hub", src, dir)
"""

import os

# Keras 2 for TF-MOT: must be chosen before TensorFlow (or TF-MOT) is first imported.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

# TensorFlow's start-up lines (oneDNN, CUDA's cuInit without a GPU, CPU features) are
# hidden when albert_tf is what first imports it, unless ALBERT_TF_VERBOSE=1
# (`albert_tf.cli.quiet_startup`; TF_CPP_MIN_LOG_LEVEL set by the user is kept).
from albert_tf import cli as _cli  # noqa: E402

_cli.quiet_startup([])

from albert_tf.version import __version__  # noqa: E402,F401

# Public name -> module that defines it. Resolved on first use (PEP 562), so
# `import albert_tf` is cheap and TensorFlow-free tools (the TFLite runner, the
# benchmark workers) can live in this package without importing TensorFlow.
_EXPORTS = {
    "AlbertConfig": "albert_tf.config",
    "ConfigError": "albert_tf.config",
    "load_config": "albert_tf.config",
    "CheckpointError": "albert_tf.checkpoints",
    "TaskInfo": "albert_tf.checkpoints",
    "load_encoder": "albert_tf.checkpoints",
    "load_pretrainer": "albert_tf.checkpoints",
    "load_task_model": "albert_tf.checkpoints",
    "build_task_model": "albert_tf.checkpoints",
    "restore_weights": "albert_tf.checkpoints",
    "save_model_dir": "albert_tf.checkpoints",
    "ConversionError": "albert_tf.interop",
    "build_classifier": "albert_tf.heads.classification",
    "build_multiple_choice": "albert_tf.heads.multiple_choice",
    "build_pretrainer": "albert_tf.models",
    "build_regressor": "albert_tf.heads.classification",
    "build_span_extractor": "albert_tf.heads.question_answering",
    "build_token_classifier": "albert_tf.heads.token_classification",
    "INPUT_NAMES": "albert_tf.networks",
    "InputError": "albert_tf.networks",
    "build_encoder": "albert_tf.networks",
    "encoder_parameter_count": "albert_tf.parameter_count",
}

__all__ = sorted(_EXPORTS)


from albert_tf.lazy import lazy_exports  # noqa: E402  (after the Keras choice)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
