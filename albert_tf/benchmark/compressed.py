"""``albert-tf-benchmark --compressed``: does sparsity or 4-bit beat dense int8 on this CPU?
(issue #28)

For each model (a random official-shape encoder, `albert_tf.benchmark.artifacts.
random_model_dir`, or a model directory) and shape:

* **the dense int8 baseline**: our int8 default targets (`albert_tf.benchmark.targets`:
  ours, ``int8``, ``default``, dense: TFLite dynamic range and int8, our OpenVINO NNCF int8 IR,
  our ONNX Runtime int8) on the dense model, timed before and after the pruned copies (the
  median of the two: the load of a shared machine drifts in between); the fastest of them is
  the baseline every compressed artifact is measured against;
* **4-bit**: the ``q4`` targets (ONNX Runtime ``MatMulNBits``) on the dense model;
* **sparse**: copies of the model pruned by magnitude (`prune_model`: per tensor, every rank-2
  kernel outside the embeddings, ALBERT's shared block once) to each pattern x sparsity, each
  timed on every target whose ``sparse_patterns`` has that pattern: TFLite's sparse float
  (``1x4``) and int8 (``1x16``) FULLY_CONNECTED kernels on LiteRT's builtin kernels, and
  OpenVINO's int8 IR compiled with ``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE``
  (``unstructured``);
* **structured**: copies made physically smaller (``--structured``: heads, FFN neurons or
  layers removed by magnitude, `albert_tf.benchmark.compressed_structured`), ordinary dense
  models timed on every dense int8 target of the baseline.

Everything is built by `albert_tf.benchmark.artifacts.ArtifactBuilder` and timed in worker
processes by `albert_tf.benchmark.suite.benchmark_model`, as the suite times every target
(median over ``--min_seconds``; a missing package skips a target with one line, a crash costs
its rows). Prints one line per model and shape (`summary_line`) and a table of every
(runtime, pattern, sparsity) (`markdown_table`), and writes both to ``compressed.md`` and the
rows to ``compressed.json`` in the output directory.

**Patterns.** TFLite stores a FULLY_CONNECTED weight as ``[out, in]``; a ``1xN`` block is one
output row x N consecutive inputs. A Keras ``Dense`` kernel is ``[in, out]`` (the transpose),
so the same block is N consecutive rows of one column of the kernel: shape ``(N, 1)``
(`keras_block`). ``unstructured`` is ``1x1``. Rows that do not fill a last block make a
shorter block of their own.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from typing import Callable, Sequence

import numpy as np

from albert_tf.benchmark import targets

# pattern -> block length N along the inputs (TFLite "1xN" on the [out, in] weight): the
# export layer's (albert-tf-export --sparse_weights takes the same names)
from albert_tf.export.sparsity import PATTERNS
DEFAULT_SPARSITIES = (0.5, 0.7, 0.8, 0.9, 0.95)
QUICK_SPARSITY = 0.9            # --compressed --quick: one sparsity, one model
DEFAULT_MODELS = ("albert_base", "bert_base")
DEFAULT_SHAPES = ("1x128",)
SUMMARY = "compressed speedup over dense int8:"   # starts each summary line


class CompressedInputError(ValueError):
    """A bad ``--sparsities`` / ``--patterns`` / ``--structured`` / ``--runtimes`` for
    ``--compressed``: one line."""


# ------------------------------------------------------------------ inputs and plan
def parse_sparsities(values: Sequence[str]) -> list[float]:
    """``["0.5", "0.9"]`` -> ``[0.5, 0.9]``; each must be a fraction in (0, 1)."""
    out = []
    for value in values:
        try:
            sparsity = float(value)
        except (TypeError, ValueError):
            sparsity = None
        if sparsity is None or not 0 < sparsity < 1:
            raise CompressedInputError(f"--sparsities: {value!r} is not a fraction in (0, 1) "
                                       "(the share of weights pruned to zero, e.g. 0.9).")
        out.append(sparsity)
    if not out:
        raise CompressedInputError("--sparsities: give at least one, e.g. 0.8,0.9.")
    return out


def check_patterns(patterns: Sequence[str]) -> list[str]:
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown or not patterns:
        raise CompressedInputError(f"--patterns: unknown pattern {unknown[0]!r}; use "
                                   f"{', '.join(PATTERNS)}." if unknown else
                                   f"--patterns: give at least one of {', '.join(PATTERNS)}.")
    return list(patterns)


@dataclasses.dataclass(frozen=True)
class Plan:
    """The targets ``--compressed`` times: ``baselines`` (ours, dense int8, default) and
    ``q4`` on the dense model, ``sparse`` on the pruned copies, and the baselines again on
    each ``structured`` recipe's smaller copy (`compressed_structured.Recipe`)."""

    baselines: list[str]
    q4: list[str]
    sparse: list[str]
    structured: list = dataclasses.field(default_factory=list)

    @property
    def structured_runs(self) -> list[tuple[str, str]]:
        """``(recipe name, runtime)``: every recipe on every dense int8 target."""
        return [(r.name, runtime) for r in self.structured for runtime in self.baselines]

    @property
    def runtimes(self) -> list[str]:
        return self.baselines + self.q4 + self.sparse

    def sparse_for(self, pattern: str) -> list[str]:
        return [r for r in self.sparse if pattern in targets.get(r).sparse_patterns]


def baseline_names() -> list[str]:
    """Our dense int8 default targets: the baseline candidates."""
    return [t.name for t in targets.every_target()
            if t.owner == targets.OURS and t.arithmetic == "int8" and t.default
            and not t.sparse_patterns]


def plan(runtimes: Sequence[str] | None, patterns: Sequence[str],
         structured: Sequence = ()) -> Plan:
    """What to time for ``--runtimes`` (None: every target that fits), ``--patterns`` and
    ``--structured`` (recipes).

    Baselines: those of `baseline_names` in ``runtimes``, or all of them when it names none
    (there is always a baseline). A `CompressedInputError` when no target of ``runtimes``
    runs any of ``patterns`` and there is no structured recipe either."""
    chosen = list(runtimes) if runtimes else None

    def pick(names):
        return [n for n in names if chosen is None or n in chosen]

    sparse = [n for n in pick(targets.sparse_names())
              if set(targets.get(n).sparse_patterns) & set(patterns)]
    if not sparse and not structured:
        can = "; ".join(f"{t.name} ({', '.join(t.sparse_patterns)})"
                        for t in targets.every_target() if t.sparse_patterns)
        raise CompressedInputError(
            f"--compressed: none of --runtimes={','.join(chosen or [])} runs a pruning pattern "
            f"of --patterns={','.join(patterns)}; the targets that do: {can}; and "
            "--structured=none.")
    q4 = pick([t.name for t in targets.every_target() if t.arithmetic == "q4"])
    return Plan(pick(baseline_names()) or baseline_names(), q4, sparse, list(structured))


# ------------------------------------------------------------------ pruning
def keras_block(pattern: str) -> tuple[int, int]:
    """The block of a Keras ``[in, out]`` kernel that is TFLite's ``1xN`` of ``[out, in]``."""
    return PATTERNS[pattern], 1


def prune_kernel(kernel: np.ndarray, sparsity: float, pattern: str) -> np.ndarray:
    """``kernel`` (Keras ``[in, out]``) with the ``round(sparsity * blocks)`` blocks of
    ``pattern`` of least L1 magnitude set to zero (exactly that many: ties broken by
    position); the other blocks are kept whole."""
    length, _ = keras_block(pattern)
    rows, cols = kernel.shape
    padded = -(-rows // length) * length
    magnitude = np.zeros((padded, cols), np.float64)
    magnitude[:rows] = np.abs(kernel)
    scores = magnitude.reshape(padded // length, length, cols).sum(axis=1)
    keep = np.ones(scores.size, bool)
    drop = int(round(sparsity * scores.size))
    keep[np.argsort(scores, axis=None, kind="stable")[:drop]] = False
    mask = np.repeat(keep.reshape(scores.shape), length, axis=0)[:rows]
    return np.where(mask, kernel, 0).astype(kernel.dtype)


def _prunable(name: str, variable) -> bool:
    """A rank-2 kernel outside the embeddings (the word, position and type tables)."""
    return len(variable.shape) == 2 and not (name.startswith("embeddings/")
                                             or "/embeddings/" in name)


def prune_model(model, sparsity: float, pattern: str) -> dict[str, float]:
    """Prunes ``model`` in place (`prune_kernel`, per tensor) and returns ``{weight name:
    its zero fraction}``. Every weight once: ALBERT's shared block is one set of variables,
    used at every depth."""
    from albert_tf.checkpoints import named_weights
    pruned = {}
    for name, variable in named_weights(model).items():
        if _prunable(name, variable):
            value = prune_kernel(variable.numpy(), sparsity, pattern)
            variable.assign(value)
            pruned[name] = float(np.mean(value == 0))
    return pruned


def pruned_model_dir(model_dir: str, out: str, sparsity: float, pattern: str) -> str:
    """A copy of ``model_dir`` pruned to ``pattern`` x ``sparsity`` at ``out`` (kept: made
    once). A finetuned directory (``task.json``) keeps its head, pruned too."""
    if os.path.exists(os.path.join(out, "config.json")):
        return out
    from albert_tf import checkpoints
    task_info = None
    if os.path.isfile(os.path.join(model_dir, checkpoints.TASK_FILE)):
        model, task_info = checkpoints.load_task_model(model_dir)
    else:
        model = checkpoints.load_encoder(model_dir)
    prune_model(model, sparsity, pattern)
    checkpoints.save_model_dir(model, out, task_info=task_info,
                               vocab_file=checkpoints.vocab_path(model_dir))
    return out


# ------------------------------------------------------------------ running
@dataclasses.dataclass
class Row:
    """One timed compressed (or baseline) artifact of one model and shape."""

    model: str
    batch: int
    seq: int
    runtime: str
    kind: str               # "dense int8" (a baseline candidate), "4-bit", or a pattern
    sparsity: float         # 0 for dense
    median_ms: float
    file_mib: float
    baseline: bool = False  # the fastest dense int8: what the others are measured against
    rounds_ms: list[float] = dataclasses.field(default_factory=list)   # dense: before, after

    @property
    def recipe(self) -> str:
        if self.sparsity:
            return f"{self.kind} {percent(self.sparsity)} sparse"
        return self.kind


def percent(sparsity: float) -> str:
    return f"{100 * sparsity:g}%"


def benchmark_compressed(name: str, model_dir: str, the_plan: Plan, sparsities: Sequence[float],
                         patterns: Sequence[str], shapes: list[tuple[int, int]], work_dir: str,
                         data_dir: str | None, threads: int, min_seconds: float, cpu,
                         echo: Callable[[str], None] = print,
                         skipped: dict[str, str] | None = None,
                         failed: dict[str, str] | None = None, rounds: int = 1) -> list[Row]:
    """Times one model's baselines and 4-bit targets, then every pruned copy on the targets
    that run its pattern and every structured copy on the baselines' targets; returns the
    rows with the baseline marked per shape."""
    from albert_tf.benchmark.suite import benchmark_model
    skipped = {} if skipped is None else skipped
    failed = {} if failed is None else failed
    common = dict(threads=threads, min_seconds=min_seconds, cpu=cpu, echo=echo,
                  skipped=skipped, failed=failed, rounds=rounds)
    rows = []
    for m in benchmark_model(name, model_dir, the_plan.baselines + the_plan.q4, shapes,
                             work_dir, data_dir, **common):
        kind = "4-bit" if targets.get(m.runtime).arithmetic == "q4" else "dense int8"
        rows.append(Row(name, m.batch, m.seq, m.runtime, kind, 0.0, m.median_ms, m.file_mib,
                        rounds_ms=[m.median_ms]))
    for pattern in patterns:
        runtimes = the_plan.sparse_for(pattern)
        if not runtimes:
            continue
        for sparsity in sparsities:
            where = os.path.join(work_dir, name, "pruned", f"{pattern}_{percent(sparsity)[:-1]}")
            echo(f"  {name} pruned to {pattern}, {percent(sparsity)} sparse: {where}")
            pruned = pruned_model_dir(model_dir, os.path.join(where, "model"), sparsity, pattern)
            for m in benchmark_model(name, pruned, runtimes, shapes, where, data_dir, **common):
                rows.append(Row(name, m.batch, m.seq, m.runtime, pattern, sparsity,
                                m.median_ms, m.file_mib))
    for recipe in the_plan.structured:   # a compressed_structured.Recipe: a smaller copy
        rows += recipe.benchmark(name, model_dir, the_plan.baselines, shapes, work_dir,
                                 data_dir, **common)
    # The baselines again, after the pruned copies (built already: timing only): on a shared
    # machine the load drifts over the minutes between, so a baseline is the median of its
    # timing before and after.
    echo(f"  {name}: the dense int8 baselines again")
    for m in benchmark_model(name, model_dir, the_plan.baselines, shapes, work_dir, data_dir,
                             **common):
        row = next((r for r in rows if (r.runtime, r.batch, r.seq, r.kind)
                    == (m.runtime, m.batch, m.seq, "dense int8")), None)
        if row is not None:
            row.rounds_ms.append(m.median_ms)
            row.median_ms = statistics.median(row.rounds_ms)
    return mark_baselines(rows)


def mark_baselines(rows: list[Row]) -> list[Row]:
    """Marks, per model and shape, the fastest dense int8 row as the baseline."""
    for key in {(r.model, r.batch, r.seq) for r in rows}:
        dense = [r for r in rows if (r.model, r.batch, r.seq) == key and r.kind == "dense int8"]
        if dense:
            min(dense, key=lambda r: r.median_ms).baseline = True
    return rows


def _groups(rows: list[Row]):
    seen = []
    for r in rows:
        if (r.model, r.batch, r.seq) not in seen:
            seen.append((r.model, r.batch, r.seq))
    for key in seen:
        yield key, [r for r in rows if (r.model, r.batch, r.seq) == key]


def summary_line(rows: list[Row], model: str, batch: int, seq: int) -> str:
    """``compressed speedup over dense int8: albert_base 1 x 128 0.42x (ort_q4, 4-bit)``:
    the baseline's time over the fastest compressed artifact's (below 1.00x: none won; the
    baseline is named in the table)."""
    group = [r for r in rows if (r.model, r.batch, r.seq) == (model, batch, seq)]
    base = next((r for r in group if r.baseline), None)
    compressed = [r for r in group if r.kind != "dense int8"]
    head = f"{SUMMARY} {model} {batch} x {seq}"
    if base is None or not compressed:
        return f"{head} n/a (no {'baseline' if base is None else 'compressed artifact'} ran)"
    best = min(compressed, key=lambda r: r.median_ms)
    return f"{head} {base.median_ms / best.median_ms:.2f}x ({best.runtime}, {best.recipe})"


def markdown_table(rows: list[Row]) -> str:
    """Every (runtime, pattern, sparsity): ms, MiB and the speed-up over the baseline; a
    dense int8 row's ms is the median of its timings before and after the pruned copies
    (both in parentheses)."""
    lines = ["| model | shape | runtime | pattern | sparsity | median ms | file MiB | "
             "vs dense int8 |", "|---|---|---|---|---|---|---|---|"]
    for (model, batch, seq), group in _groups(rows):
        base = next((r for r in group if r.baseline), None)
        for r in group:
            speedup = f"{base.median_ms / r.median_ms:.2f}x" if base else "n/a"
            kind = f"{r.kind} (baseline)" if r.baseline else r.kind
            ms = f"{r.median_ms:.2f}" + (" (" + " / ".join(f"{v:.2f}" for v in r.rounds_ms)
                                         + ")" if len(r.rounds_ms) > 1 else "")
            lines.append(f"| {model} | {batch} x {seq} | {r.runtime} | {kind} | "
                         f"{percent(r.sparsity) if r.sparsity else '-'} | {ms} | "
                         f"{r.file_mib:.1f} | {speedup} |")
    return "\n".join(lines)


def write_report(output_dir: str, rows: list[Row], meta: dict) -> str:
    """``compressed.md`` (the summary lines and the table) and ``compressed.json``; returns
    the text printed at the end."""
    summaries = [summary_line(rows, *key) for key, _ in _groups(rows)]
    text = "\n".join(summaries + ["", markdown_table(rows)])
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "compressed.md"), "w", encoding="utf-8") as f:
        f.write("# Compressed models vs dense int8\n\n"
                + "".join(f"- {k}: {v}\n" for k, v in meta.items()) + "\n" + text + "\n")
    with open(os.path.join(output_dir, "compressed.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": [dict(dataclasses.asdict(r), recipe=r.recipe)
                                          for r in rows]}, f, indent=1)
    return text
