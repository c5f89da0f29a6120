"""Deprecated: SQuAD span extraction's training task lives beside its head,
`albert_tf.heads.question_answering` (`SquadTask`, `FILE_NAMES`); this module re-exports them
for existing imports and warns when imported."""

import warnings

from albert_tf.heads.question_answering import FILE_NAMES, SquadTask  # noqa: F401

__all__ = ["SquadTask"]

warnings.warn("albert_tf.training.squad_task is deprecated; use "
              "albert_tf.heads.question_answering (SquadTask).", DeprecationWarning,
              stacklevel=2)
