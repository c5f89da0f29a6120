"""Latency and throughput of an exported ``.tflite`` per signature (sequence-length bucket).

    albert-tflite-benchmark --model=edge/sst2_int8 --threads=2 [--runs=50] [--min_seconds=2] \
        [--json=out.json]
    python -m albert_tflite.benchmark --model=a/model.tflite --model=b/model.tflite --no_xnnpack

The CLI of `albert_tf.benchmark.tflite_export` (``python -m
albert_tf.benchmark.tflite_export`` takes the same flags), which holds the timing; its
names are re-exported here.
"""

from __future__ import annotations

import sys

from albert_tf.benchmark.tflite_export import SAMPLE_WORDS, benchmark, main

__all__ = ["SAMPLE_WORDS", "benchmark", "main"]


if __name__ == "__main__":
    sys.exit(main())
