"""Helpers shared by the figure scripts of benchmarks/ (run them through
``make figures NAME=<name>``: benchmarks/figures.py)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "benchmarks", "figures.py")
DEFAULT_DATA_DIR = os.environ.get("ALBERT_TF_DATA_DIR",
                                  os.path.join(ROOT, "..", "shared", "data"))


def sst2_split(data_dir: str, split: str = "dev") -> tuple[list[str], list[str]]:
    """The SST-2 sentences and labels (as strings) of ``<data_dir>/glue/SST-2/<split>.tsv``."""
    with open(os.path.join(data_dir, "glue", "SST-2", f"{split}.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[0] for r in rows], [r[1] for r in rows]


def cpu_model() -> str:
    """lscpu's "Model name" (``unknown`` without lscpu)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def median_invoke_ms(invoke, runs: int, warmup: int = 3) -> float:
    """Median wall time (ms) of ``runs`` calls of ``invoke()`` after ``warmup`` calls."""
    for _ in range(warmup):
        invoke()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        invoke()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    middle = len(times) // 2
    return times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2


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
