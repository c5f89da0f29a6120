"""Deprecated alias of `albert_tf.runtime.evaluate` (moved by #45: one name per concept);
importing ``albert_tf.export.evaluate`` warns and gives that module."""

import sys
import warnings

from albert_tf.runtime import evaluate as _moved

warnings.warn("albert_tf.export.evaluate is deprecated: import albert_tf.runtime.evaluate",
              DeprecationWarning, stacklevel=2)

if __name__ == "__main__":      # python -m albert_tf.export.evaluate
    sys.exit(_moved.main())
sys.modules[__name__] = _moved
