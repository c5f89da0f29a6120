"""Deprecated alias of `albert_tf.runtime.runner` (moved by #45: one name per concept);
importing ``albert_tf.export.runner`` warns and gives that module."""

import sys
import warnings

from albert_tf.runtime import runner as _moved

warnings.warn("albert_tf.export.runner is deprecated: import albert_tf.runtime.runner",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
