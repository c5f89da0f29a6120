"""Deprecated alias of `albert_tf.runtime.preprocessor` (moved by #45: one name per concept);
importing ``albert_tf.text.preprocessor`` warns and gives that module."""

import sys
import warnings

from albert_tf.runtime import preprocessor as _moved

warnings.warn("albert_tf.text.preprocessor is deprecated: import albert_tf.runtime.preprocessor",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
