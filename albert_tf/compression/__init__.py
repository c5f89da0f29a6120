"""Model compression for ALBERT with TF-MOT: pruning, QAT, distillation, structured pruning.

Submodules (imported on demand, they import TensorFlow):

* `albert_tf.compression.compression_config` -- `CompressionConfig` and its YAML/override layering.
* `albert_tf.compression.pruning` -- unstructured magnitude pruning, correct for shared blocks.
* `albert_tf.compression.qat` -- quantization-aware training and int8 TFLite conversion.
* `albert_tf.compression.distillation` -- teacher -> student knowledge distillation.
* `albert_tf.compression.structured` -- removing attention heads and FFN neurons.
* `albert_tf.compression.compressor` -- the stages of ``albert-tf-compress``.
"""
