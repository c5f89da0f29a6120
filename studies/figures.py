"""Every measured figure of docs/ by name: the one command that regenerates a table.

    make figures NAME=<name> [ARGS="--flag=value ..."]     # with the project venv
    python studies/figures.py <name> [--flag=value ...]
    python studies/figures.py --list [--json]           # NAME, cost, the docs table it feeds

A figure is a function registered with ``@figure(NAME, doc, heading, minutes)``: the docs file
and the heading of the section whose table it produces, and a rough cost in minutes on this
project's 2-core machines. ``script(...)`` registers one script of studies/: the figure
runs it in a fresh process, ``python studies/<path>.py ARGS`` from the repository root,
so this file imports no script and no TensorFlow; arguments after NAME go to that script's
parser (``make figures NAME=<name> ARGS=--help`` shows them). Multi-step figures
(``compression``, ``export-must-show``) run each step as its own figure in a fresh process,
niced where the step trains and not where it times.

``tests/test_figures.py`` checks that every figure names an existing docs file and heading,
and that every table in docs/ names the command that regenerates it (or its source).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from typing import Callable, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIST_COMMAND = "python studies/figures.py --list"


@dataclasses.dataclass(frozen=True)
class Figure:
    name: str
    doc: str            # the docs file, relative to the repository root
    heading: str        # the heading (text after the #s) of the section holding its table
    minutes: float      # rough cost on 2 cores
    run: Callable[[list[str]], object]
    summary: str
    command: str = ""   # what it runs (a script's path), for --list --json


FIGURES: dict[str, Figure] = {}


def figure(name: str, doc: str, heading: str, minutes: float, command: str = ""):
    """Registers the decorated ``fn(argv)`` as figure ``name``."""
    def register(fn):
        if name in FIGURES:
            raise ValueError(f"figure {name!r} registered twice")
        summary = (fn.__doc__ or "").strip().split("\n")[0]
        FIGURES[name] = Figure(name, doc, heading, minutes, fn, summary,
                               command or f"python studies/figures.py {name}")
        return fn
    return register


def run_script(relative_path: str, argv: Sequence[str], nice: bool = False,
               log: str | None = None) -> int:
    """Runs ``studies/<relative_path>`` with ``argv`` (`run_command`); returns its exit
    status."""
    path = os.path.join(HERE, relative_path)
    if not has_main_block(path):
        raise SystemExit(f"figures: error: studies/{relative_path} has no "
                         "`if __name__ == \"__main__\":` block to run")
    return run_command([sys.executable, path, *argv], nice, log)


def run_command(cmd: Sequence[str], nice: bool = False, log: str | None = None) -> int:
    """Runs ``cmd`` in a fresh process from the repository root (``nice -n 10`` for
    training steps; timings are not niced), its output to ``log`` when given; returns its
    exit status."""
    cmd = (["nice", "-n", "10"] if nice else []) + list(cmd)
    if log is None:
        return subprocess.run(cmd, cwd=ROOT, check=False).returncode
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as out:
        return subprocess.run(cmd, cwd=ROOT, check=False, stdout=out,
                              stderr=subprocess.STDOUT).returncode


def has_main_block(path: str) -> bool:
    """Whether the script at ``path`` runs anything when started (read, not imported)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for node in tree.body)


def steps(*names_and_args, log_dir: str | None = None) -> None:
    """Runs figures one after another, each in a fresh process: ``(name, args, nice)``; with
    ``log_dir``, each one's output goes to ``<log_dir>/<name><args>.log``."""
    for name, args, nice in names_and_args:
        tag = "".join(a.replace("--", "-").replace("=", "-") for a in args)
        log = os.path.join(log_dir, f"{name}{tag}.log") if log_dir else None
        print(f"figures: {name} {' '.join(args)}" + (f" > {log}" if log else ""), flush=True)
        status = run_script("figures.py", [name, *args], nice=nice, log=log)
        if status:
            raise SystemExit(f"figures: error: step {name} failed (exit {status})"
                             + (f"; its output is in {log}" if log else ""))


def load_doc(relative_path: str) -> str:
    """The first line of a module's docstring, read without importing the module."""
    with open(os.path.join(HERE, relative_path), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return doc.strip().split("\n")[0]


def script(name: str, doc: str, heading: str, minutes: float, path: str) -> None:
    """Registers figure ``name``: the script ``studies/<path>`` run with the arguments."""
    def run(argv):
        return run_script(path, argv)
    run.__doc__ = load_doc(path)
    figure(name, doc, heading, minutes, command=f"python studies/{path}")(run)


COMPRESSION_DOC = ("docs/results/compression-sst2.md",
                   "Compression methods on SST-2, measured (`studies/compression/`)")
EXPORT_DOC = ("docs/results/export-fidelity.md",
              "Measured (albert_mini on SST-2, `studies/export/`)")
EXPORT_INT8 = ("studies/export/README.md", "Full int8 vs float: why it was slower, and the fix")
MOBILE_SDKS = ("docs/results/export-fidelity.md", "Mobile SDKs (measured)")
TRAINING = ("docs/results/training-runs-machine-c.md",
            "Pretraining and finetuning runs, measured on machine C (November 2026)")
SCALE_THROUGHPUT = ("docs/results/scale-input-throughput-machine-d.md",
                    "Input throughput vs the training step (measured)")
SCALE_CURVES = ("docs/results/scale-static-vs-dynamic-machine-d.md",
                "Static records vs dynamic masking: MLM loss (measured)")

# (NAME, (docs file, heading), minutes on 2 cores, script): one script of studies/ each.
for _name, _target, _minutes, _path in (
        # Compression: every step starts from compression-start's model (see `compression`).
        ("compression-baseline", COMPRESSION_DOC, 10, "compression/baseline.py"),
        ("compression-structured", COMPRESSION_DOC, 15, "compression/structured.py"),
        ("compression-pruning", COMPRESSION_DOC, 15, "compression/pruning.py"),
        ("compression-qat", COMPRESSION_DOC, 20, "compression/qat.py"),
        ("compression-qat-ranges", COMPRESSION_DOC, 5, "compression/qat_ranges.py"),
        ("compression-distillation", COMPRESSION_DOC, 20, "compression/distillation.py"),
        ("compression-combos", COMPRESSION_DOC, 25, "compression/combos.py"),
        ("compression-quantized", COMPRESSION_DOC, 5, "compression/quantized.py"),
        ("compression-structured-shapes", COMPRESSION_DOC, 5,
         "compression/structured_shapes.py"),
        ("compression-latency", COMPRESSION_DOC, 10, "compression/latency.py"),
        ("compression-table", COMPRESSION_DOC, 0.1, "compression/table.py"),
        ("sparse-kernels", ("docs/results/sparse-kernels.md", "Sparse kernels: what pruning buys in "
                            "TFLite (issue #28, measured)"), 8, "sparse_kernels/sparse_kernels.py"),
        ("openvino-sparse-weights", ("docs/results/sparse-kernels.md", "Sparse kernels: what pruning buys "
                                     "in TFLite (issue #28, measured)"), 15,
         "sparse_kernels/openvino_sparse.py"),
        ("tflite-q4", ("docs/results/sparse-kernels.md", "Sparse kernels: what pruning buys in "
                       "TFLite (issue #28, measured)"), 15, "sparse_kernels/tflite_q4.py"),
        ("structured-speedup", ("docs/results/structured-speedup.md", "Measured: ALBERT vs BERT "
                                "at 2x and 3x, four methods, 3 seeds (AMD EPYC Zen 5, AVX-512 "
                                "VNNI)"), 60, "structured_speedup/run.py"),
        ("structured-speedup-importance", ("docs/results/structured-speedup.md", "Which "
                                           "importance: first-order, movement or magnitude "
                                           "(measured, same machine)"), 15,
         "structured_speedup/importance.py"),
        ("deepsparse-anchor", ("docs/results/sparse-kernels.md", "DeepSparse 1.8: the sparse-CPU anchor "
                               "(issue #28, measured)"), 60, "deepsparse_anchor/run.py"),
        ("sparsity-albert-vs-bert", ("docs/results/sparsity-albert-vs-bert.md", "Accuracy vs sparsity: ALBERT vs "
                                     "BERT (issue #28, measured)"), 23,
         "sparsity_albert_vs_bert/run.py"),
        # Export (issue 7): the steps of export-must-show, and the op-by-op int8 study.
        ("export-sst2-must-show", EXPORT_DOC, 20, "export/sst2_must_show.py"),
        ("export-int8-ops", EXPORT_INT8, 5, "export/int8_ops.py"),
        ("server-exports-sst2", ("docs/export.md", "ONNX for ONNX Runtime on x86 servers"), 10,
         "export/server_exports_sst2.py"),
        ("mobile-sdks", MOBILE_SDKS, 15, "mobile_sdks/classification.py"),
        ("mobile-sdk-span", MOBILE_SDKS, 20, "mobile_sdks/span.py"),
        ("mobile-sdk-embedding", MOBILE_SDKS, 10, "mobile_sdks/embedding.py"),
        # The rest.
        ("albert-base-time-budget", ("docs/cpu-benchmark.md", "Why 28 ms and 150 sentences/s "
                                     "are out of reach: the matrix work alone takes 27.3 ms"),
         5, "albert_base_time_budget/run.py"),
        ("pretraining-data-memory", ("docs/results/data-creation-machine-c.md", "Pretraining data: counts, memory and throughput (measured)"), 12,
         "pretraining_data/memory.py"),
        ("pretraining-data-beam", ("docs/results/pretraining-data-beam-machine-d.md", "The Beam runner vs the local runner, measured on an Intel Xeon (machine D class)"), 5,
         "pretraining_data/beam.py"),
        ("concurrency", ("docs/results/robustness-threads-machine-a.md", "Threads (measured)"), 3,
         "concurrency/run.py"),
        ("pretrain-throughput", TRAINING, 5, "pretraining/throughput.py"),
        ("pretraining-probes", TRAINING, 10, "pretraining/probes.py"),
        # Scale (issue #30): input paths vs the training step; static vs dynamic masking.
        ("input-throughput", SCALE_THROUGHPUT, 8, "pretraining/input_throughput.py"),
        ("pretraining-static-vs-dynamic", SCALE_CURVES, 12, "pretraining/static_vs_dynamic.py"),
        ("bert-wordpiece-end-to-end",
         ("docs/experiment.md", "`run_albert_vs_bert`: ALBERT and BERT as trained models"), 20,
         "bert_wordpiece_end_to_end/run.py")):
    script(_name, *_target, _minutes, _path)


def _compression_out() -> str:
    return os.environ.get("ALBERT_TF_COMPRESSION_OUT", "/tmp/albert_tf_compression")


@figure("compression-start", *COMPRESSION_DOC, minutes=15)
def compression_start(argv):
    """The finetuned starting point of every compression experiment: albert_small (H=256,
    4 heads, I=1024, L=4, all layers shared) on SST-2, trained with albert-tf-finetune."""
    return run_command([sys.executable, "-m", "albert_tf.bin.finetune", "--task=sst2",
                        "--config_file=compress_sst2_start_albert_small",
                        f"--model_dir={os.path.join(_compression_out(), 'start')}", *argv])


@figure("compression", *COMPRESSION_DOC, minutes=120)
def compression(argv):
    """Every compression experiment in order (the starting model first when missing), the
    timing of all TFLite files together and the table; logs in $ALBERT_TF_COMPRESSION_OUT/logs."""
    if argv:
        raise SystemExit("error: compression takes no arguments (its steps are figures of "
                         f"their own: {LIST_COMMAND})")
    out = _compression_out()
    if not os.path.exists(os.path.join(out, "start", "best", "task.json")):
        steps(("compression-start", [], True))
    logs = os.path.join(out, "logs")
    steps(*[(f"compression-{step}", [], True) for step in (
        "baseline", "structured", "pruning", "qat", "qat-ranges", "distillation", "combos",
        "quantized")], ("compression-pruning", ["--with_embeddings"], True), log_dir=logs)
    # Timings are not niced.
    steps(("compression-structured-shapes", [], False), ("compression-latency", [], False),
          log_dir=logs)
    steps(("compression-table", [], False))


@figure("export-must-show", *EXPORT_DOC, minutes=40)
def export_must_show(argv):
    """albert-tf-finetune (finetune_sst2_albert_mini at seq 128), albert-tf-compress
    (compress_sst2_qat) and export-sst2-must-show in order, in $ALBERT_TF_EXPORT_WORK
    (default /tmp/export_must_show); arguments go to the last step."""
    work = os.environ.get("ALBERT_TF_EXPORT_WORK", "/tmp/export_must_show")
    model, qat = os.path.join(work, "sst2_mini"), os.path.join(work, "sst2_qat")
    train = [
        [sys.executable, "-m", "albert_tf.bin.finetune", "--task=sst2",
         "--config_file=finetune_sst2_albert_mini", "--max_seq_length=128",
         f"--model_dir={model}"],
        [sys.executable, "-m", "albert_tf.bin.compress", "--config_file=compress_sst2_qat",
         f"--init_model={os.path.join(model, 'best')}", f"--model_dir={qat}", "--notflite"]]
    for cmd in train:
        print(f"figures: {' '.join(cmd[2:])}", flush=True)
        status = run_command(cmd, nice=True)
        if status:
            raise SystemExit(f"figures: error: {cmd[2]} failed (exit {status})")
    steps(("export-sst2-must-show",
           [f"--model_dir={os.path.join(model, 'best')}",
            f"--qat_model_dir={os.path.join(qat, 'model')}",
            f"--work_dir={os.path.join(work, 'exports')}", *argv], False))


# ------------------------------------------------------------------------------ CLI
def listing() -> list[str]:
    width = max(len(name) for name in FIGURES)
    return [f"{f.name:<{width}}  {'~%g min' % f.minutes:>9}  {f.doc} # {f.heading}"
            for f in sorted(FIGURES.values(), key=lambda f: f.name)]


def listing_json() -> str:
    """Every figure as JSON (name, doc, heading, minutes, summary, command), sorted by name:
    what tests and tools read instead of importing this file."""
    return json.dumps([{field: getattr(f, field) for field in
                        ("name", "doc", "heading", "minutes", "summary", "command")}
                       for f in sorted(FIGURES.values(), key=lambda f: f.name)], indent=1)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "--list":
        if argv[1:] not in ([], ["--json"]):
            print(f"figures: error: --list takes only --json (got {' '.join(argv[1:])})",
                  file=sys.stderr)
            return 2
        print(listing_json() if argv[1:] else "\n".join(listing()))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in FIGURES:
        print(f"figures: error: no figure named {name!r}; `{LIST_COMMAND}` "
              "(or `make figures`) lists them", file=sys.stderr)
        return 2
    result = FIGURES[name].run(rest)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
