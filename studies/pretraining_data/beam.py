"""albert-tf-create-pretraining-data: the local runner vs --runner=beam, wall time and bytes.

    .venv/bin/python studies/figures.py pretraining-data-beam                 # 3 MB of IMDB
    .venv/bin/python studies/figures.py pretraining-data-beam --mb=1 --workdir=/tmp/x

Runs the command-line tool on the first ``--mb`` MB of the IMDB corpus (cut at a document
boundary), ``--dupe_factor=2 --max_seq_length=128 --num_shards=4``, four times: the local
runner with ``--num_workers`` 1 and 2, and the Beam runner (FnApiRunner) with
``--direct_num_workers`` 1 and 2 (2: ``multi_processing``, one process per worker), the four
in turn, ``--repeats`` rounds. Reports each configuration's median wall time (the whole
command, start-up included; min and max beside it), records, and whether every shard's
sha256 equals the local 1-worker run's in every round; the CPU (`CpuInfo.summary`) and the
load average before and after. Writes JSON (``--output``) and prints the markdown table of
docs/results/pretraining-data-beam-machine-d.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

from albert_tf import resources
from albert_tf.benchmark.cpu import cpu_info

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNS = (("local", "--num_workers=1"), ("local", "--num_workers=2"),
        ("beam", "--direct_num_workers=1"), ("beam", "--direct_num_workers=2"))


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run_once(corpus: str, out: str, runner: str, workers: str, args) -> dict:
    cmd = [sys.executable, "-m", "albert_tf.bin.create_pretraining_data",
           f"--input_file={corpus}", f"--output_file={out}",
           f"--vocab_file={resources.resolve(resources.DEFAULT_VOCAB)}",
           f"--max_seq_length={args.max_seq_length}", "--max_predictions_per_seq=20",
           f"--dupe_factor={args.dupe_factor}", f"--num_shards={args.num_shards}",
           "--noprogress", f"--runner={runner}"]
    cmd.append(workers if runner == "local" else f"--beam_pipeline_options={workers}")
    start = time.time()
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.time() - start
    if result.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stderr[-3000:]}")
    summary = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    return {"runner": runner, "workers": workers, "seconds": round(seconds, 1),
            "instances": summary["instances"], "shard_records": summary["shard_records"],
            "sha256": [sha256(p) for p in summary["outputs"]]}


def table(result: dict) -> str:
    rows = [f"| runner | workers | wall time, median of {result['repeats']} (min-max) | "
            "instances | shards' sha256 = local 1 worker |", "|---|---|---:|---:|---|"]
    for r in result["configurations"]:
        rows.append(f"| {r['runner']} | `{r['workers']}` | {r['median_seconds']:.1f} s "
                    f"({min(r['seconds']):.1f}-{max(r['seconds']):.1f}) | "
                    f"{r['instances']:,} | {'yes' if r['identical'] else 'NO'} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--mb", type=float, default=3.0)
    parser.add_argument("--dupe_factor", type=int, default=2)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--num_shards", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default="/tmp/albert_tf_pretraining_data_beam")
    parser.add_argument("--output", default=os.path.join(HERE, "results", "beam.json"),
                        help="default: the recorded results/beam.json beside this script")
    args = parser.parse_args(argv)
    data_dir = resources.data_dir(args.data_dir)
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), "rb") as f:
        data = f.read(int(args.mb * 1e6))
    corpus = os.path.join(args.workdir, "imdb.txt")
    with open(corpus, "wb") as f:
        f.write(data[: data.rfind(b"\n\n") + 2])
    load_before = os.getloadavg()
    runs = []
    for round_ in range(args.repeats):
        for runner, workers in RUNS:
            name = f"{runner}-{workers.split('=')[-1]}-{round_}"
            runs.append(run_once(corpus, os.path.join(args.workdir, name, "data.tfrecord"),
                                 runner, workers, args))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "sha256"}), flush=True)
    reference = runs[0]["sha256"]
    configurations = []
    for runner, workers in RUNS:
        mine = [r for r in runs if (r["runner"], r["workers"]) == (runner, workers)]
        seconds = sorted(r["seconds"] for r in mine)
        configurations.append({
            "runner": runner, "workers": workers, "seconds": seconds,
            "median_seconds": seconds[len(seconds) // 2], "instances": mine[0]["instances"],
            "shard_records": mine[0]["shard_records"],
            "identical": all(r["sha256"] == reference for r in mine)})
    result = {"cpu_model": cpu_info(measure_clock=False).model_name, "cpu_count": os.cpu_count(),
              "load_average_before_after": [round(load_before[0], 2),
                                            round(os.getloadavg()[0], 2)],
              "input_mb": round(os.path.getsize(corpus) / 1e6, 2),
              "flags": {"dupe_factor": args.dupe_factor, "max_seq_length": args.max_seq_length,
                        "num_shards": args.num_shards},
              "repeats": args.repeats, "sha256": reference,
              "identical": all(c["identical"] for c in configurations),
              "configurations": configurations, "runs": runs}
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"CPU: {result['cpu_model']} ({result['cpu_count']} cores), "
          f"input {result['input_mb']} MB, load average {result['load_average_before_after']}")
    print(table(result))
    return 0 if result["identical"] else 1

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
