"""OpenVINO's sparse int8 weights (``CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE``) on our int8 IR.

Issue #28: OpenVINO's CPU plugin can keep int8 MatMul weights whose zero fraction is above the
rate in a sparse form and decompress them on the fly (on CPUs with AMX). This builds a
random official-shape encoder (`albert_tf.benchmark.artifacts.random_model_dir`), prunes it by
magnitude to each sparsity (`albert_tf.benchmark.compressed.pruned_model_dir`, unstructured:
per tensor, every rank-2 kernel outside the embeddings; ALBERT's shared block is pruned once
and used at every depth), exports each with our OpenVINO export (``ArtifactBuilder.ir``:
``--format=openvino --quantization=int8``, NNCF calibrated on SST-2 train text), and times
every IR compiled with and without the rate (`albert_tf.runtime.sessions.OpenVinoSession`,
reshaped to ``[1, seq]``), in interleaved rounds in this one process (median of rounds of
medians). Prints one row per model and sparsity: ms without the rate, ms with it, and the
speed-up over the dense int8 IR. ``albert-tf-benchmark --compressed`` times the same IRs
(``ir_int8`` / ``ir_int8_sparse``), each in a worker process of its own.

    python studies/figures.py openvino-sparse-weights [--models=albert_base,bert_base]
"""

from __future__ import annotations

import argparse
import os

import numpy as np


SPARSITIES = (0.5, 0.8, 0.9, 0.95)


def int8_ir(name: str, sparsity: float, work: str, data_dir: str) -> str:
    """``model.xml`` of our int8 IR of ``name`` pruned to ``sparsity`` (built once)."""
    from albert_tf.benchmark.artifacts import ArtifactBuilder, random_model_dir
    from albert_tf.benchmark.compressed import percent, pruned_model_dir
    model_dir, where = random_model_dir(name, work), work   # the layout of --compressed
    if sparsity:
        where = os.path.join(work, name, "pruned", f"unstructured_{percent(sparsity)[:-1]}")
        model_dir = pruned_model_dir(model_dir, os.path.join(where, "model"), sparsity,
                                     "unstructured")
    return ArtifactBuilder(model_dir, os.path.join(where, name), data_dir).ir("int8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="albert_base,bert_base")
    parser.add_argument("--sparsities", default=",".join(str(s) for s in SPARSITIES))
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--work_dir", default="/tmp/albert_tf_openvino_sparse")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import openvino as ov

    from albert_tf import resources
    from albert_tf.benchmark.cpu import cpu_info
    from albert_tf.runtime.sessions import SPARSE_WEIGHTS_RATE, OpenVinoSession, token_inputs
    from albert_tf.benchmark.timing import median_ms
    from albert_tf.config import load_config
    args.data_dir = resources.data_dir(args.data_dir)
    sparsities = [0.0] + [float(s) for s in args.sparsities.split(",")]
    print(f"OpenVINO {ov.__version__} int8 IR, [1, {args.seq}], {args.threads} threads, "
          f"CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE={SPARSE_WEIGHTS_RATE}; CPU: "
          f"{cpu_info(measure_clock=False).summary()}")
    print("| model | sparsity | ms (dense kernels) | ms (sparse rate) | vs dense int8 IR |")
    print("|---|---|---|---|---|")
    for name in args.models.split(","):
        inputs = token_inputs(1, args.seq, load_config(name).vocab_size)
        runs = {(s, rate): OpenVinoSession(int8_ir(name, s, args.work_dir, args.data_dir),
                                          args.threads, None, rate).prepare(inputs)
                for s in sparsities for rate in (None, SPARSE_WEIGHTS_RATE)}
        rounds = {key: [] for key in runs}
        for _ in range(args.rounds):
            for key, invoke in runs.items():
                rounds[key].append(median_ms(invoke, args.runs))
        ms = {key: float(np.median(values)) for key, values in rounds.items()}
        dense = ms[0.0, None]
        for s in sparsities:
            print(f"| {name} | {s:.0%} | {ms[s, None]:.2f} | {ms[s, SPARSE_WEIGHTS_RATE]:.2f} | "
                  f"{dense / min(ms[s, None], ms[s, SPARSE_WEIGHTS_RATE]):.2f}x |", flush=True)
    return 0

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
