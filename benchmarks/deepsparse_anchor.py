"""DeepSparse 1.8 on our magnitude-pruned official-shape models: the sparse-CPU anchor (issue #28).

DeepSparse (Neural Magic's sparse CPU runtime; end of life, its last wheel 1.8.0, Python < 3.12)
is not a dependency of albert_tf: it runs in its own venv, ``.venv-deepsparse`` (made here when
missing, from ``benchmarks/deepsparse-requirements.txt``: it needs onnx<1.15, which
constraints.txt cannot share), through `benchmarks/deepsparse_worker.py` in a subprocess.

For each model (default albert_base and bert_base, random weights at the official shapes:
`albert_tf.benchmark.artifacts.random_model_dir`) and each sparsity (dense, then 80/90/95%
unstructured: `albert_tf.benchmark.compressed.pruned_model_dir`, magnitude per tensor, every
rank-2 kernel outside the embeddings; ALBERT's shared block once), this builds the peers' ONNX
of the model's Hugging Face copy (`albert_tf.benchmark.peers.export_onnx`, standard ONNX ops;
eager attention, the classic MatMul/Div/Add-mask/Softmax/MatMul pattern DeepSparse was made
for; our own ONNX export uses ONNX Runtime's contrib ops, which DeepSparse does not run) and
its static int8 (ONNX Runtime ``quantize_static``, QDQ format, the MatMuls; `qdq_int8`), then
times, at ``[1, seq]``:

- ``deepsparse fp32`` / ``deepsparse int8 qdq``: ``deepsparse.compile_model(num_cores=cores)``;
- ``onnxruntime fp32`` / ``onnxruntime int8 qdq``: the same files on ONNX Runtime
  (`albert_tf.benchmark.runtimes.OnnxRunner`, ``cores`` intra-op threads);
- ``tflite_int8`` / ``tflite_dynamic``: our dense int8 TFLite exports on LiteRT + XNNPACK
  (`albert_tf.benchmark.runtimes.TFLiteRunner`); the faster is the baseline.

Rounds interleave every artifact of a model (median of each round's median of ``runs`` calls;
the table gives the median over rounds). Before timing, each DeepSparse engine's outputs are
checked against ONNX Runtime's on the same file (`check_rows`): fp32 within
`FP32_TOLERANCE`; int8 QDQ reported as cosine similarity (two int8 kernels round differently).

    make figures NAME=deepsparse-anchor [ARGS="--models=albert_base --rounds=3"]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_common import DEFAULT_DATA_DIR, median_invoke_ms  # noqa: E402

SPARSITIES = (0.8, 0.9, 0.95)
MODELS = ("albert_base", "bert_base")
REQUIREMENTS = os.path.join(HERE, "deepsparse-requirements.txt")
VENV = os.path.join(ROOT, ".venv-deepsparse")
WORKER = os.path.join(HERE, "deepsparse_worker.py")
OURS = ("tflite_int8", "tflite_dynamic")     # our dense int8: the baseline candidates
DS_FP32, DS_INT8 = "deepsparse fp32", "deepsparse int8 qdq"
ORT_FP32, ORT_INT8 = "onnxruntime fp32", "onnxruntime int8 qdq"
FP32_TOLERANCE = 2e-3           # max |DeepSparse - ONNX Runtime| on fp32 outputs
INT8_MIN_COSINE = 0.99          # DeepSparse vs ONNX Runtime on the same int8 QDQ file
CALIBRATION_BATCHES = 8


# ------------------------------------------------------------------ arguments and table
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
    """Model config names (``official_configs/models``), checked without TensorFlow."""
    known = sorted(os.path.splitext(f)[0] for f in os.listdir(
        os.path.join(ROOT, "official_configs", "models")) if f.endswith(".json"))
    models = [m for m in text.split(",") if m]
    unknown = [m for m in models if m not in known]
    if not models or unknown:
        raise AnchorInputError(f"--models: unknown {', '.join(unknown) or '(none given)'}; "
                               f"known: {', '.join(known)}")
    return models


@dataclasses.dataclass
class Row:
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
    """``(max |difference|, min cosine per output row)`` over the outputs."""
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


# ------------------------------------------------------------------ the DeepSparse venv
def deepsparse_python() -> str:
    """The DeepSparse venv's interpreter: $ALBERT_TF_DEEPSPARSE_PYTHON, else
    ``.venv-deepsparse/bin/python`` (which may not exist yet: `ensure_venv`)."""
    return os.environ.get("ALBERT_TF_DEEPSPARSE_PYTHON") or os.path.join(VENV, "bin", "python")


def venv_ready() -> bool:
    """The venv is complete (``make``-style stamp) or an explicit interpreter is given."""
    if os.environ.get("ALBERT_TF_DEEPSPARSE_PYTHON"):
        return os.path.exists(deepsparse_python())
    return os.path.exists(os.path.join(VENV, ".installed"))


def ensure_venv(base_python: str = "python3", echo=print) -> str:
    """``.venv-deepsparse`` from `REQUIREMENTS` when missing (DeepSparse 1.8 has wheels for
    Python 3.8-3.11 only: ``base_python`` must be one)."""
    if venv_ready():
        return deepsparse_python()
    version = subprocess.run([base_python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    if tuple(int(v) for v in version) >= (3, 12):
        raise SystemExit(f"deepsparse-anchor: DeepSparse 1.8 needs Python < 3.12; {base_python} "
                         f"is {'.'.join(version)} (pass --base_python=python3.11)")
    echo(f"creating {VENV} (DeepSparse 1.8.0, {os.path.basename(REQUIREMENTS)})")
    python = os.path.join(VENV, "bin", "python")
    subprocess.run([base_python, "-m", "venv", VENV], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-compile", "-r", REQUIREMENTS],
                   check=True)
    open(os.path.join(VENV, ".installed"), "w").close()
    return python


class DeepSparseWorker:
    """`benchmarks/deepsparse_worker.py` in the DeepSparse venv, one JSON line each way."""

    def __init__(self, python: str | None = None):
        env = dict(os.environ, NM_DISABLE_ANALYTICS="1")
        self.process = subprocess.Popen([python or deepsparse_python(), WORKER],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)

    def request(self, op: str, **fields) -> dict:
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
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------ artifacts
def model_builder(name: str, sparsity: float, work: str, data_dir: str):
    """The `ArtifactBuilder` of ``name`` pruned to ``sparsity`` (0: dense), in the layout of
    ``albert-tf-benchmark --compressed`` under ``work``."""
    from albert_tf.benchmark.artifacts import ArtifactBuilder, random_model_dir
    from albert_tf.benchmark.compressed import percent, pruned_model_dir
    model_dir, where = random_model_dir(name, work), work
    if sparsity:
        where = os.path.join(work, name, "pruned", f"unstructured_{percent(sparsity)[:-1]}")
        model_dir = pruned_model_dir(model_dir, os.path.join(where, "model"), sparsity,
                                     "unstructured")
    return ArtifactBuilder(model_dir, os.path.join(where, name), data_dir)


def fp32_onnx(builder) -> str:
    """The peers' standard-op ONNX with eager attention (``model_eager.onnx``: the file
    `ArtifactBuilder.onnx_opt` optimizes, made the same way)."""
    from albert_tf.benchmark.peers import export_onnx
    path = builder.path("model_eager.onnx")
    if not os.path.exists(path):
        builder.echo(f"  exporting {path}")
        export_onnx(builder.hf_dir(), path, attn_implementation="eager")
    return path


def calibration_feeds(vocab_size: int, seq: int, count: int = CALIBRATION_BATCHES):
    from albert_tf.benchmark.runtimes import peer_feed, token_inputs
    names = ("input_ids", "attention_mask", "token_type_ids")
    return [peer_feed(names, token_inputs(1, seq, vocab_size, seed=100 + i))
            for i in range(count)]


def qdq_int8(fp32: str, vocab_size: int, seq: int, echo=print) -> str:
    """ONNX Runtime static int8 of ``fp32`` in QDQ format (QuantizeLinear / DequantizeLinear
    around every MatMul: int8 symmetric per-tensor weights, uint8 activations calibrated
    (MinMax) on random ids), the form DeepSparse's int8 kernels take; ``*_qdq.onnx``."""
    out = fp32.replace(".onnx", "_qdq.onnx")
    if os.path.exists(out):
        return out
    from onnxruntime import quantization as q

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(calibration_feeds(vocab_size, seq))

        def get_next(self):
            return next(self.feeds, None)

    echo(f"  quantizing {out} (QDQ static int8, MatMul)")
    tmp = out + ".tmp.onnx"
    q.quantize_static(fp32, tmp, Reader(), quant_format=q.QuantFormat.QDQ,
                      op_types_to_quantize=["MatMul"], per_channel=False,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                      extra_options={"WeightSymmetric": True})
    os.replace(tmp, out)
    return out


# ------------------------------------------------------------------ running
def check_rows(checks: list[tuple]) -> list[str]:
    """Lines ``model sparsity runtime: max |diff| ..., min cosine ..: ok|FAILED``."""
    lines = []
    for model, sparsity, runtime, diff, cosine in checks:
        ok = diff <= FP32_TOLERANCE if runtime == DS_FP32 else cosine >= INT8_MIN_COSINE
        lines.append(f"{model} {sparsity:.0%} {runtime} vs ONNX Runtime on the same file: "
                     f"max |diff| {diff:.2e}, min cosine {cosine:.6f}: "
                     f"{'ok' if ok else 'FAILED'}")
    return lines


def run_model(name: str, args, worker: DeepSparseWorker, sparsities: list[float]):
    """``(rows, checks, skipped)`` of one model."""
    from albert_tf.benchmark.runtimes import OnnxRunner, TFLiteRunner, peer_feed, token_inputs
    from albert_tf.config import load_config
    vocab = load_config(name).vocab_size
    shape = [(1, args.seq)]
    inputs = token_inputs(1, args.seq, vocab)
    npz = os.path.join(args.work_dir, f"{name}_inputs_s{args.seq}.npz")
    np.savez(npz, **peer_feed(("input_ids", "attention_mask", "token_type_ids"), inputs))

    calls, checks, skipped = {}, [], {}
    dense = model_builder(name, 0.0, args.work_dir, args.data_dir)
    for runtime in OURS:
        _, template = dense.artifact(runtime, shape)
        calls[runtime, 0.0] = TFLiteRunner(template, args.cores).prepare(inputs)
    for sparsity in [0.0] + sparsities:
        builder = dense if not sparsity else model_builder(name, sparsity, args.work_dir,
                                                           args.data_dir)
        files = {ORT_FP32: fp32_onnx(builder)}
        if args.int8:
            files[ORT_INT8] = qdq_int8(files[ORT_FP32], vocab, args.seq)
        for ort_name, path in files.items():
            ds_name = DS_FP32 if ort_name == ORT_FP32 else DS_INT8
            ort = OnnxRunner(path, args.cores)
            calls[ort_name, sparsity] = ort.prepare(inputs)
            key = f"{name}/{sparsity}/{ds_name}"
            try:
                loaded = worker.request("load", key=key, path=path, cores=args.cores, batch=1,
                                        seq=args.seq)
                print(f"  {name} {sparsity:.0%} {ds_name}: compiled in {loaded['seconds']:.1f} "
                      f"s, {loaded['supported']:.1%} of the graph on DeepSparse's kernels (the "
                      "rest on its bundled ONNX Runtime)", flush=True)
                out = os.path.join(args.work_dir, "ds_outputs.npz")
                worker.request("outputs", key=key, inputs=npz, out=out)
                got = np.load(out)
                ours = ort.outputs(inputs)
                names = [o.name for o in ort.session.get_outputs()]
                checks.append((name, sparsity, ds_name,
                               *compare(ours, [got[n] for n in names])))
            except RuntimeError as error:
                skipped[f"{name} {sparsity:.0%} {ds_name}"] = str(error)
                print(f"  skipped {ds_name}: {error}", flush=True)
                continue
            calls[ds_name, sparsity] = (lambda key=key: worker.request(
                "time", key=key, inputs=npz, runs=args.runs)["ms"])
    rounds = {key: [] for key in calls}
    for r in range(args.rounds):
        start = time.time()
        for (runtime, sparsity), call in calls.items():
            if runtime.startswith("deepsparse"):
                rounds[runtime, sparsity].append(call())
            else:
                rounds[runtime, sparsity].append(median_invoke_ms(call, args.runs))
        print(f"  {name} round {r + 1}/{args.rounds}: {time.time() - start:.0f} s", flush=True)
    rows = [Row(name, sparsity, runtime, float(np.median(values)))
            for (runtime, sparsity), values in rounds.items()]
    return rows, checks, skipped


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR)
    parser.add_argument("--work_dir", default="/tmp/albert_tf_deepsparse_anchor")
    return parser


def parse_args(argv):
    parser = build_parser()
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


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.makedirs(args.work_dir, exist_ok=True)
    python = ensure_venv(args.base_python)
    from albert_tf.benchmark.cpu import cpu_info
    rows, checks, skipped = [], [], {}
    with DeepSparseWorker(python) as worker:
        info = worker.request("info")
        cpu = cpu_info(measure_clock=False)
        flags = [f for f in ("avx512_vnni", "avx512_bf16", "amx_int8") if f in cpu.flags]
        print(f"DeepSparse {info['version']} (isa {info['isa']}, vnni {info['vnni']}), "
              f"ONNX Runtime and LiteRT + XNNPACK; [1, {args.seq}], {args.cores} cores; CPU: "
              f"{cpu.model_name} (family {cpu.family} model {cpu.model}; "
              f"{' '.join(flags) or 'no VNNI'})", flush=True)
        for name in args.model_list:
            got = run_model(name, args, worker, args.sparsity_list)
            rows += got[0]
            checks += got[1]
            skipped.update(got[2])
    print("\n".join(check_rows(checks)))
    for what, why in skipped.items():
        print(f"not run: {what}: {why}")
    print(markdown_table(rows))
    failed = [line for line in check_rows(checks) if line.endswith("FAILED")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
