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
    peak_fraction: float  # achieved FLOP/s over the machine's peak (fp32, or int8: AMX if any)
    accuracy: float | None = None
    vector_peak_fraction: float | None = None  # int8: over the vector (VNNI / AVX2) peak
    rounds: int = 1   # --rounds: median_ms / p90_ms are the medians of this many workers


@dataclasses.dataclass
class EndToEndMeasurement:
    """SST-2 dev end to end (`albert_tf.benchmark.end_to_end`): raw text in, labels out."""

    model: str
    quantization: str
    batch: int
    buckets: list[int]
    threads: int
    sentences: int
    seconds: float              # median wall time of one pass over all sentences
    sentences_per_s: float
    tokenize_seconds: float     # part of each pass: tokenizing + packing every sentence
    bucket_counts: dict[str, int]
    rows_run: int               # rows through the model, with the padding of partial batches
    truncated: int
    accuracy: float | None      # None: not a model finetuned on SST-2 (e.g. random weights)
    accuracy_note: str
    peak_rss_mib: float
    export: str
    best: bool = False          # the fastest batch size of this model and quantization

    @classmethod
    def from_result(cls, model: str, result: dict) -> "EndToEndMeasurement":
        """From the JSON of `albert_tf.benchmark.end_to_end.run_in_worker`."""
        return cls(model=model, quantization=str(result["quantization"]),
                   batch=int(result["batch_size"]), buckets=list(result["buckets"]),
                   threads=int(result["threads"]), sentences=int(result["sentences"]),
                   seconds=float(result["seconds"]),
                   sentences_per_s=float(result["sentences_per_s"]),
                   tokenize_seconds=float(result["tokenize_seconds"]),
                   bucket_counts=dict(result["bucket_counts"]), rows_run=int(result["rows_run"]),
                   truncated=int(result["truncated"]), accuracy=result["accuracy"],
                   accuracy_note=str(result["accuracy_note"]),
                   peak_rss_mib=float(result["peak_rss_mib"]), export=str(result["model"]))

    def describe(self) -> str:
        accuracy = "n/a" if self.accuracy is None else f"{100 * self.accuracy:.2f}%"
        return (f"{self.model} {self.quantization} batch {self.batch}: {self.sentences} "
                f"sentences in {self.seconds:.2f} s = {self.sentences_per_s:.1f} sentences/s, "
                f"accuracy {accuracy}")


def mark_best(rows: list[EndToEndMeasurement]) -> list[EndToEndMeasurement]:
    """Sets ``best`` on the fastest batch size of each (model, quantization)."""
    best: dict[tuple[str, str], EndToEndMeasurement] = {}
    for r in rows:
        r.best = False
        key = (r.model, r.quantization)
        if key not in best or r.sentences_per_s > best[key].sentences_per_s:
            best[key] = r
    for r in best.values():
        r.best = True
    return rows


def end_to_end_table(rows: Iterable[EndToEndMeasurement]) -> str:
    rows = list(rows)
    threads = sorted({r.threads for r in rows})
    sentences = sorted({r.sentences for r in rows})
    lines = [f"SST-2 dev end to end: raw text in, labels out ({'/'.join(map(str, sentences))} "
             f"sentences, {'/'.join(map(str, threads))} threads; Python SentencePiece "
             "tokenization, smallest length bucket, static batches, TFLite + XNNPACK, argmax; "
             "median pass; fastest batch size in bold; accuracy only for SST-2 finetuned "
             "models)",
             "",
             "| model | quantization | batch | buckets | sentences/s | s per pass | "
             "tokenize s | sentences per bucket | accuracy |",
             "|---|---|---:|---|---:|---:|---:|---|---:|"]
    for r in rows:
        speed = f"**{r.sentences_per_s:.1f}**" if r.best else f"{r.sentences_per_s:.1f}"
        accuracy = "n/a" if r.accuracy is None else f"{100 * r.accuracy:.2f}%"
        counts = ", ".join(f"{k}: {v}" for k, v in r.bucket_counts.items())
        lines.append(f"| {r.model} | {r.quantization} | {r.batch} | "
                     f"{','.join(map(str, r.buckets))} | {speed} | {r.seconds:.2f} | "
                     f"{r.tokenize_seconds:.2f} | {counts} | {accuracy} |")
    return "\n".join(lines)


def markdown_table(rows: Iterable[Measurement]) -> str:
    lines = ["| model | runtime | batch x seq | median ms | p90 ms | seq/s | GFLOP/seq | "
             "% of peak | % of vector int8 peak | file MiB | peak RSS MiB |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        vector = ("" if r.vector_peak_fraction is None
                  else f"{100 * r.vector_peak_fraction:.0f}%")
        lines.append(f"| {r.model} | {r.runtime} | {r.batch} x {r.seq} | {r.median_ms:.1f} | "
                     f"{r.p90_ms:.1f} | {r.sequences_per_s:.1f} | {r.gflops_per_sequence:.2f} | "
                     f"{100 * r.peak_fraction:.0f}% | {vector} | {r.file_mib:.1f} | "
                     f"{r.peak_rss_mib:.0f} |")
    return "\n".join(lines)


def peer_table(rows: list[Measurement]) -> str:
    """Per model and shape: our fastest artifact against the fastest peer of the same
    arithmetic (fp32, bf16, int8), and our fastest of any kind against the fastest int8
    peer; speedup = peer ms / our ms (> 1: ours is faster), all from this one run."""
    from albert_tf.benchmark import targets
    # runtime -> (whose artifact, arithmetic), from the deployment targets
    kinds = {t.name: (t.owner, t.arithmetic) for t in targets.every_target()}

    def fastest(candidates):
        return min(candidates, key=lambda r: r.median_ms, default=None)

    lines = ["Ours vs the fastest peer, same run (speedup = peer ms / ours ms)", "",
             "| model | batch x seq | arithmetic | ours (fastest) | ms | peer (fastest) | ms | "
             "speedup |", "|---|---|---|---|---:|---|---:|---:|"]
    for model, batch, seq in sorted({(r.model, r.batch, r.seq) for r in rows}):
        here = [r for r in rows if (r.model, r.batch, r.seq) == (model, batch, seq)
                and r.runtime in kinds]
        for kind in (*targets.ARITHMETICS, "any vs int8 peers"):
            ours = fastest(r for r in here if kinds[r.runtime][0] == targets.OURS and
                           (kind.startswith("any") or kinds[r.runtime][1] == kind))
            peer_kind = "int8" if kind.startswith("any") else kind
            peer = fastest(r for r in here if kinds[r.runtime] == (targets.PEER, peer_kind))
            if ours and peer:
                lines.append(f"| {model} | {batch} x {seq} | {kind} | {ours.runtime} | "
                             f"{ours.median_ms:.1f} | {peer.runtime} | {peer.median_ms:.1f} | "
                             f"{peer.median_ms / ours.median_ms:.2f}x |")
    return "\n".join(lines) if len(lines) > 4 else ""


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


def write_json(path: str, rows: list[Measurement], meta: dict,
               end_to_end: list[EndToEndMeasurement] | None = None) -> None:
    content = {"meta": meta, "measurements": [dataclasses.asdict(r) for r in rows]}
    if end_to_end:
        content["sst2_end_to_end"] = [dataclasses.asdict(r) for r in end_to_end]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(content, f, indent=2)


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
                 pairs=(("albert_base", "bert_base"), ("albert_large", "bert_large")),
                 end_to_end: list[EndToEndMeasurement] | None = None,
                 profiles: list[tuple[str, object]] | None = None) -> str:
    """Writes report.md, results.json, latency_vs_flops.png (+ speed_vs_accuracy.png);
    with ``end_to_end`` rows, an SST-2 end-to-end table and ``sst2_end_to_end`` in the JSON;
    with ``profiles`` ((title, `albert_tf.benchmark.profile.KernelProfile`) pairs), a
    "where the time goes" section."""
    os.makedirs(output_dir, exist_ok=True)
    end_to_end = mark_best(list(end_to_end or []))
    write_json(os.path.join(output_dir, "results.json"), rows, meta, end_to_end)
    sections = ["# CPU inference benchmark", "",
                "\n".join(f"- {k}: {v}" for k, v in meta.items()), ""]
    if rows:
        plot_latency_vs_flops(os.path.join(output_dir, "latency_vs_flops.png"), rows)
        plot_speed_vs_accuracy(os.path.join(output_dir, "speed_vs_accuracy.png"), rows)
        sections += [markdown_table(rows), ""]
        comparison = peer_table(rows)
        if comparison:
            sections += [comparison, ""]
    for runtime in sorted({r.runtime for r in rows}):
        table = albert_vs_bert_table(rows, runtime, pairs)
        if table.count("\n") > 3:
            sections += [table, ""]
    if end_to_end:
        sections += [end_to_end_table(end_to_end), ""]
    if profiles:
        sections += ["## Where the time goes (perf, by kernel; albert_tf/benchmark/profile.py)",
                     ""]
        for title, kernel_profile in profiles:
            sections += [kernel_profile.table(title), ""]
    if rows:
        sections.append("![latency vs FLOPs](latency_vs_flops.png)")
    text = "\n".join(sections) + "\n"
    with open(os.path.join(output_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return text
