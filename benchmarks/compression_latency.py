"""Times every TFLite file of the experiments together (batch 1, seq 128, 2 threads).

    .venv/bin/python benchmarks/compression_latency.py      # not niced: it is a timing

`albert_tf.benchmark.worker` (LiteRT + XNNPACK) in a fresh process per file and round;
rounds interleave the files so that load from other processes hits them alike; the
reported latency is the median of the per-round medians.
"""

import glob
import json
import os

from compression_common import RESULTS, latency, log


def main() -> None:
    files = {}
    for result_file in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        with open(result_file) as f:
            result = json.load(f)
        for key in ("tflite", "float_tflite", "ptq_tflite"):
            if result.get(key):
                files[f"{os.path.basename(result_file)[:-5]}:{key}"] = result[key]
    log(f"timing {len(files)} files")
    times = latency(files, rounds=5, seconds=4.0)
    with open(os.path.join(RESULTS, "latency.json"), "w") as f:
        json.dump(times, f, indent=2)
    for key, value in times.items():
        log(f"{key}: {value:.2f} ms")


if __name__ == "__main__":
    main()
