"""Deprecated alias of `albert_tf.runtime.sessions` (moved by #45: one name per concept);
importing ``albert_tf.benchmark.runtimes`` warns and gives that module."""

import warnings

from albert_tf.runtime.sessions import *  # noqa: F401,F403
from albert_tf.runtime.sessions import (  # noqa: F401  (the old names)
    Session as Runner,
    TFLiteSession as TFLiteRunner,
    SavedModelSession as TFSavedModelRunner,
    TorchSession as TorchRunner,
    OnnxSession as OnnxRunner,
    OpenVinoSession as OpenVinoRunner,
    SESSIONS as RUNNERS,
)

warnings.warn("albert_tf.benchmark.runtimes is deprecated: import albert_tf.runtime.sessions",
              DeprecationWarning, stacklevel=2)
