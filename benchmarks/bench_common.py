"""What the deepsparse-anchor and sparsity-albert-vs-bert scripts still import (the data
directory default, the package's timer and CPU name under their old names); the other
scripts use `albert_tf.resources`, `albert_tf.benchmark.worker` and `albert_tf.benchmark.cpu`
directly. Goes away once those two stop importing it."""

from __future__ import annotations

import os

from albert_tf.benchmark.worker import median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.environ.get("ALBERT_TF_DATA_DIR",
                                  os.path.join(ROOT, "..", "shared", "data"))


def cpu_model() -> str:
    """The CPU's model name (`albert_tf.benchmark.cpu.cpu_info`)."""
    from albert_tf.benchmark.cpu import cpu_info
    return cpu_info(measure_clock=False).model_name


# The one timer: `albert_tf.benchmark.worker.median_ms` (warm-up calls, then the median).
median_invoke_ms = median_ms
