"""Structured compression to a latency target: accuracy vs speedup, ALBERT vs BERT (issue #46).

    .venv/bin/python studies/structured_speedup/run.py --work_dir=/tmp/ss
        [--archs=albert_mini,bert_mini] [--targets=2,3] [--seeds=1,2,3]
        [--methods=one_shot,scheduled,scheduled_distill,layers_distill]

Drives the console scripts only (data from $ALBERT_TF_DATA_DIR, as a user runs them):

1. a teacher per architecture: ``albert-tf-finetune --config_file=finetune_sst2_tour`` with
   ``model.config`` set (albert_mini, and bert_mini: the same shape, E = H, no sharing);
2. per architecture, ``--target_speedup`` and method, one ``albert-tf-compress
   --config_file=compress_sst2_speedup`` per seed (the shape comes from the latency
   search, cached, so every method of a target gets the same shape):
   ``one_shot`` (gradient importance once, units removed, fine-tuned), ``scheduled``
   (polynomial-decay schedule, labels only), ``scheduled_distill`` (the recipe: schedule +
   distillation from the unpruned model), ``layers_distill`` (only whole layers removed,
   distilled: "distillation to fewer layers alone");
3. the int8 TFLite export of every result and teacher (``albert-tf-export``, signatures
   1 x 64 and 1 x 128), its SST-2 dev accuracy (``albert-tflite-evaluate``) and, per
   architecture, every export timed in interleaved rounds against its teacher's, per
   signature (``albert-tflite-benchmark --rounds``).

Writes ``results.json`` and ``table.md`` (and ``accuracy_vs_speedup.png``) into --work_dir;
each step is skipped when its output exists, so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

METHODS = {
    # the control: nothing removed, the same 1000 steps of training (is it the training or
    # the compression that moves accuracy?); run with --targets=1
    "dense_continued": ["structured.schedule=one_shot,structured.distill_alpha=0,"
                        "structured.head_fraction=0,structured.ffn_fraction=0"],
    "one_shot": ["structured.schedule=one_shot,structured.distill_alpha=0"],
    "scheduled": ["structured.distill_alpha=0"],
    "scheduled_distill": [],
    "layers_distill": ["speedup.parts=[layers]"],
    # the importances compared ("measure and choose"): no target, a fixed structure that
    # leaves the choice of units everything (half the heads, 3/4 of the FFN neurons, every
    # layer kept), on the schedule, labels only; run with --targets=1
    **{f"h50_f75_{importance}": [
        f"structured.importance={importance},structured.distill_alpha=0,"
        "structured.head_fraction=0.5,structured.ffn_fraction=0.75"]
       for importance in ("gradient", "movement", "magnitude")},
}
FIXED_STRUCTURE = {"dense_continued", "h50_f75_gradient", "h50_f75_movement",
                   "h50_f75_magnitude"}   # methods without a target: --targets=1


def command(name: str) -> str:
    """A console script of this interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def run(argv: list[str], log: str) -> subprocess.CompletedProcess:
    print("$", " ".join(argv), flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}\n")
    return done


def teacher(work: str, arch: str) -> str:
    model_dir = os.path.join(work, "teachers", arch)
    if not os.path.isdir(os.path.join(model_dir, "best")):
        done = run([command("albert-tf-finetune"), "--task=sst2",
                    "--config_file=finetune_sst2_tour", f"--model_dir={model_dir}",
                    f"--params_override=model.config={arch}"],
                   os.path.join(work, "log.txt"))
        if done.returncode:
            sys.exit(f"finetuning {arch} failed: {done.stderr.strip().splitlines()[-1:]}")
    return os.path.join(model_dir, "best")


def compress(work: str, init: str, arch: str, method: str, target: float, seed: int,
             steps: int | None) -> dict:
    out = os.path.join(work, arch, f"{method}_x{target:g}_s{seed}")
    report = os.path.join(out, "report.json")
    if not os.path.exists(report):
        argv = [command("albert-tf-compress"), f"--init_model={init}", f"--model_dir={out}",
                "--config_file=compress_sst2_speedup", f"--seed={seed}", "--notflite"]
        argv += [f"--target_speedup={target:g}"] if target > 1 else []
        argv += [f"--params_override={o}" for o in METHODS[method]]
        argv += [f"--num_train_steps={steps}"] if steps else []
        done = run(argv, os.path.join(work, "log.txt"))
        if done.returncode:
            return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    with open(report, encoding="utf-8") as f:
        values = json.load(f)
    chosen = values.get("speedup", {}).get("chosen", {})
    with open(os.path.join(values["model_dir"], "config.json"), encoding="utf-8") as f:
        kept = json.load(f)
    shape = chosen.get("shape") or (f"L{kept['num_hidden_layers']}/"
                                    f"N{kept['num_attention_heads']}/"
                                    f"I{kept['intermediate_size']}")
    return {"model_dir": values["model_dir"], "float_dev": values["dev"]["structured"]["accuracy"],
            "shape": shape, "predicted": chosen.get("speedup"),
            "measured_in_run": values.get("speedup", {}).get("measured", {}).get("speedup"),
            "params": values["params"]}


def export_and_score(work: str, model_dir: str, name: str) -> dict:
    out = os.path.join(work, "exports", name)
    scores = out + "_dev.json"
    if not os.path.exists(os.path.join(out, "model.tflite")):
        done = run([command("albert-tf-export"), f"--model_dir={model_dir}", "--format=tflite",
                    "--quantization=int8", "--seq_lengths=64,128", f"--output={out}"],
                   os.path.join(work, "log.txt"))
        if done.returncode:
            sys.exit(f"export of {model_dir} failed: {done.stderr.strip()[-300:]}")
    if not os.path.exists(scores):
        run([command("albert-tflite-evaluate"), f"--model={out}", "--task=sst2",
             f"--json={scores}"], os.path.join(work, "log.txt"))
    with open(scores, encoding="utf-8") as f:
        values = json.load(f)
    row = values[0] if isinstance(values, list) else values
    return {"export": out, "int8_dev": row["accuracy"],
            "size_mib": os.path.getsize(os.path.join(out, "model.tflite")) / 2**20}


def time_all(work: str, arch: str, exports: list[str], rounds: int) -> dict[str, dict]:
    """Every export of ``arch`` in interleaved rounds, the teacher's first."""
    path = os.path.join(work, f"latency_{arch}.json")
    if not os.path.exists(path):
        done = run([command("albert-tflite-benchmark"), *[f"--model={e}" for e in exports],
                    f"--rounds={rounds}", "--min_seconds=" + str(0.4 * rounds), "--runs=20",
                    f"--json={path}"], os.path.join(work, "log.txt"))
        if done.returncode:
            sys.exit(f"timing failed: {done.stderr.strip()[-300:]}")
    with open(path, encoding="utf-8") as f:
        return {(row["model"], row["seq_length"]): row for row in json.load(f)}


def summarize(rows: list[dict]) -> str:
    """The markdown table: per architecture, target and method, mean and spread over seeds."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["arch"], r["target"], r["method"]), []).append(r)
    lines = ["| model | target | method | shape | int8 speedup b1 x s128 (median, min-max) "
             "| b1 x s64 | int8 dev % (mean, min-max of seeds) | vs teacher (points) | "
             "size MiB |", "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for (arch, target, method), group in sorted(groups.items()):
        ok = [r for r in group if "error" not in r]
        if not ok:
            lines.append(f"| {arch} | {target:g}x | {method} | not reachable: "
                         f"{group[0]['error'][:90]} | | | | | |")
            continue
        acc = [100 * r["int8_dev"] for r in ok]
        speed = [r["speedup"] for r in ok]
        short = [r["speedup_s64"] for r in ok]
        teacher_acc = 100 * ok[0]["teacher_int8_dev"]
        lines.append(
            f"| {arch} | {target:g}x | {method} | {ok[0]['shape']} | "
            f"{statistics.median(speed):.2f}x ({min(speed):.2f}-{max(speed):.2f}) | "
            f"{statistics.median(short):.2f}x ({min(short):.2f}-{max(short):.2f}) | "
            f"{statistics.mean(acc):.2f} ({min(acc):.2f}-{max(acc):.2f}) | "
            f"{statistics.mean(acc) - teacher_acc:+.2f} | {ok[0]['size_mib']:.2f} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], teachers: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = {"one_shot": "o", "scheduled": "s", "scheduled_distill": "^",
               "layers_distill": "D", "dense_continued": "x", "h50_f75_gradient": "v",
               "h50_f75_movement": "<", "h50_f75_magnitude": ">"}
    colors = {"albert_mini": "tab:blue", "bert_mini": "tab:orange"}
    for r in rows:
        if "error" in r:
            continue
        ax.scatter(r["speedup"], 100 * r["int8_dev"], marker=markers[r["method"]],
                   color=colors.get(r["arch"], "gray"), alpha=0.7)
    for arch, t in teachers.items():
        ax.scatter(1.0, 100 * t["int8_dev"], marker="*", s=150, color=colors.get(arch, "gray"),
                   label=f"{arch} teacher")
    for method, m in markers.items():
        ax.scatter([], [], marker=m, color="gray", label=method)
    ax.set_xlabel("speedup of the int8 TFLite export over the teacher's (b1 x s128)")
    ax.set_ylabel("SST-2 dev accuracy % (int8)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--archs", default="albert_mini,bert_mini")
    parser.add_argument("--targets", default="2,3")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--methods", default="one_shot,scheduled,scheduled_distill,"
                        "layers_distill", help=f"of {', '.join(METHODS)} (those of "
                        f"{sorted(FIXED_STRUCTURE)}: --targets=1 only, the others > 1)")
    parser.add_argument("--num_train_steps", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    rows, teachers = [], {}
    for arch in args.archs.split(","):
        init = teacher(work, arch)
        teachers[arch] = export_and_score(work, init, f"{arch}_teacher")
        for target in (float(t) for t in args.targets.split(",")):
            for method in args.methods.split(","):
                if (method in FIXED_STRUCTURE) != (target == 1):
                    continue          # the fixed structures run without a target, the rest with one
                for seed in (int(s) for s in args.seeds.split(",")):
                    row = {"arch": arch, "target": target, "method": method, "seed": seed}
                    row.update(compress(work, init, arch, method, target, seed,
                                        args.num_train_steps))
                    if "error" not in row:
                        row.update(export_and_score(
                            work, row["model_dir"], f"{arch}_{method}_x{target:g}_s{seed}"))
                        row["teacher_int8_dev"] = teachers[arch]["int8_dev"]
                    rows.append(row)
        exports = [teachers[arch]["export"]] + [r["export"] for r in rows
                                                if r["arch"] == arch and "export" in r]
        timing = time_all(work, arch, exports, args.rounds)
        teachers[arch].update(latency_ms=timing[exports[0], 128]["median_ms"],
                              latency_s64_ms=timing[exports[0], 64]["median_ms"])
        for r in rows:
            if r["arch"] == arch and "export" in r:
                r.update(speedup=timing[r["export"], 128]["speedup"],
                         latency_ms=timing[r["export"], 128]["median_ms"],
                         speedup_s64=timing[r["export"], 64]["speedup"],
                         latency_s64_ms=timing[r["export"], 64]["median_ms"])
    from albert_tf.benchmark.cpu import cpu_info
    info = cpu_info(measure_clock=False)
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"cpu": info.model_name, "isa": info.peaks.isa, "teachers": teachers,
                   "rows": rows}, f, indent=1)
    table = summarize(rows)
    with open(os.path.join(work, "table.md"), "w", encoding="utf-8") as f:
        f.write(f"{info.model_name} ({info.peaks.isa})\n\n" + table)
    print(table)
    plot(rows, teachers, os.path.join(work, "accuracy_vs_speedup.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
