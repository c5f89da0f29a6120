"""Concurrency of the served model: answers under N threads equal single-threaded ones, and
memory stays flat.

    nice -n 10 .venv/bin/python studies/figures.py concurrency     # tiny model, 8 x 60 s
    .venv/bin/python studies/figures.py concurrency --saved_model=serving/sst2/1 \\
        --tflite=edge/sst2_int8 --threads=8 --seconds=60 [--json=out.json]
    python studies/concurrency/run.py --help        # the same flags, run directly

A thin driver: the benchmark is `albert_tf.benchmark.concurrency` (also
``python -m albert_tf.benchmark.concurrency``), whose docstring says what is measured and why.
SST-2 dev sentences come from ``--data_dir`` or ``$ALBERT_TF_DATA_DIR``.
"""

from __future__ import annotations

import sys

from albert_tf.benchmark.concurrency import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
