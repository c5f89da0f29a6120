"""DeepSparse 1.8, the sparse-CPU anchor of ``make figures NAME=deepsparse-anchor`` (issue #28):
its arguments, its table, its output checks and the client of its worker.

DeepSparse (Neural Magic's sparse CPU runtime; end of life, its last wheel 1.8.0, Python < 3.12)
is not a dependency of albert_tf: it runs in its own venv (``.venv-deepsparse``, made by
``studies/deepsparse_anchor/run.py`` from ``studies/deepsparse_anchor/requirements.txt``),
through `WORKER` (``albert_tf/benchmark/deepsparse_worker.py``, run by path with that venv's
Python, one JSON line each way: `DeepSparseWorker`). This module imports no TensorFlow; the script
builds the artifacts, times them and prints `check_rows` and `markdown_table`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess

import numpy as np

from albert_tf.benchmark import targets as _targets

SPARSITIES = (0.8, 0.9, 0.95)
MODELS = ("albert_base", "bert_base")
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deepsparse_worker.py")
VENV = ".venv-deepsparse"        # the default venv directory (the script passes its own path)
PYTHON_ENV = "ALBERT_TF_DEEPSPARSE_PYTHON"   # an explicit DeepSparse interpreter
# Our dense int8 TFLite targets (`albert_tf.benchmark.targets`): the baseline candidates.
OURS = tuple(t.name for t in _targets.every_target()
             if not t.peer and t.worker == "tflite" and t.arithmetic == "int8"
             and not t.sparse_patterns)
DS_FP32, DS_INT8 = "deepsparse fp32", "deepsparse int8 qdq"
ORT_FP32, ORT_INT8 = "onnxruntime fp32", "onnxruntime int8 qdq"
FP32_TOLERANCE = 2e-3           # max |DeepSparse - ONNX Runtime| on fp32 outputs
INT8_MIN_COSINE = 0.99          # DeepSparse vs ONNX Runtime on the same int8 QDQ file


# ------------------------------------------------------------------ arguments
class AnchorInputError(ValueError):
    """A bad argument, reported in one line before anything is built."""


def parse_sparsities(text: str) -> list[float]:
    """``"0.8,0.9"`` -> ``[0.8, 0.9]``: each in (0, 1), no repeats (dense is always timed)."""
    values = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise AnchorInputError(f"--sparsities: {part!r} is not a number") from None
        if not 0 < value < 1:
            raise AnchorInputError(f"--sparsities: {part} is not in (0, 1) (dense is always "
                                   "timed)")
        if value in values:
            raise AnchorInputError(f"--sparsities: {part} twice")
        values.append(value)
    return values


def parse_models(text: str) -> list[str]:
    """Model config names (the shipped ``official_configs/models``), checked without
    TensorFlow."""
    from albert_tf import resources
    known = sorted(resources.model_config_names())
    models = [m for m in text.split(",") if m]
    unknown = [m for m in models if m not in known]
    if not models or unknown:
        raise AnchorInputError(f"--models: unknown {', '.join(unknown) or '(none given)'}; "
                               f"known: {', '.join(known)}")
    return models


def build_parser(description: str = __doc__.split("\n")[0]) -> argparse.ArgumentParser:
    """The anchor's flags (``--data_dir`` None: ``$ALBERT_TF_DATA_DIR``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sparsities", default=",".join(str(s) for s in SPARSITIES))
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--cores", type=int, default=2,
                        help="DeepSparse num_cores, ONNX Runtime and LiteRT threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15, help="calls per round (median)")
    parser.add_argument("--no_int8", dest="int8", action="store_false",
                        help="skip the QDQ int8 files")
    parser.add_argument("--base_python", default="python3",
                        help="the Python (< 3.12) that makes .venv-deepsparse when missing")
    parser.add_argument("--data_dir", default=None,
                        help="data root (default $ALBERT_TF_DATA_DIR)")
    parser.add_argument("--work_dir", default="/tmp/albert_tf_deepsparse_anchor")
    return parser


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    """The parsed flags plus ``model_list`` and ``sparsity_list``; a bad value exits 2 with
    one line (`AnchorInputError`'s message) before anything is built."""
    parser = build_parser(*(description,) if description else ())
    args = parser.parse_args(argv)
    try:
        args.model_list = parse_models(args.models)
        args.sparsity_list = parse_sparsities(args.sparsities)
        for flag in ("seq", "cores", "rounds", "runs"):
            if getattr(args, flag) < 1:
                raise AnchorInputError(f"--{flag} must be at least 1")
    except AnchorInputError as error:
        parser.error(str(error))
    return args


# ------------------------------------------------------------------ table and checks
@dataclasses.dataclass
class Row:
    """One timed artifact: ``median_ms`` is the median over rounds of each round's median."""
    model: str
    sparsity: float        # 0: dense
    runtime: str           # ``deepsparse fp32``, ``onnxruntime fp32``, ``tflite_int8``, ...
    median_ms: float


def baseline_ms(rows: list[Row], model: str) -> float:
    """The fastest of our dense int8 rows (`OURS`) of ``model``."""
    ours = [r.median_ms for r in rows if r.model == model and r.runtime in OURS
            and not r.sparsity]
    if not ours:
        raise ValueError(f"no dense int8 row of ours ({', '.join(OURS)}) for {model}")
    return min(ours)


def markdown_table(rows: list[Row]) -> str:
    """``| model | sparsity | runtime | median ms | vs our dense int8 |``: per model, our dense
    int8 first, then by sparsity and runtime as given; the speed-up is over `baseline_ms`
    (above 1: faster than ours)."""
    lines = ["| model | sparsity | runtime | median ms | vs our dense int8 |",
             "|---|---|---|---|---|"]
    for model in dict.fromkeys(r.model for r in rows):
        base = baseline_ms(rows, model)
        mine = [r for r in rows if r.model == model]
        mine.sort(key=lambda r: (r.runtime not in OURS, r.sparsity))
        for r in mine:
            mark = " (baseline)" if r.runtime in OURS and r.median_ms == base else ""
            lines.append(f"| {model} | {r.sparsity:.0%} | {r.runtime}{mark} | "
                         f"{r.median_ms:.2f} | {base / r.median_ms:.2f}x |")
    return "\n".join(lines)


def compare(reference: list[np.ndarray], other: list[np.ndarray]) -> tuple[float, float]:
    """``(max |difference|, min cosine per output row)`` over the outputs (each
    ``[..., features]``; rows are every position of the leading axes)."""
    diff, cosine = 0.0, 1.0
    for a, b in zip(reference, other):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            raise ValueError(f"output shapes differ: {a.shape} vs {b.shape}")
        diff = max(diff, float(np.max(np.abs(a - b))))
        a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
        cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        cosine = min(cosine, float(cos.min()))
    return diff, cosine


def check_rows(checks: list[tuple]) -> list[str]:
    """Lines ``model sparsity runtime: max |diff| ..., min cosine ..: ok|FAILED`` of
    ``(model, sparsity, runtime, diff, cosine)`` checks: fp32 within `FP32_TOLERANCE`,
    int8 QDQ by cosine (`INT8_MIN_COSINE`: two int8 kernels round differently)."""
    lines = []
    for model, sparsity, runtime, diff, cosine in checks:
        ok = diff <= FP32_TOLERANCE if runtime == DS_FP32 else cosine >= INT8_MIN_COSINE
        lines.append(f"{model} {sparsity:.0%} {runtime} vs ONNX Runtime on the same file: "
                     f"max |diff| {diff:.2e}, min cosine {cosine:.6f}: "
                     f"{'ok' if ok else 'FAILED'}")
    return lines


# ------------------------------------------------------------------ the DeepSparse venv
def deepsparse_python(venv: str = VENV) -> str:
    """The DeepSparse venv's interpreter: ``$ALBERT_TF_DEEPSPARSE_PYTHON``, else
    ``<venv>/bin/python`` (which may not exist yet)."""
    return os.environ.get(PYTHON_ENV) or os.path.join(venv, "bin", "python")


def venv_ready(venv: str = VENV) -> bool:
    """The venv is complete (its ``.installed`` stamp) or an explicit interpreter is given."""
    if os.environ.get(PYTHON_ENV):
        return os.path.exists(deepsparse_python(venv))
    return os.path.exists(os.path.join(venv, ".installed"))


def ensure_venv(requirements: str, venv: str = VENV, base_python: str = "python3",
                echo=print) -> str:
    """``venv`` from the pinned ``requirements`` file when missing (DeepSparse 1.8 has wheels
    for Python 3.8-3.11 only: ``base_python`` must be one); its interpreter."""
    if venv_ready(venv):
        return deepsparse_python(venv)
    version = subprocess.run([base_python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    if tuple(int(v) for v in version) >= (3, 12):
        raise SystemExit(f"deepsparse-anchor: DeepSparse 1.8 needs Python < 3.12; {base_python} "
                         f"is {'.'.join(version)} (pass --base_python=python3.11)")
    echo(f"creating {venv} (DeepSparse 1.8.0, {os.path.basename(requirements)})")
    python = os.path.join(venv, "bin", "python")
    subprocess.run([base_python, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-compile", "-r", requirements],
                   check=True)
    open(os.path.join(venv, ".installed"), "w").close()
    return python


class DeepSparseWorker:
    """`WORKER` in the DeepSparse venv (``python``: its interpreter, default
    `deepsparse_python`), one JSON line each way (the protocol: the worker's docstring)."""

    def __init__(self, python: str | None = None):
        env = dict(os.environ, NM_DISABLE_ANALYTICS="1")
        self.process = subprocess.Popen([python or deepsparse_python(), WORKER],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)

    def request(self, op: str, **fields) -> dict:
        """Sends ``{"op": op, **fields}``; the reply without ``ok``. A failed request raises
        RuntimeError with the worker's one line."""
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the DeepSparse worker exited ({self.process.wait()}) on {op}")
        reply = json.loads(line)
        if not reply.pop("ok"):
            raise RuntimeError(f"DeepSparse {op}: {reply['error']}")
        return reply

    def close(self) -> None:
        """Ends the worker (closing its stdin) and waits for it."""
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------ artifacts
def fp32_onnx(builder) -> str:
    """The peers' standard-op ONNX with eager attention (``model_eager.onnx`` of the
    `albert_tf.benchmark.artifacts.ArtifactBuilder` ``builder``: the file
    `ArtifactBuilder.onnx_opt` optimizes, made the same way)."""
    from albert_tf.benchmark.peers import export_onnx
    path = builder.path("model_eager.onnx")
    if not os.path.exists(path):
        builder.echo(f"  exporting {path}")
        export_onnx(builder.hf_dir(), path, attn_implementation="eager")
    return path
