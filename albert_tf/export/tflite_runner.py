"""Deprecated alias of `albert_tf.runtime.tflite` (moved by #45: one name per concept);
importing ``albert_tf.export.tflite_runner`` warns and gives that module."""

import sys
import warnings

from albert_tf.runtime import tflite as _moved

warnings.warn("albert_tf.export.tflite_runner is deprecated: import albert_tf.runtime.tflite",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
