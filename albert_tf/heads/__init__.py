"""The task heads. Importing this package registers the built-in heads (each module's
``@register``) in the registry's order, the order messages list them in.

``registry``              `HEADS`, `EXPORT_HEADS`, `register` and the lookups (`get`,
                          `every_head`, `for_task_type`, ...); re-exported here
``base``                  `Head`, what every head declares (listed there) and the
                          defaults it inherits (serving, TFLite, runner)
``classification``        `ClassificationHead` (``logits [B, C]``) and `RegressionHead`
                          (``value [B, 1]``) on the pooled ``[CLS]``
``question_answering``    `SpanHead`: SQuAD, an answer span of the context
``token_classification``  `TokenClassificationHead`: a tag per word (``logits [B, S, T]``)
``multiple_choice``       `MultipleChoiceHead`: one of C second texts (``logits [B, C]``)
``pretraining``           `PretrainingHead`: a pretrained model directory
``embedding``             `EmbeddingHead`: a sentence embedding an export puts on any
                          encoder (``embedding [B, H]``; ``export_only``)
``span``                  span decoding: `best_spans` (TensorFlow), `best_span` (NumPy) and
                          the fixed-point logits of the SDK-shaped span export
                          (`sdk_span_logits`)
``decoding``              the edge runner's NumPy helpers (`softmax`, `word_labels`)

Adding a head: its module here (a `Head` subclass with ``@register``), its line below, its
tests and docs. Library code imports the registry module, ``import albert_tf.heads.registry
as heads`` (Python initialises this package first, so every built-in head is registered, and
neither the import graph nor BUILD gets an edge back to the heads); nothing a head module
imports may import this package. Nothing here imports TensorFlow at import time (the TFLite
runner uses it without TensorFlow).
"""

# The built-in heads, in registry order (each module registers its heads when imported).
from albert_tf.heads import classification  # noqa: F401  (classification, regression)
from albert_tf.heads import question_answering  # noqa: F401  (span)
from albert_tf.heads import token_classification  # noqa: F401
from albert_tf.heads import multiple_choice  # noqa: F401
from albert_tf.heads import pretraining  # noqa: F401
from albert_tf.heads import embedding  # noqa: F401  (export only)
from albert_tf.heads.base import Head, TaskHead  # noqa: F401
from albert_tf.heads.registry import (  # noqa: F401
    EXPORT_HEADS, HEADS, custom_heads, every_head, for_file_header, for_hf_task,
    for_keras_hub_task, for_task_name, for_task_type, get, head_layer_names, hf_heads,
    onnx_heads, register, sdk_heads, task_types)
