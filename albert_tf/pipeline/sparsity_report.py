"""SST-2 dev accuracy vs sparsity, ALBERT (one shared block) vs BERT (4 blocks), issue #28:
the report of a run of ``albert-tf-run --experiment=run_sparsity_albert_vs_bert``.

    python -m albert_tf.pipeline.sparsity_report --output_dir=RUN [--plot=x.png] [--json=x.json]

Reads the run's recorded stages (``<output_dir>/stages/*.json`` and
``compress/<model>+prune<s>/sparsity.md``) into one `Row` per model and sparsity: the dense
finetuned model (0%) and each TF-MOT magnitude-pruned one, with the Keras dev accuracy (best
finetuning checkpoint, or after the pruning stage), the dev accuracy of the exported float
TFLite file, the achieved sparsity of the pruned weights and the zeros' share of all
parameters (`collect`). The pruning stage trains 200 more steps than the dense model had, so
a control row per model, "0% + same steps" (``<output_dir>/control/<model>+prune0``, made by
`run_controls`: albert-tf-compress at final sparsity 0, Keras dev accuracy only), is what a
pruned model's drop is read against. `table` is the markdown table, `plot` the figure (TFLite
dev accuracy vs target sparsity, one line per model; the controls as crosses).

``make figures NAME=sparsity-albert-vs-bert`` (``studies/sparsity_albert_vs_bert/run.py``)
runs or resumes the experiment and the controls, then this report. No TensorFlow here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys

EXPERIMENT = "run_sparsity_albert_vs_bert"
QUANTIZATION = "none"          # the experiment exports float files only
PRUNE = re.compile(r"^prune(?P<sparsity>[0-9.eE+-]+)$")
TOTAL_ROW = re.compile(r"^\|\s*\*\*all pruned weights\*\*\s*\|\s*(\d+)\s*\|")


@dataclasses.dataclass
class Row:
    """One model at one target sparsity (or its 0% control) of the run."""
    model: str
    target: float                    # 0.0 for the dense finetuned model
    keras_accuracy: float | None     # [0, 1]
    tflite_accuracy: float | None    # [0, 1], the exported float file on all of dev
    examples: int | None             # dev sentences the file was scored on
    achieved: float | None = None    # sparsity of the pruned weights (pruned models)
    pruned_weights: int | None = None   # elements of the pruned kernels
    params: int | None = None        # all parameters of the model
    steps: int | None = None         # optimizer steps of the pruning stage
    seconds: float | None = None     # the pruning stage's wall-clock, start-up included
    control: bool = False            # the 0% pruning stage: dense + the same extra steps

    @property
    def zero_share(self) -> float | None:
        """Zeros as a share of all parameters (embeddings, pooler and head stay dense)."""
        if None in (self.achieved, self.pruned_weights, self.params) or not self.params:
            return None
        return self.achieved * self.pruned_weights / self.params

    @property
    def kept(self) -> int | None:
        """Nonzero weights left in the pruned kernels (ALBERT's are used at every depth)."""
        if None in (self.achieved, self.pruned_weights):
            return None
        return int(round((1 - self.achieved) * self.pruned_weights))


def _read(path: str):
    """The JSON at ``path``, or None when it does not exist (a stage not run yet)."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def pruned_elements(sparsity_md: str) -> int | None:
    """The element count of all pruned kernels, from albert-tf-compress's ``sparsity.md``."""
    if not os.path.exists(sparsity_md):
        return None
    with open(sparsity_md, encoding="utf-8") as f:
        for line in f:
            match = TOTAL_ROW.match(line.strip())
            if match:
                return int(match.group(1))
    return None


def collect(run_dir: str) -> list[Row]:
    """One row per finished model / sparsity of the run in ``run_dir``, models in order
    of name, dense first, then by sparsity."""
    stages = os.path.join(run_dir, "stages")
    if not os.path.isdir(stages):
        raise FileNotFoundError(f"{stages} not found: no run of {EXPERIMENT} there")
    rows = []
    for name in sorted(os.listdir(stages)):
        if not name.endswith(".json"):
            continue
        stage = name[:-5]
        if stage.startswith("finetune_"):
            model = stage[len("finetune_"):]
            result = _read(os.path.join(stages, name))
            score = _read(os.path.join(stages, f"score_{model}__{QUANTIZATION}.json"))
            rows.append(Row(model, 0.0, float(result["best"]["value"]),
                            score and float(score["accuracy"]),
                            score and int(score["examples"])))
        elif stage.startswith("compress_"):
            candidate = stage[len("compress_"):]
            model, _, method = candidate.partition("+")
            match = PRUNE.match(method)
            if not match:
                continue
            result = _read(os.path.join(stages, name))
            score = _read(os.path.join(stages, f"score_{candidate}__{QUANTIZATION}.json"))
            accuracy = (result.get("dev") or {}).get("accuracy")
            rows.append(Row(
                model, float(match.group("sparsity")),
                None if accuracy is None else float(accuracy),
                score and float(score["accuracy"]), score and int(score["examples"]),
                achieved=result.get("sparsity"),
                pruned_weights=pruned_elements(
                    os.path.join(run_dir, "compress", candidate, "sparsity.md")),
                params=result.get("params"), steps=result.get("steps"),
                seconds=result.get("seconds")))
    control_dir = os.path.join(run_dir, "control")
    for candidate in sorted(os.listdir(control_dir)) if os.path.isdir(control_dir) else []:
        report = _read(os.path.join(control_dir, candidate, "report.json"))
        if not report:
            continue
        rows.append(Row(
            candidate.partition("+")[0], 0.0, float(report["dev"]["pruning"]["accuracy"]),
            None, int(report["dev"]["pruning"]["examples"]),
            achieved=(report.get("sparsity") or {}).get("total"),
            pruned_weights=pruned_elements(os.path.join(control_dir, candidate, "sparsity.md")),
            params=report.get("params"), control=True))
    return sorted(rows, key=lambda r: (r.model, r.target, r.control))


def _pct(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}"


def _diff(value: float | None, base: float | None) -> str:
    return "-" if value is None or base is None else f"{100 * (value - base):+.2f}"


def table(rows: list[Row]) -> str:
    """The markdown table: accuracy, the change from the same model's dense file (TFLite)
    and from its 0% control (Keras: dense + the pruning stage's steps)."""
    dense = {r.model: r.tflite_accuracy for r in rows if r.target == 0.0 and not r.control}
    control = {r.model: r.keras_accuracy for r in rows if r.control}
    lines = ["| model | sparsity (target) | achieved, pruned weights % | nonzero pruned-kernel "
             "weights | zeros / all params % | dev acc. Keras % | dev acc. TFLite % | "
             "vs dense, points | vs 0% + same steps, points |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        label = ("0% + same steps (control)" if r.control else
                 "dense" if r.target == 0.0 else _pct(r.target, 0) + "%")
        pruned = r.target > 0.0
        lines.append(
            f"| {r.model} | {label} | {_pct(r.achieved)} | "
            f"{'-' if r.kept is None else f'{r.kept:,}'} | {_pct(r.zero_share, 1)} | "
            f"{_pct(r.keras_accuracy)} | {_pct(r.tflite_accuracy)} | "
            f"{_diff(r.tflite_accuracy, dense.get(r.model)) if pruned else '-'} | "
            f"{_diff(r.keras_accuracy, control.get(r.model)) if pruned else '-'} |")
    return "\n".join(lines)


def plot(rows: list[Row], path: str) -> None:
    """TFLite dev accuracy vs target sparsity (dense at 0%), one line per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model in sorted({r.model for r in rows}):
        points = [(100 * r.target, 100 * r.tflite_accuracy) for r in rows
                  if r.model == model and r.tflite_accuracy is not None and not r.control]
        if points:
            line, = ax.plot(*zip(*points), "o-", label=model)
            controls = [100 * r.keras_accuracy for r in rows if r.model == model and r.control]
            if controls:
                ax.plot([0] * len(controls), controls, "x", color=line.get_color(),
                        markersize=9, label=f"{model}, 0% + the pruning steps (Keras)")
    examples = {r.examples for r in rows if r.examples}
    ax.set_xlabel("sparsity of the pruned weights, target % (0 = dense)")
    ax.set_ylabel("SST-2 dev accuracy %, float TFLite file")
    ax.set_title("Magnitude pruning: one shared block (ALBERT) vs 4 blocks (BERT)")
    if examples:
        ax.text(0.01, 0.02, f"{'/'.join(map(str, sorted(examples)))} dev sentences, one seed",
                transform=ax.transAxes, fontsize=8, color="0.4")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_controls(run_dir: str, cwd: str | None = None) -> None:
    """The 0% control of every pruned model: its first pruning stage's config at final
    sparsity 0, into ``<run_dir>/control/<model>+prune0`` (skipped when done), each an
    ``albert-tf-compress`` command run in ``cwd``."""
    compress = os.path.join(run_dir, "compress")
    models = sorted({name.partition("+")[0] for name in os.listdir(compress)
                     if PRUNE.match(name.partition("+")[2])}) if os.path.isdir(compress) else []
    for model in models:
        out = os.path.join(run_dir, "control", f"{model}+prune0")
        if os.path.exists(os.path.join(out, "report.json")):
            continue
        source = sorted(n for n in os.listdir(compress) if n.startswith(f"{model}+prune"))[0]
        command = [os.path.join(os.path.dirname(sys.executable), "albert-tf-compress"),
                   f"--config_file={os.path.join(compress, source, 'compression.yaml')}",
                   "--params_override=pruning.final_sparsity=0.0", f"--model_dir={out}"]
        print(" ".join(command), flush=True)
        subprocess.run(command, cwd=cwd, check=True)


def build_parser(plot: str = "", description: str = __doc__.split("\n")[0]
                 ) -> argparse.ArgumentParser:
    """The report's flags; ``plot``: the default ``--plot`` ("" draws none)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--output_dir", default="/tmp/sparsity_albert_vs_bert",
                   help="the run directory (created, or resumed, by albert-tf-run)")
    p.add_argument("--plot", default=plot, help="the figure's PNG (empty: none)")
    p.add_argument("--json", default="", help="also write the rows here")
    return p


def report(run_dir: str, plot_path: str = "", json_path: str = "") -> list[Row]:
    """Prints the CPU and the table of the run in ``run_dir``, draws ``plot_path`` and writes
    the rows (with ``zero_share`` and ``kept``) to ``json_path`` when given; the rows."""
    from albert_tf.benchmark.cpu import cpu_info
    rows = collect(run_dir)
    print(f"CPU: {cpu_info(measure_clock=False).summary()}")
    print(table(rows))
    if plot_path:
        plot(rows, plot_path)
        print(f"wrote {plot_path}")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump([dataclasses.asdict(r) | {"zero_share": r.zero_share, "kept": r.kept}
                       for r in rows], f, indent=2)
    return rows


def main(argv=None) -> int:
    """The report of an existing run (`build_parser`'s flags)."""
    args = build_parser().parse_args(argv)
    report(args.output_dir, args.plot, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
