"""Deprecated alias of `albert_tf.bin.saved_model_cli` (moved by #45: one name per concept);
importing ``albert_tf.export.saved_model_cli`` warns and gives that module."""

import sys
import warnings

from albert_tf.bin import saved_model_cli as _moved

warnings.warn("albert_tf.export.saved_model_cli is deprecated: import albert_tf.bin.saved_model_cli",
              DeprecationWarning, stacklevel=2)

if __name__ == "__main__":      # python -m albert_tf.export.saved_model_cli
    sys.exit(_moved.main())
sys.modules[__name__] = _moved
