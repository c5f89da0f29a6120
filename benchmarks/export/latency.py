"""Latency of several exports, interleaved so that machine load hits all of them alike.

    nice -n 10 .venv/bin/python benchmarks/figures.py export-latency --threads=2 --rounds=5 \\
        --model=float32=/tmp/edge/float32 --model=int8=/tmp/edge/int8 ... [--json=out.json]

Each round runs every model ``--runs`` times (after a warmup) at its first signature
(batch 1, seq 128 in the must-show exports) with full-length inputs; reported are the median
over all runs and the minimum of the per-round medians (the least disturbed round, the best
estimate of the unloaded latency on a shared machine).
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", action="append", required=True, help="name=export_dir")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    from albert_tf.benchmark.worker import time_call
    from albert_tf.export.metadata import read_metadata
    from albert_tflite.benchmark import _inputs
    from albert_tflite.runner import make_interpreter, model_file

    models = {}
    rng = np.random.RandomState(0)
    for item in args.model:
        name, path = item.split("=", 1)
        meta = read_metadata(path)
        key = next(k for k in meta["signatures"] if k != "tokenize")
        sig = dict(meta["signatures"][key], seq_length_hint=meta.get("max_seq_length", 128) - 10)
        interpreter = make_interpreter(model_file(path), args.threads, True,
                                       meta.get("custom_op_registerers", ()))
        runner = interpreter.get_signature_runner(key)
        feed = _inputs(sig, 8000, rng)
        for _ in range(3):
            runner(**feed)
        models[name] = (runner, feed, [], [])
    for _ in range(args.rounds):
        for name, (runner, feed, all_times, medians) in models.items():
            times = time_call(lambda: runner(**feed), args.runs, 0.0, 0)
            all_times += times
            medians.append(float(np.median(times)))
    results = {}
    for name, (_, _, all_times, medians) in models.items():
        results[name] = {"median_ms": float(np.median(all_times)),
                         "best_round_median_ms": float(np.min(medians))}
        print(f"{name:24s} median {results[name]['median_ms']:8.2f} ms   best round "
              f"{results[name]['best_round_median_ms']:8.2f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "results": results}, f, indent=2)


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
