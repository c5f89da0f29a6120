"""The edge side of albert-tf: run, score, benchmark and describe exported TFLite models.

See tflite/README.md. Modules: `runner` (library + CLI), `evaluate`, `benchmark`, `metadata`.
"""
