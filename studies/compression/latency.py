"""Times every TFLite file of the experiments together (batch 1, seq 128, 2 threads).

    make figures NAME=compression-latency      # not niced: it is a timing
    make figures NAME=compression-latency ARGS="--only=start,structured --rounds=9"

`albert_tf.benchmark.worker` (LiteRT + XNNPACK) in a fresh process per file and round;
rounds interleave the files so that load from other processes hits them alike; the
reported latency is the median of the per-round medians.
"""

import argparse
import glob
import json
import os

from common import RESULTS, latency, log


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma list of result names")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    files = {}
    for result_file in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        with open(result_file) as f:
            result = json.load(f)
        if only and os.path.basename(result_file)[:-5] not in only:
            continue
        for key in ("tflite", "float_tflite", "ptq_tflite"):
            if result.get(key):
                files[f"{os.path.basename(result_file)[:-5]}:{key}"] = result[key]
    if not files:
        raise SystemExit(f"no compressed models to time in {RESULTS}: run the compression "
                         "figures first (`make figures NAME=compression`)")
    log(f"timing {len(files)} files")
    times = latency(files, rounds=args.rounds, seconds=4.0)
    latency_file = os.path.join(RESULTS, "latency.json")
    merged = {}
    if only and os.path.exists(latency_file):        # a partial re-timing updates those files
        with open(latency_file) as f:
            merged = json.load(f)
    merged.update(times)
    with open(latency_file, "w") as f:
        json.dump(merged, f, indent=2)
    for key, value in times.items():
        log(f"{key}: {value:.2f} ms")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
