"""Times one artifact in one runtime, in this (fresh) process, and prints JSON.

    python -m albert_tf.benchmark.worker --runtime=tflite --artifact=m_{batch}x{seq}.tflite \
        --shapes=1x128,32x128 --vocab_size=30000 --threads=2

Prints one JSON object: per shape the median and p90 latency (ms), sequences/s, and
the process's peak RSS (MiB) after all shapes ran. When the runtime's Python package is
not installed (a ModuleNotFoundError while loading or preparing the model), it prints
``{"error": "missing_package", "package": NAME, ...}`` instead and exits with
`MISSING_PACKAGE_EXIT`, so the driver can skip that runtime with one line.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys

from albert_tf.runtime.sessions import SESSIONS, token_inputs
from albert_tf.benchmark.timing import median_ms, time_call  # noqa: F401  (public here too)

MISSING_PACKAGE_EXIT = 3   # the runtime's package is not installed (JSON on stdout says which)


def peak_rss_mib() -> float:
    """This process's peak resident set size.

    ``VmHWM`` belongs to the process's own address space, which ``execve`` replaces;
    ``ru_maxrss`` would not do: Linux carries it across ``execve``, so a worker started
    from a large parent would report the parent's peak.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _enable_perf(control: str | None) -> None:
    """Tells a waiting ``perf record --control=fifo:...`` to start sampling."""
    if control:
        with open(control, "w", encoding="ascii") as f:
            f.write("enable\n")


def missing_package(error: ModuleNotFoundError) -> str | None:
    """The top-level package of a ModuleNotFoundError, or None when it is one of ours (a
    bug to raise, not an uninstalled runtime to skip)."""
    package = (error.name or "").split(".")[0]
    return None if not package or package in ("albert_tf", "albert_tflite") else package


def report_missing_package(runtime: str, error: ModuleNotFoundError) -> int:
    """Prints the missing-package JSON; re-raises when the missing module is our own."""
    package = missing_package(error)
    if package is None:
        raise error
    json.dump({"runtime": runtime, "error": "missing_package", "package": package,
               "message": str(error)}, sys.stdout)
    print()
    return MISSING_PACKAGE_EXIT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", required=True, choices=sorted(SESSIONS))
    parser.add_argument("--artifact", required=True)
    parser.add_argument("--shapes", required=True, help="comma list of BATCHxSEQ")
    parser.add_argument("--vocab_size", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min_iterations", type=int, default=10)
    parser.add_argument("--min_seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--perf_control", default=None, help="a `perf record --control` "
                        "FIFO: sampling is enabled after the warm-up (albert_tf.benchmark."
                        "profile), so loading and packing the model are not in the profile")
    args = parser.parse_args(argv)

    try:
        runner = SESSIONS[args.runtime](args.artifact, args.threads)
    except ModuleNotFoundError as e:
        return report_missing_package(args.runtime, e)
    results = []
    for shape in args.shapes.split(","):
        batch, seq = (int(v) for v in shape.lower().split("x"))
        try:   # some runners import their runtime here (TFLite)
            call = runner.prepare(token_inputs(batch, seq, args.vocab_size))
        except ModuleNotFoundError as e:
            return report_missing_package(args.runtime, e)
        latencies = time_call(call, args.min_iterations, args.min_seconds, args.warmup,
                              on_warm=lambda: _enable_perf(args.perf_control))
        median = statistics.median(latencies)
        results.append({"batch": batch, "seq": seq, "median_ms": median,
                        "p90_ms": percentile(latencies, 0.9), "iterations": len(latencies),
                        "sequences_per_s": batch / median * 1e3})
    json.dump({"runtime": args.runtime, "artifact": args.artifact, "threads": args.threads,
               "peak_rss_mib": peak_rss_mib(),
               "imported_tensorflow": "tensorflow" in sys.modules, "results": results},
              sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
