"""Deprecated: the output layers are `albert_tf.layers.output_layers` (also exported by
`albert_tf.layers`); this module re-exports them for existing imports."""

import warnings

from albert_tf.layers.output_layers import (ClsPooler, FoldChoices, GatherPositions,  # noqa: F401
                                            MaskedLMHead, SpanLogits, UnfoldChoices)

warnings.warn("albert_tf.layers.heads is deprecated; use albert_tf.layers (or "
              "albert_tf.layers.output_layers).", DeprecationWarning, stacklevel=2)
