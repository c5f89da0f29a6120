"""Op-by-op: which int8 ops of an ALBERT-base layer XNNPACK runs, and what each costs.

    nice -n 10 .venv/bin/python studies/figures.py export-int8-ops [--threads=2] [--json=out.json]

LiteRT's Python API has no op profiler, so every op type of the full-integer ALBERT graph is
converted on its own (ALBERT-base shapes, seq 128, batch 1; int8 inputs and outputs so that
no QUANTIZE/DEQUANTIZE is added) and run three ways: float32 with the default XNNPACK
delegate, int8 with the default XNNPACK delegate, int8 with the builtin kernels only. A
``DELEGATE`` node in the int8 interpreter means XNNPACK took the op. Multiplying by the
number of such ops in the model (``--model``) gives each op type's share of the latency.
"""

from __future__ import annotations

import argparse
import collections
import json

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.benchmark.timing import median_ms

S, H, N, D, I = 128, 768, 12, 64, 3072


def op_cases():
    rng = np.random.RandomState(0)
    w_hh = rng.normal(0, 0.02, (H, H)).astype(np.float32)
    w_hi = rng.normal(0, 0.02, (H, I)).astype(np.float32)
    ln = keras.layers.LayerNormalization(epsilon=1e-12)
    ln.build((None, S, H))
    return {
        "FULLY_CONNECTED 768x768": ([[1, S, H]], lambda x: tf.matmul(x, w_hh) + 0.1),
        "FULLY_CONNECTED 768x3072": ([[1, S, H]], lambda x: tf.matmul(x, w_hi) + 0.1),
        "BATCH_MATMUL q.k": ([[1, N, S, D], [1, N, S, D]],
                             lambda a, b: tf.matmul(a, b, transpose_b=True)),
        "SOFTMAX": ([[1, N, S, S]], lambda x: tf.nn.softmax(x, -1)),
        "GELU (tanh)": ([[1, S, I]], lambda x: tf.nn.gelu(x, approximate=True)),
        "MEAN (last axis)": ([[1, S, H]], lambda x: tf.reduce_mean(x, -1, keepdims=True)),
        "SQUARED_DIFFERENCE": ([[1, S, H], [1, S, 1]], lambda x, m: tf.math.squared_difference(x, m)),
        "RSQRT": ([[1, S, 1]], lambda x: tf.math.rsqrt(tf.abs(x) + 1e-3)),
        "LayerNorm (whole)": ([[1, S, H]], lambda x: ln(x)),
        "ADD": ([[1, S, H], [1, S, H]], lambda a, b: a + b),
        "MUL": ([[1, S, H], [1, S, H]], lambda a, b: a * b),
        "TRANSPOSE": ([[1, S, N, D]], lambda x: tf.transpose(x, [0, 2, 1, 3])),
        "TANH": ([[1, H]], lambda x: tf.tanh(x)),
    }


def convert(fn, shapes, quantize: bool) -> bytes:
    specs = [tf.TensorSpec(s, tf.float32) for s in shapes]
    concrete = tf.function(fn).get_concrete_function(*specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    if quantize:
        rng = np.random.RandomState(1)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: (
            [rng.normal(0, 1, s).astype(np.float32) for s in shapes] for _ in range(8))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def time_model(content: bytes, threads: int, delegate: bool, runs: int = 30):
    from ai_edge_litert import interpreter as lit
    kwargs = {} if delegate else {
        "experimental_op_resolver_type": lit.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
    it = lit.Interpreter(model_content=content, num_threads=threads, **kwargs)
    it.allocate_tensors()
    delegated = sum(op["op_name"] == "DELEGATE" for op in it._get_ops_details())
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.ones(d["shape"], d["dtype"]))
    return median_ms(it.invoke, runs), delegated


def model_op_counts(path: str) -> collections.Counter:
    from albert_tf.export.analysis import op_report
    return collections.Counter({k: sum(v.values()) for k, v in op_report(path)["ops"].items()})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    print(f"{'op (ALBERT-base shapes, seq 128)':28s} {'f32 xnn':>8s} {'i8 xnn':>8s} "
          f"{'i8 builtin':>10s}  int8 delegated")
    for name, (shapes, fn) in op_cases().items():
        f32, _ = time_model(convert(fn, shapes, False), args.threads, True)
        i8, delegated = time_model(convert(fn, shapes, True), args.threads, True)
        i8_ref, _ = time_model(convert(fn, shapes, True), args.threads, False)
        rows.append({"op": name, "float32_xnnpack_ms": f32, "int8_xnnpack_ms": i8,
                     "int8_builtin_ms": i8_ref, "int8_delegated": bool(delegated)})
        print(f"{name:28s} {f32:8.3f} {i8:8.3f} {i8_ref:10.3f}  {'yes' if delegated else 'NO'}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
