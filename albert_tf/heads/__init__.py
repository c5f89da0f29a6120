"""The task heads: `albert_tf.task_heads` is the registry (which heads there are, the
lookups) and imports these.

``base``                  `TaskHead`, what every head declares (listed there) and the
                          defaults it inherits (serving, TFLite, runner)
``classification``        `ClassificationHead` (``logits [B, C]``) and `RegressionHead`
                          (``value [B, 1]``) on the pooled ``[CLS]``
``question_answering``    `SpanHead`: SQuAD, an answer span of the context
``multiple_choice``       `MultipleChoiceHead`: one of C second texts (``logits [B, C]``)
``token_classification``  `TokenClassificationHead`: a tag per word (``logits [B, S, T]``)
``pretraining``           `PretrainingHead`: a pretrained model directory
``embedding``             `EmbeddingHead`: a sentence embedding an export puts on any
                          encoder (``embedding [B, H]``)
``span``                  span decoding: `best_spans` (TensorFlow), `best_span` (NumPy) and
                          the fixed-point logits of the SDK-shaped span export
                          (`sdk_span_logits`)
``decoding``              the edge runner's NumPy helpers (`softmax`, `word_labels`)

Like the registry, nothing here imports TensorFlow at import time (the TFLite runner uses
it without TensorFlow).
"""
