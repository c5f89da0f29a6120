"""The parts of the task heads that are not the registry: `albert_tf.task_heads` is the
registry (which heads there are, what each declares, the lookups) and imports these.

``base``       `TaskHead`, the defaults every head inherits (serving, TFLite, runner)
``span``       span decoding: `best_spans` (TensorFlow), `best_span` (NumPy) and the
               fixed-point logits of the SDK-shaped span export (`sdk_span_logits`)
``decoding``   the edge runner's NumPy helpers (`softmax`, `word_labels`)

Like the registry, nothing here imports TensorFlow at import time (the TFLite runner uses
it without TensorFlow).
"""
