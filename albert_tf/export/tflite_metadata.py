"""Deprecated alias of `albert_tf.export.metadata_schema` (moved by #45: one name per concept);
importing ``albert_tf.export.tflite_metadata`` warns and gives that module."""

import sys
import warnings

from albert_tf.export import metadata_schema as _moved

warnings.warn("albert_tf.export.tflite_metadata is deprecated: import albert_tf.export.metadata_schema",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
