"""albert-tflite-benchmark: latency and throughput of a TFLite export per signature
(sequence-length bucket).

    albert-tflite-benchmark --model=edge/sst2_int8 --threads=2 --runs=50 --min_seconds=2 \\
        --json=latency.json
    albert-tflite-benchmark --model=edge/sst2_int8 --model=runs/sst2_pruned/tflite --no_xnnpack
        # two exports (the tour's int8 and pruned float), LiteRT's builtin kernels only
    albert-tflite-benchmark --model=edge/sst2_int8 --model=runs/sst2_pruned/tflite \\
        --rounds=7 --min_seconds=3
        # both in 7 interleaved rounds: the round medians' spread, the speedup over the first

The CLI of `albert_tf.benchmark.tflite_export` (``python -m
albert_tf.benchmark.tflite_export`` takes the same flags), which holds the timing; its
names are re-exported here.
"""

from __future__ import annotations

import sys

from albert_tf.benchmark import tflite_export as _cli
from albert_tf.benchmark.tflite_export import SAMPLE_WORDS, benchmark, benchmark_rounds

__all__ = ["SAMPLE_WORDS", "benchmark", "benchmark_rounds", "main"]


def main(argv=None) -> int:
    """``albert-tflite-benchmark``: `albert_tf.benchmark.tflite_export.main` with this
    docstring (its examples) as ``--help``."""
    return _cli.main(argv, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
