"""The one place that chooses Keras 2 (``tf_keras``) for the whole package.

TF-MOT pruning and quantization-aware training work only with Keras 2, so every
module of ``albert_tf`` imports ``tf`` and ``keras`` from here::

    from albert_tf.backend import keras, tf

``TF_USE_LEGACY_KERAS=1`` must be set before TensorFlow is first imported; this
module sets it (without overriding an explicit user choice) and then checks that
the Keras it got really is Keras 2, failing loudly otherwise.
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

if not keras.__version__.startswith("2."):
    raise ImportError(
        f"albert_tf needs Keras 2 (tf_keras), got Keras {keras.__version__}. "
        "Install tf-keras==2.21.0 and do not set TF_USE_LEGACY_KERAS=0.")

__all__ = ["keras", "tf"]
