"""Model builders: pretrainer and task models (flat functional `tf_keras.Model`s)."""

from albert_tf.models.pretrainer import build_pretrainer
from albert_tf.models.task_models import (build_classifier, build_multiple_choice, build_regressor,
                                    build_span_extractor, build_token_classifier)

__all__ = ["build_classifier", "build_multiple_choice", "build_pretrainer", "build_regressor",
           "build_span_extractor", "build_token_classifier"]
