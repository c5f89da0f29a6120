"""Deprecated: the head registry is `albert_tf.heads` (`albert_tf.heads.registry`); this
module re-exports its names for existing imports and warns once when imported."""

import warnings

from albert_tf.heads import (EXPORT_HEADS, HEADS, every_head, for_hf_task,  # noqa: F401
                             for_keras_hub_task, for_task_type, get, hf_heads, onnx_heads,
                             sdk_heads, task_types)
from albert_tf.heads.base import TaskHead  # noqa: F401
from albert_tf.heads.classification import ClassificationHead, RegressionHead  # noqa: F401
from albert_tf.heads.decoding import softmax, word_labels  # noqa: F401
from albert_tf.heads.embedding import EmbeddingHead  # noqa: F401
from albert_tf.heads.multiple_choice import MultipleChoiceHead  # noqa: F401
from albert_tf.heads.pretraining import PretrainingHead  # noqa: F401
from albert_tf.heads.question_answering import SpanHead  # noqa: F401
from albert_tf.heads.span import (MAX_ANSWER_LENGTH, SDK_SPAN_BOOST,  # noqa: F401
                                  SDK_SPAN_MASK, SDK_SPAN_SEQ_LENGTH, best_span, best_spans,
                                  sdk_span_logits)
from albert_tf.heads.token_classification import TokenClassificationHead  # noqa: F401

warnings.warn("albert_tf.task_heads is deprecated; use albert_tf.heads (the registry: "
              "albert_tf.heads.registry).", DeprecationWarning, stacklevel=2)
