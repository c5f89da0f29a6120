"""albert-tf: ALBERT (and BERT) in Keras 2 for training, compression and deployment on TF.

Public API::

    import albert_tf
    config = albert_tf.load_config("albert_base")        # or AlbertConfig.from_json(path)
    encoder = albert_tf.build_encoder(config)            # inputs/outputs: see the docstring
    pretrainer = albert_tf.build_pretrainer(config)      # + mlm_logits, sop_logits
    classifier = albert_tf.build_classifier(config, num_classes=2)
    albert_tf.save_model_dir(pretrainer, "out/model")   # config.json + name-keyed weights
    encoder = albert_tf.load_encoder("out/model")
"""

from albert_tf.backend import keras, tf  # noqa: F401  (selects Keras 2 first)
from albert_tf.checkpoints import (CheckpointError, load_encoder, load_pretrainer,
                                   restore_weights, save_model_dir)
from albert_tf.config import AlbertConfig, ConfigError, load_config
from albert_tf.models import (build_classifier, build_multiple_choice, build_pretrainer,
                              build_regressor, build_span_extractor, build_token_classifier)
from albert_tf.networks import INPUT_NAMES, InputError, build_encoder

__version__ = "0.1.0"

__all__ = ["AlbertConfig", "CheckpointError", "ConfigError", "INPUT_NAMES", "InputError",
           "build_classifier", "build_encoder", "build_multiple_choice", "build_pretrainer",
           "build_regressor", "build_span_extractor", "build_token_classifier", "load_config",
           "load_encoder", "load_pretrainer", "restore_weights", "save_model_dir"]
