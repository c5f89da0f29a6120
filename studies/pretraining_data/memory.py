"""Peak memory and throughput of albert-tf-create-pretraining-data: corpus vs 10x corpus.

    nice -n 10 .venv/bin/python studies/figures.py pretraining-data-memory            # IMDB, 10x
    .venv/bin/python studies/figures.py pretraining-data-memory --copies=2 --workdir=/tmp/x

Runs the command-line tool twice, on the corpus and on a file holding ``--copies``
concatenated copies of it, sampling the resident memory of the whole process tree (the
parent and its worker processes) every 0.2 s. Reports, per run, the peak of the tree's summed
RSS, the largest single-process RSS, wall time, MB of text
per second, and the summary statistics (masking, n-gram spans, SOP balance). Writes JSON.
Streaming means the larger run's peak stays within 1.2x of the smaller one's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """(summed RSS of the process tree, largest single RSS)."""
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0, 0
    sizes = []
    for p in procs:
        try:
            sizes.append(p.memory_info().rss)
        except psutil.Error:
            pass
    return sum(sizes), max(sizes, default=0)


def run_once(inputs: str, output: str, args, summary_file: str) -> dict:
    cmd = [sys.executable, "-m", "albert_tf.bin.create_pretraining_data",
           f"--input_file={inputs}", f"--output_file={output}",
           f"--spm_model_file={args.spm_model_file}", f"--max_seq_length={args.max_seq_length}",
           f"--max_predictions_per_seq={args.max_predictions_per_seq}",
           f"--dupe_factor={args.dupe_factor}", f"--num_workers={args.num_workers}",
           f"--random_seed={args.seed}", f"--summary_file={summary_file}", "--noprogress"]
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    ps = psutil.Process(proc.pid)
    peak_tree = peak_single = 0
    while proc.poll() is None:
        tree, single = _tree_rss(ps)
        peak_tree, peak_single = max(peak_tree, tree), max(peak_single, single)
        time.sleep(0.2)
    stderr = proc.stderr.read()
    wall = time.time() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    with open(summary_file, encoding="utf-8") as f:
        summary = json.load(f)
    return {"input_mb": summary["input_mb"], "wall_seconds": round(wall, 1),
            "mb_per_second": round(summary["input_mb"] / wall, 3),
            "tool_mb_per_second": summary["mb_per_second"],
            "peak_tree_rss_mb": round(peak_tree / 2**20, 1),
            "peak_single_process_rss_mb": round(peak_single / 2**20, 1),
            "summary": {k: v for k, v in summary.items() if k != "outputs"}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--corpus", default=None,
                        help="default: corpus/imdb-unsup.txt of the data directory")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--workdir", default="/tmp/albert_tf_pretraining_memory")
    parser.add_argument("--spm_model_file", default=None,
                        help="default: the shipped official_configs/vocab/imdb_pydocs_8k.model")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--dupe_factor", type=int, default=1)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--keep_first_output", default=None,
                        help="Move the 1x run's TFRecords here (e.g. out/pretrain/imdb_128).")
    parser.add_argument("--output_json", default=os.path.join(HERE, "results", "memory.json"),
                        help="default: the recorded results/memory.json beside this script")
    args = parser.parse_args(argv)
    from albert_tf import resources
    if args.corpus is None:
        args.corpus = os.path.join(resources.data_dir(args.data_dir), "corpus", "imdb-unsup.txt")
    args.spm_model_file = args.spm_model_file or resources.resolve(resources.DEFAULT_VOCAB)

    os.makedirs(args.workdir, exist_ok=True)
    big = os.path.join(args.workdir, f"corpus_x{args.copies}.txt")
    with open(args.corpus, "rb") as src:
        data = src.read()
    if not data.endswith(b"\n\n"):
        data += b"\n" if data.endswith(b"\n") else b"\n\n"
    with open(big, "wb") as out:
        for _ in range(args.copies):
            out.write(data)
    del data

    results = {"settings": {k: v for k, v in vars(args).items() if k != "output_json"},
               "cpu_count": os.cpu_count()}
    for name, inputs in (("x1", args.corpus), (f"x{args.copies}", big)):
        out_dir = os.path.join(args.workdir, name)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        results[name] = run_once(inputs, os.path.join(out_dir, "data.tfrecord"), args,
                                 os.path.join(args.workdir, f"{name}_summary.json"))
        print(name, json.dumps({k: v for k, v in results[name].items() if k != "summary"}),
              flush=True)
        if name == "x1" and args.keep_first_output:
            os.makedirs(args.keep_first_output, exist_ok=True)
            for f in os.listdir(out_dir):
                shutil.move(os.path.join(out_dir, f), os.path.join(args.keep_first_output, f))
        shutil.rmtree(out_dir, ignore_errors=True)
    os.remove(big)
    big_name = f"x{args.copies}"
    results["peak_tree_rss_ratio"] = round(
        results[big_name]["peak_tree_rss_mb"] / results["x1"]["peak_tree_rss_mb"], 3)
    with open(args.output_json, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print(json.dumps({"peak_tree_rss_ratio": results["peak_tree_rss_ratio"]}))
    return 0 if results["peak_tree_rss_ratio"] <= 1.2 else 1


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
