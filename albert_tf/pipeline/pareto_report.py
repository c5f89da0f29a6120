"""The "train large, then compress" report: markdown + JSON + PNG plots.

Inputs are plain records collected by the pipeline stages:

* pretraining curves: per model, ``[(wall_seconds, heldout_mlm_loss), ...]``;
* artifacts: per compressed/exported model, accuracy, latency (ms) and size (MiB);
* compression runs: per compressed model, its step budget and Keras dev accuracy.

The Pareto front is the set of artifacts that no other artifact beats on both
accuracy (higher) and latency (lower) at once.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Sequence


@dataclasses.dataclass
class Artifact:
    """One deployable model and its measured figures."""

    name: str          # e.g. "albert_small+prune0.8/dynamic"
    model: str         # the pretrained model size it came from
    method: str        # dense, prune0.8, structured, distill, qat
    runtime: str       # `albert_tf.benchmark.targets.export_label`: tflite_int8, ...
    accuracy: float    # dev accuracy in [0, 1]
    latency_ms: float  # batch 1, fixed sequence length, 2 threads
    size_mib: float    # file size (gzip size for sparse models where noted)
    notes: str = ""
    latency_low: float | None = None    # the spread of the interleaved rounds' medians
    latency_high: float | None = None   # (None: timed once, no spread)

    @property
    def latency_range(self) -> tuple[float, float]:
        return (self.latency_low if self.latency_low is not None else self.latency_ms,
                self.latency_high if self.latency_high is not None else self.latency_ms)

    @property
    def label(self) -> str:
        """``model`` or ``model+method``: what the plots write beside the point."""
        return self.model if self.method == "dense" else f"{self.model}+{self.method}"


@dataclasses.dataclass
class CompressionRun:
    """One compression stage (albert-tf-compress) and what it produced."""

    name: str                # the candidate, e.g. "albert_small+prune0.8"
    method: str              # prune0.8, structured, distill, qat
    steps: int               # optimizer steps of the stage (compress.steps, or the
                             # seconds budget turned into steps)
    budget_seconds: float | None   # compress.seconds when that set the steps, else None
    seconds: float           # what the stage took, start-up included
    accuracy: float | None   # Keras dev accuracy after the stage
    params: int | None       # parameters of the compressed model
    sparsity: float | None = None   # pruned weights' total sparsity


def pareto_front(artifacts: Sequence[Artifact]) -> list[Artifact]:
    """Artifacts not dominated in (higher accuracy, lower latency), fastest first."""
    front = []
    for a in artifacts:
        dominated = any(b.accuracy >= a.accuracy and b.latency_ms <= a.latency_ms and
                        (b.accuracy > a.accuracy or b.latency_ms < a.latency_ms)
                        for b in artifacts)
        if not dominated:
            front.append(a)
    return sorted(front, key=lambda a: a.latency_ms)


def choose_final(artifacts: Sequence[Artifact], max_dev_drop: float) -> Artifact:
    """The artifact to ship: the fastest whose dev accuracy is at most ``max_dev_drop``
    points below the best one's; artifacts whose latency spreads (the interleaved rounds'
    lowest and highest medians) overlap the fastest's are ties, and of those the more
    accurate wins (then the faster median)."""
    if not artifacts:
        raise ValueError("no scored and timed artifacts to choose from")
    floor = max(a.accuracy for a in artifacts) - max_dev_drop / 100 - 1e-9
    eligible = [a for a in artifacts if a.accuracy >= floor]
    fastest = min(eligible, key=lambda a: (a.latency_ms, -a.accuracy))
    low, high = fastest.latency_range
    ties = [a for a in eligible if a.latency_range[0] <= high and a.latency_range[1] >= low]
    return max(ties, key=lambda a: (a.accuracy, -a.latency_ms))


def equal_latency_lines(artifacts: Sequence[Artifact], pairs: Sequence[tuple[str, str]]
                        ) -> list[str]:
    """The report's answer to "at the small model's latency, does the compressed large
    model beat it?": per ``(compressed artifact, reference artifact)`` pair, both rows."""
    by_name = {a.name: a for a in artifacts}
    rows = [(by_name[c], by_name[r]) for c, r in pairs if c in by_name and r in by_name]
    if not rows:
        return []
    lines = ["## At equal latency: compressed large model vs trained small model", "",
             "| artifact | dev acc % | latency ms (spread) | vs | dev acc % | latency ms "
             "(spread) | accuracy gain (points) |", "|---|---:|---:|---|---:|---:|---:|"]
    for c, r in rows:
        lines.append(f"| {c.name} | {100 * c.accuracy:.2f} | {_latency(c)} | {r.name} | "
                     f"{100 * r.accuracy:.2f} | {_latency(r)} | "
                     f"{100 * (c.accuracy - r.accuracy):+.2f} |")
    return lines + [""]


def _latency(a: Artifact) -> str:
    low, high = a.latency_range
    return f"{a.latency_ms:.3f} ({low:.3f}-{high:.3f})"


def final_lines(final: dict | None) -> list[str]:
    """The markdown of the final choice and its one test score (nothing when absent)."""
    if not final:
        return []
    lines = ["## Final choice, scored once on test", "",
             f"Rule: {final['rule']}.", "",
             "| artifact | dev acc % | test acc % | test examples | latency ms | size MiB |",
             "|---|---:|---:|---:|---:|---:|",
             f"| {final['artifact']} | {100 * final['dev_accuracy']:.2f} | "
             f"{100 * final['test_accuracy']:.2f} | {final['test_examples']} | "
             f"{final['latency_ms']:.2f} | {final['size_mib']:.2f} |", ""]
    return lines


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_pretraining_curves(path: str, curves: dict[str, list[tuple[float, float]]]) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model, points in sorted(curves.items()):
        if points:
            ax.plot([p[0] / 60 for p in points], [p[1] for p in points], "o-", label=model,
                    markersize=3)
    ax.set_xlabel("wall-clock minutes")
    ax.set_ylabel("held-out MLM loss")
    ax.set_title("Pretraining: MLM loss vs wall-clock, per model size")
    ax.grid(True, alpha=0.3)
    if any(curves.values()):
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_tradeoff(path: str, artifacts: Sequence[Artifact], x: str, xlabel: str) -> None:
    """Accuracy against ``x`` ("latency_ms" or "size_mib"); the Pareto front is joined."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    models = sorted({a.model for a in artifacts})
    runtimes = sorted({a.runtime for a in artifacts})
    colors = {m: f"C{i}" for i, m in enumerate(models)}
    markers = dict(zip(runtimes, "osD^vP*X"))
    for a in artifacts:
        ax.plot(getattr(a, x), 100 * a.accuracy, markers.get(a.runtime, "o"),
                color=colors[a.model], alpha=0.8, label=f"{a.model} {a.runtime}")
        ax.annotate(a.label, (getattr(a, x), 100 * a.accuracy), fontsize=6,
                    xytext=(3, 2), textcoords="offset points")
    front = pareto_front(artifacts) if x == "latency_ms" else _size_front(artifacts)
    ax.plot([getattr(a, x) for a in front], [100 * a.accuracy for a in front], "k--",
            linewidth=1, label="Pareto front")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("dev accuracy (%)")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _size_front(artifacts: Sequence[Artifact]) -> list[Artifact]:
    swapped = [dataclasses.replace(a, latency_ms=a.size_mib) for a in artifacts]
    names = {a.name for a in pareto_front(swapped)}
    return sorted((a for a in artifacts if a.name in names), key=lambda a: a.size_mib)


def _number(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if value is None else f"{scale * value:.{digits}f}"


def compression_lines(runs: Sequence[CompressionRun]) -> list[str]:
    """The markdown table of the compression stages (nothing when there are none)."""
    if not runs:
        return []
    lines = ["## Compression (optimizer steps per stage)", "",
             "| candidate | method | steps | budget s | stage s | Keras dev acc % | params | "
             "sparsity |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(runs, key=lambda r: r.name):
        lines.append(f"| {r.name} | {r.method} | {r.steps} | "
                     f"{_number(r.budget_seconds, digits=0)} | "
                     f"{r.seconds:.0f} | {_number(r.accuracy, 100)} | "
                     f"{'-' if r.params is None else f'{r.params:,}'} | "
                     f"{_number(r.sparsity, digits=3)} |")
    return lines + [""]


def markdown(artifacts: Sequence[Artifact], curves: dict[str, list[tuple[float, float]]],
             meta: dict, compressions: Sequence[CompressionRun] = (),
             final: dict | None = None,
             equal_latency: Sequence[tuple[str, str]] = ()) -> str:
    front = {a.name for a in pareto_front(artifacts)}
    lines = ["# Train large, then compress: report", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "## Pretraining (each model's step budget)", "",
              "| model | minutes | first held-out MLM loss | last held-out MLM loss | "
              "held-out points |", "|---|---:|---:|---:|---:|"]
    for model, points in sorted(curves.items()):
        if points:
            lines.append(f"| {model} | {points[-1][0] / 60:.1f} | {points[0][1]:.3f} | "
                         f"{points[-1][1]:.3f} | {len(points)} |")
    lines += ["", "![MLM loss vs wall-clock](pretraining_curves.png)", ""]
    lines += compression_lines(compressions)
    lines += ["## Artifacts (SST-2 dev)", "",
              "| artifact | model | method | runtime | dev acc % | latency ms (spread) | "
              "size MiB | Pareto |",
              "|---|---|---|---|---:|---:|---:|:-:|"]
    for a in sorted(artifacts, key=lambda a: a.latency_ms):
        lines.append(f"| {a.name} | {a.model} | {a.method} | {a.runtime} | "
                     f"{100 * a.accuracy:.2f} | {_latency(a)} | {a.size_mib:.2f} | "
                     f"{'*' if a.name in front else ''} |")
    lines += ["", "![accuracy vs latency](accuracy_vs_latency.png)",
              "![accuracy vs size](accuracy_vs_size.png)", ""]
    lines += equal_latency_lines(artifacts, equal_latency)
    lines += final_lines(final)
    return "\n".join(lines)


def write_report(output_dir: str, artifacts: Sequence[Artifact],
                 curves: dict[str, list[tuple[float, float]]], meta: dict,
                 compressions: Sequence[CompressionRun] = (), final: dict | None = None,
                 equal_latency: Sequence[tuple[str, str]] = ()) -> str:
    os.makedirs(output_dir, exist_ok=True)
    plot_pretraining_curves(os.path.join(output_dir, "pretraining_curves.png"), curves)
    if artifacts:
        plot_tradeoff(os.path.join(output_dir, "accuracy_vs_latency.png"), artifacts,
                      "latency_ms", "latency, batch 1 (ms)")
        plot_tradeoff(os.path.join(output_dir, "accuracy_vs_size.png"), artifacts,
                      "size_mib", "model file size (MiB)")
    text = markdown(artifacts, curves, meta, compressions, final, equal_latency)
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(output_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "pretraining_curves": curves,
                   "artifacts": [dataclasses.asdict(a) for a in artifacts],
                   "compressions": [dataclasses.asdict(r) for r in compressions],
                   "pareto_front": [a.name for a in pareto_front(artifacts)],
                   "final": final}, f, indent=2)
    return text
