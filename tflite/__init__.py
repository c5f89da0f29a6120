"""The edge side of albert-tf: run, score, benchmark and describe exported TFLite models.

See tflite/README.md. Modules: `runner` (library + CLI), `evaluate`, `benchmark`, `metadata`.
Importing the package quiets TensorFlow's start-up unless ``--verbose`` (`albert_tf.cli`).
"""

from albert_tf import cli as _cli

_cli.quiet_startup()
