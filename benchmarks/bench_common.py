"""What the deepsparse-anchor and sparsity-albert-vs-bert scripts still import (the data
directory default, the package's timer and CPU name under their old names); the other
scripts use `albert_tf.resources`, `albert_tf.benchmark.worker` and `albert_tf.benchmark.cpu`
directly. Goes away once those two stop importing it."""

from __future__ import annotations

import os
import subprocess
import sys

from albert_tf.benchmark.worker import median_ms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "benchmarks", "figures.py")
DEFAULT_DATA_DIR = os.environ.get("ALBERT_TF_DATA_DIR",
                                  os.path.join(ROOT, "..", "shared", "data"))


def cpu_model() -> str:
    """The CPU's model name (`albert_tf.benchmark.cpu.cpu_info`)."""
    from albert_tf.benchmark.cpu import cpu_info
    return cpu_info(measure_clock=False).model_name


# The one timer: `albert_tf.benchmark.worker.median_ms` (warm-up calls, then the median).
median_invoke_ms = median_ms


def run_figure(name: str, *args: str, nice: bool = False, log: str | None = None) -> None:
    """Runs figure ``name`` of benchmarks/figures.py in a fresh process (``nice -n 10`` for
    training steps; timings are not niced), its output to ``log`` when given."""
    cmd = (["nice", "-n", "10"] if nice else []) + [sys.executable, FIGURES, name, *args]
    if log is None:
        subprocess.run(cmd, cwd=ROOT, check=True)
        return
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as out:
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=out, stderr=subprocess.STDOUT)
