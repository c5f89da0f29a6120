"""The one timer of albert-tf's benchmarks: latencies of a call, in ms.

`time_call` is what the benchmark worker (`albert_tf.benchmark.worker`), the interleaved
rounds (`albert_tf.benchmark.interleaved`), ``albert-tflite-benchmark`` and the scripts of
``studies/`` time with; `median_ms` is its one-line form. Imports nothing heavy.
"""

from __future__ import annotations

import statistics
import time


def time_call(call, min_iterations: int, min_seconds: float, warmup: int,
              on_warm=None, clock=time.perf_counter) -> list[float]:
    """Latencies in ms: ``warmup`` untimed calls, then calls until both minimums are met:
    ``min_iterations`` calls and ``min_seconds`` of measured time (the sum of the
    latencies). ``on_warm()`` runs between the two (the profiler starts sampling there).
    ``clock`` measures each call (``time.thread_time``: this thread's CPU time)."""
    for _ in range(warmup):
        call()
    if on_warm is not None:
        on_warm()
    latencies: list[float] = []
    total_ms = 0.0
    while len(latencies) < min_iterations or total_ms < 1e3 * min_seconds:
        t0 = clock()
        call()
        latencies.append((clock() - t0) * 1e3)
        total_ms += latencies[-1]
    return latencies


def median_ms(call, runs: int, warmup: int = 3, clock=time.perf_counter) -> float:
    """The median latency (ms) of exactly ``runs`` calls after ``warmup`` untimed ones:
    the benchmark scripts' one timer."""
    return statistics.median(time_call(call, runs, 0.0, warmup, clock=clock))
