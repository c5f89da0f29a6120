"""Times several artifacts in interleaved rounds, in one fresh process, and prints JSON.

    python -m albert_tf.benchmark.interleaved --shape=1x128 --vocab_size=8000 \
        --artifact=teacher=tflite:t/model.tflite --artifact=small=tflite:s/model.tflite

A shared machine drifts: timing A for a minute and then B for a minute measures the
drift as much as A / B. Here every artifact is loaded first, then each *round* times
every artifact for ``--round_seconds`` in turn (the order rotating from round to round),
so each round's ratio compares neighbours in time. Per artifact it reports the median
of its round medians and their spread (lowest and highest round median); `ratios` gives
the median and spread of the per-round ratios against a reference artifact.
`time_interleaved` runs this module in a child process (a runtime's threads and memory
never mix with the caller's TensorFlow) and returns the parsed result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from albert_tf.runtime.sessions import SESSIONS, token_inputs
from albert_tf.benchmark.timing import time_call


class InterleavedError(RuntimeError):
    """The timing child failed; the message holds its last output line."""


def measure(artifacts: dict[str, tuple[str, str]], batch: int, seq: int, vocab_size: int,
            threads: int = 2, rounds: int = 7, round_seconds: float = 0.4,
            warmup: int = 3) -> dict[str, dict]:
    """``{name: {"median_ms", "low_ms", "high_ms", "rounds_ms": [...]}}`` for
    ``artifacts`` (``{name: (worker runtime, path)}``), timed in this process."""
    inputs = token_inputs(batch, seq, vocab_size)
    calls = {name: SESSIONS[runtime](path, threads).prepare(inputs)
             for name, (runtime, path) in artifacts.items()}
    names = list(calls)
    per_round: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            latencies = time_call(calls[name], min_iterations=3, min_seconds=round_seconds,
                                  warmup=warmup if r == 0 else 1)
            per_round[name].append(statistics.median(latencies))
    return {name: {"median_ms": statistics.median(values), "low_ms": min(values),
                   "high_ms": max(values), "rounds_ms": values}
            for name, values in per_round.items()}


def ratios(result: dict[str, dict], reference: str) -> dict[str, dict]:
    """Per artifact, ``reference``'s latency over its own, round by round: ``{"median",
    "low", "high"}`` (a speedup: > 1 is faster than the reference)."""
    base = result[reference]["rounds_ms"]
    out = {}
    for name, row in result.items():
        values = [b / x for b, x in zip(base, row["rounds_ms"])]
        out[name] = {"median": statistics.median(values), "low": min(values),
                     "high": max(values)}
    return out


def time_interleaved(artifacts: dict[str, tuple[str, str]], batch: int, seq: int,
                     vocab_size: int, threads: int = 2, rounds: int = 7,
                     round_seconds: float = 0.4) -> dict[str, dict]:
    """`measure` in a fresh Python process (this interpreter)."""
    argv = [sys.executable, "-m", __name__, f"--shape={batch}x{seq}",
            f"--vocab_size={vocab_size}", f"--threads={threads}", f"--rounds={rounds}",
            f"--round_seconds={round_seconds}"]
    argv += [f"--artifact={name}={runtime}:{path}"
             for name, (runtime, path) in artifacts.items()]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InterleavedError(f"timing {', '.join(artifacts)} failed (exit "
                               f"{done.returncode}): {tail}")
    return json.loads(lines[-1])


def _artifact(text: str) -> tuple[str, tuple[str, str]]:
    name, _, rest = text.partition("=")
    runtime, _, path = rest.partition(":")
    if not (name and runtime in SESSIONS and path):
        raise argparse.ArgumentTypeError(f"expected NAME=RUNTIME:PATH with RUNTIME one of "
                                         f"{', '.join(sorted(SESSIONS))}, got {text!r}")
    return name, (runtime, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifact", type=_artifact, action="append", required=True)
    parser.add_argument("--shape", required=True, help="BATCHxSEQ")
    parser.add_argument("--vocab_size", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--round_seconds", type=float, default=0.4)
    args = parser.parse_args(argv)
    batch, seq = (int(v) for v in args.shape.lower().split("x"))
    result = measure(dict(args.artifact), batch, seq, args.vocab_size, args.threads,
                     args.rounds, args.round_seconds)
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
