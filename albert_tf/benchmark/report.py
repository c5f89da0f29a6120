"""Benchmark results -> markdown table, JSON and PNG plots."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Iterable


@dataclasses.dataclass
class Measurement:
    """One (model, runtime, shape) timing with the figures derived from it."""

    model: str
    runtime: str
    batch: int
    seq: int
    median_ms: float
    p90_ms: float
    sequences_per_s: float
    peak_rss_mib: float
    file_mib: float
    gflops_per_sequence: float
    peak_fraction: float  # achieved FLOP/s over the runtime's peak (fp32 or int8 VNNI)
    accuracy: float | None = None


def markdown_table(rows: Iterable[Measurement]) -> str:
    lines = ["| model | runtime | batch x seq | median ms | p90 ms | seq/s | GFLOP/seq | "
             "% of peak | file MiB | peak RSS MiB |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.model} | {r.runtime} | {r.batch} x {r.seq} | {r.median_ms:.1f} | "
                     f"{r.p90_ms:.1f} | {r.sequences_per_s:.1f} | {r.gflops_per_sequence:.2f} | "
                     f"{100 * r.peak_fraction:.0f}% | {r.file_mib:.1f} | {r.peak_rss_mib:.0f} |")
    return "\n".join(lines)


def albert_vs_bert_table(rows: list[Measurement], runtime: str, pairs) -> str:
    """Time ratio next to FLOP ratio for each (albert, bert) pair at each shape."""
    index = {(r.model, r.runtime, r.batch, r.seq): r for r in rows}
    lines = [f"ALBERT vs BERT ({runtime}): time ratio vs FLOP ratio",
             "",
             "| ALBERT | BERT | batch x seq | ALBERT ms | BERT ms | time ratio | FLOP ratio |",
             "|---|---|---|---:|---:|---:|---:|"]
    shapes = sorted({(r.batch, r.seq) for r in rows})
    for albert, bert in pairs:
        for batch, seq in shapes:
            a, b = index.get((albert, runtime, batch, seq)), index.get((bert, runtime, batch, seq))
            if a and b:
                lines.append(f"| {albert} | {bert} | {batch} x {seq} | {a.median_ms:.1f} | "
                             f"{b.median_ms:.1f} | {a.median_ms / b.median_ms:.2f} | "
                             f"{a.gflops_per_sequence / b.gflops_per_sequence:.2f} |")
    return "\n".join(lines)


def write_json(path: str, rows: list[Measurement], meta: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "measurements": [dataclasses.asdict(r) for r in rows]}, f,
                  indent=2)


def plot_latency_vs_flops(path: str, rows: list[Measurement], batch: int = 1) -> None:
    """Log-log latency against GFLOP per sequence, one marker series per runtime."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for runtime in sorted({r.runtime for r in rows}):
        points = sorted((r.gflops_per_sequence * r.batch, r.median_ms, r.model, r.seq)
                        for r in rows if r.runtime == runtime and r.batch == batch)
        if not points:
            continue
        ax.plot([p[0] for p in points], [p[1] for p in points], "o", label=runtime, alpha=0.8)
        for x, y, model, seq in points:
            ax.annotate(f"{model}@{seq}", (x, y), fontsize=6, alpha=0.7,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"GFLOP per forward pass (batch {batch})")
    ax.set_ylabel("median latency (ms)")
    ax.set_title("CPU latency vs FLOPs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_speed_vs_accuracy(path: str, rows: list[Measurement]) -> None:
    """Sequences/s against accuracy for measurements that carry an accuracy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scored = [r for r in rows if r.accuracy is not None]
    if not scored:
        return
    fig, ax = plt.subplots(figsize=(7, 5))
    for r in scored:
        ax.plot(r.sequences_per_s, 100 * r.accuracy, "o")
        ax.annotate(f"{r.model} {r.runtime}", (r.sequences_per_s, 100 * r.accuracy), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("sequences / s")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Speed vs accuracy")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(output_dir: str, rows: list[Measurement], meta: dict,
                 pairs=(("albert_base", "bert_base"), ("albert_large", "bert_large"))) -> str:
    """Writes report.md, results.json, latency_vs_flops.png (+ speed_vs_accuracy.png)."""
    os.makedirs(output_dir, exist_ok=True)
    write_json(os.path.join(output_dir, "results.json"), rows, meta)
    plot_latency_vs_flops(os.path.join(output_dir, "latency_vs_flops.png"), rows)
    plot_speed_vs_accuracy(os.path.join(output_dir, "speed_vs_accuracy.png"), rows)
    sections = ["# CPU inference benchmark", "",
                "\n".join(f"- {k}: {v}" for k, v in meta.items()), "",
                markdown_table(rows), ""]
    for runtime in sorted({r.runtime for r in rows}):
        table = albert_vs_bert_table(rows, runtime, pairs)
        if table.count("\n") > 3:
            sections += [table, ""]
    sections.append("![latency vs FLOPs](latency_vs_flops.png)")
    text = "\n".join(sections) + "\n"
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return text
