"""Model builders: pretrainer and task models (flat functional `tf_keras.Model`s). Each task
model's builder lives beside its head (`albert_tf.heads`); these names resolve on first use."""

from albert_tf.lazy import lazy_exports
from albert_tf.models.pretrainer import build_pretrainer  # noqa: F401

_EXPORTS = {"build_classifier": "albert_tf.heads.classification",
            "build_regressor": "albert_tf.heads.classification",
            "build_span_extractor": "albert_tf.heads.question_answering",
            "build_token_classifier": "albert_tf.heads.token_classification",
            "build_multiple_choice": "albert_tf.heads.multiple_choice"}
__all__ = ["build_classifier", "build_multiple_choice", "build_pretrainer", "build_regressor",
           "build_span_extractor", "build_token_classifier"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
