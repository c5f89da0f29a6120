"""DeepSparse 1.8 on our magnitude-pruned official-shape models: the sparse-CPU anchor (issue #28).

DeepSparse (Neural Magic's sparse CPU runtime; end of life, its last wheel 1.8.0, Python < 3.12)
is not a dependency of albert_tf: it runs in its own venv, ``.venv-deepsparse`` (made here when
missing, from ``studies/deepsparse_anchor/requirements.txt``: it needs onnx<1.15, which
constraints.txt cannot share), through ``albert_tf/benchmark/deepsparse_worker.py`` in a
subprocess. The arguments, the table, the checks and the worker's client are
`albert_tf.benchmark.deepsparse`; this driver builds the artifacts and times them.

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
  (`albert_tf.runtime.sessions.OnnxSession`, ``cores`` intra-op threads);
- ``tflite_int8`` / ``tflite_dynamic``: our dense int8 TFLite exports on LiteRT + XNNPACK
  (`albert_tf.runtime.sessions.TFLiteSession`); the faster is the baseline.

Rounds interleave every artifact of a model (median of each round's median of ``runs`` calls,
`albert_tf.benchmark.timing.median_ms`; the table gives the median over rounds). Before
timing, each DeepSparse engine's outputs are checked against ONNX Runtime's on the same file
(`check_rows`): fp32 within `FP32_TOLERANCE`; int8 QDQ reported as cosine similarity (two
int8 kernels round differently).

    make figures NAME=deepsparse-anchor [ARGS="--models=albert_base --rounds=3"]
    python studies/deepsparse_anchor/run.py --help      # the same flags, run directly
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from albert_tf.benchmark.deepsparse import (DS_FP32, DS_INT8, ORT_FP32, ORT_INT8, OURS,
                                             DeepSparseWorker, Row, check_rows, compare,
                                             ensure_venv, fp32_onnx, markdown_table,
                                             parse_args)

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(ROOT, ".venv-deepsparse")
CALIBRATION_BATCHES = 8


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


def calibration_feeds(vocab_size: int, seq: int, count: int = CALIBRATION_BATCHES):
    """``count`` random-id feeds ``[1, seq]`` (peer input names) that calibrate `qdq_int8`."""
    from albert_tf.runtime.sessions import peer_feed, token_inputs
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
def run_model(name: str, args, worker: DeepSparseWorker, sparsities: list[float]):
    """``(rows, checks, skipped)`` of one model."""
    from albert_tf.benchmark.timing import median_ms
    from albert_tf.runtime.sessions import OnnxSession, TFLiteSession, peer_feed, token_inputs
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
        calls[runtime, 0.0] = TFLiteSession(template, args.cores).prepare(inputs)
    for sparsity in [0.0] + sparsities:
        builder = dense if not sparsity else model_builder(name, sparsity, args.work_dir,
                                                           args.data_dir)
        files = {ORT_FP32: fp32_onnx(builder)}
        if args.int8:
            files[ORT_INT8] = qdq_int8(files[ORT_FP32], vocab, args.seq)
        for ort_name, path in files.items():
            ds_name = DS_FP32 if ort_name == ORT_FP32 else DS_INT8
            ort = OnnxSession(path, args.cores)
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
                rounds[runtime, sparsity].append(median_ms(call, args.runs))
        print(f"  {name} round {r + 1}/{args.rounds}: {time.time() - start:.0f} s", flush=True)
    rows = [Row(name, sparsity, runtime, float(np.median(values)))
            for (runtime, sparsity), values in rounds.items()]
    return rows, checks, skipped


def main(argv=None) -> int:
    """The figure: checks the flags, makes the venv when missing, then per model the
    checks and rounds; exit status 1 when a DeepSparse output check failed."""
    args = parse_args(argv, __doc__.split("\n")[0])
    from albert_tf import resources
    try:
        args.data_dir = resources.data_dir(args.data_dir)
    except resources.DataDirError as error:     # one line, before anything is built
        sys.exit(f"studies/deepsparse_anchor/run.py: error: {error}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.makedirs(args.work_dir, exist_ok=True)
    python = ensure_venv(REQUIREMENTS, VENV, args.base_python)
    from albert_tf.benchmark.cpu import cpu_info
    rows, checks, skipped = [], [], {}
    with DeepSparseWorker(python) as worker:
        info = worker.request("info")
        print(f"DeepSparse {info['version']} (isa {info['isa']}, vnni {info['vnni']}), "
              f"ONNX Runtime and LiteRT + XNNPACK; [1, {args.seq}], {args.cores} cores; CPU: "
              f"{cpu_info(measure_clock=False).summary()}", flush=True)
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
