"""TFLite's sparse FULLY_CONNECTED kernels vs dense XNNPACK on one ALBERT-base layer's matmuls.

Issue #28 asks which pruning pattern turns into CPU time. TFLite's builtin FULLY_CONNECTED has
sparse kernels for models converted with ``Optimize.EXPERIMENTAL_SPARSITY``: float with
random or 1x4 blocks, int8 with 1x16 blocks (a block is 1 output row x N consecutive inputs
of the ``[out, in]`` weight). XNNPACK, the default delegate, runs dense weights (it densifies
the float sparse ones or refuses the int8 ones). This times the six matmuls of one transformer
layer at ALBERT-base shapes (q, k, v, attention output: H x H; FFN: H x F, F x H; H = 768,
F = 3072) on ``[1, seq, H]`` inputs, each weight pruned to the block pattern at each sparsity,
converted with and without ``EXPERIMENTAL_SPARSITY``:

- ``xnnpack fp32`` / ``xnnpack int8``: dense weights, the default delegate (int8: full
  integer with a representative dataset, float input and output);
- ``sparse fp32 1x4`` / ``sparse int8 1x16``: the sparse-converted file on the builtin kernels
  (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``; with XNNPACK the float one runs densified and the
  int8 one fails to prepare).

Prints one row per (variant, sparsity): file MiB, median ms, and the speed-up over dense
int8 on XNNPACK (the artifact a sparse one must beat). Synthetic weights (random values, the
blocks of least magnitude pruned: `albert_tf.benchmark.compressed.prune_kernel`, which
``albert-tf-benchmark --compressed`` prunes whole models with; sparse files made by
`albert_tf.export.sparsity.sparsify_bytes`): the kernels' speed does not depend on the
values.

    python studies/figures.py sparse-kernels [--seq=128] [--threads=2]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from albert_tf.benchmark.compressed import DEFAULT_SPARSITIES as SPARSITIES
from albert_tf.export.sparsity import sparsify_bytes
from albert_tf.benchmark.compressed import prune_kernel
from albert_tf.benchmark.cpu import cpu_info

HIDDEN, FFN = 768, 3072
PATTERNS = {"fp32": "1x4", "int8": "1x16"}     # the sparse kernels TFLite has


def layer_model(seq: int, sparsity: float, pattern: str, seed: int = 0):
    """A functional Keras model of one layer's six matmuls, weights pruned to ``pattern``
    (`albert_tf.export.sparsity.PATTERNS`)."""
    from albert_tf.backend import keras
    rng = np.random.default_rng(seed)
    x = keras.Input((seq, HIDDEN), batch_size=1)
    shapes = {"q": (HIDDEN, HIDDEN), "k": (HIDDEN, HIDDEN), "v": (HIDDEN, HIDDEN),
              "output": (HIDDEN, HIDDEN), "ffn_in": (HIDDEN, FFN), "ffn_out": (FFN, HIDDEN)}
    dense = {name: keras.layers.Dense(shape[1], name=name) for name, shape in shapes.items()}
    attended = keras.layers.Add()([dense["q"](x), dense["k"](x), dense["v"](x)])
    hidden = dense["output"](attended)
    out = dense["ffn_out"](keras.layers.ReLU()(dense["ffn_in"](hidden)))
    model = keras.Model(x, out)
    for name, shape in shapes.items():
        weight = rng.standard_normal(shape).astype(np.float32) * 0.02
        dense[name].set_weights([prune_kernel(weight, sparsity, pattern),
                                 np.zeros(shape[1], np.float32)])
    return model


def convert(model, seq: int, int8: bool, sparse: bool) -> bytes:
    from albert_tf.backend import tf
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        rng = np.random.default_rng(1)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: (
            [rng.standard_normal((1, seq, HIDDEN)).astype(np.float32)] for _ in range(8))
    blob = converter.convert()
    return sparsify_bytes(blob) if sparse else blob


def median_ms(blob: bytes, seq: int, threads: int, builtin: bool, runs: int) -> float:
    from ai_edge_litert import interpreter as lite

    from albert_tf.benchmark.timing import median_ms as median_invoke_ms
    kwargs = {"experimental_op_resolver_type":
              lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES} if builtin else {}
    runner = lite.Interpreter(model_content=blob, num_threads=threads, **kwargs)
    runner.allocate_tensors()
    inputs = runner.get_input_details()[0]["index"]
    runner.set_tensor(inputs, np.random.default_rng(2).standard_normal(
        (1, seq, HIDDEN)).astype(np.float32))
    return median_invoke_ms(runner.invoke, runs)


def rows(seq: int, threads: int, runs: int, sparsities=SPARSITIES):
    """``(variant, sparsity, MiB, ms)`` for the dense baselines then each sparse file."""
    for precision in ("fp32", "int8"):
        blob = convert(layer_model(seq, 0.0, "unstructured"), seq, precision == "int8", False)
        yield (f"xnnpack {precision}", 0.0, len(blob) / 2**20,
               median_ms(blob, seq, threads, False, runs))
    for precision, pattern in PATTERNS.items():
        name = f"sparse {precision} {pattern}"
        for sparsity in sparsities:
            blob = convert(layer_model(seq, sparsity, pattern), seq, precision == "int8", True)
            yield (name, sparsity, len(blob) / 2**20, median_ms(blob, seq, threads, True, runs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    print(f"one ALBERT-base layer's matmuls, [1, {args.seq}, {HIDDEN}] input, "
          f"{args.threads} threads; CPU: {cpu_info(measure_clock=False).summary()}")
    print("| variant | sparsity | file MiB | median ms | vs dense int8 (XNNPACK) |")
    print("|---|---|---|---|---|")
    table = list(rows(args.seq, args.threads, args.runs))
    int8_ms = next(ms for variant, _, _, ms in table if variant == "xnnpack int8")
    for variant, sparsity, mib, ms in table:
        print(f"| {variant} | {sparsity:.0%} | {mib:.1f} | {ms:.2f} | {int8_ms / ms:.2f}x |")
    return 0

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
