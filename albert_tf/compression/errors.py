"""The compression configuration's error (no TensorFlow; below every compression module)."""

from __future__ import annotations

from albert_tf.hyperparams import ConfigValueError


class CompressionConfigError(ConfigValueError):
    """A compression setting is invalid; raised before any training starts."""
