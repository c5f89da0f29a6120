"""``tflite_q4`` (4-bit per-channel FULLY_CONNECTED weights, XNNPACK's QD8 x QC4W kernels) vs
our dense TFLite int8, dynamic range and float on one model: CPU time and output drift.

Issue #28. Builds the artifacts the way ``albert-tf-benchmark`` does
(`albert_tf.benchmark.artifacts.ArtifactBuilder`: a random official-shape encoder,
`random_model_dir`, exported per ``[1, seq]``; int8 calibrated on SST-2 train text;
``tflite_q4`` = AI Edge Quantizer on the float export), then per shape:

* **CPU ms per invoke, 1 thread**: ``time.thread_time`` around each ``invoke`` (the thread's
  CPU time: on a shared, loaded machine it leaves out the time spent waiting for a core,
  which wall-clock medians do not), the four files interleaved in ``--rounds`` rounds of 5
  invokes; median, p10, p90.
* **cosine to the float export** of the sequence output, per token, over 4 random inputs
  (random weights: a drift indicator, not an accuracy; the accuracy gate on SST-2 dev is
  tests/test_benchmark_q4_tflite.py).

    make figures NAME=tflite-q4 ARGS="--work_dir=/tmp/q4 ..."     # or, the same:
    python studies/sparse_kernels/tflite_q4.py --work_dir=/tmp/q4 [--model=albert_base] [--shapes=1x16,1x128]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np



def artifacts(model: str, work_dir: str, data_dir: str, batch: int, seq: int) -> dict:
    from albert_tf.benchmark.artifacts import ArtifactBuilder, random_model_dir
    builder = ArtifactBuilder(random_model_dir(model, work_dir), os.path.join(work_dir, model),
                              data_dir)
    shape = [(batch, seq)]
    files = {"tflite_q4": builder.tflite_q4(shape)}
    files.update({f"tflite_{q}": builder.tflite(q, shape) for q in ("int8", "dynamic", "none")})
    return {k: v.format(batch=batch, seq=seq) for k, v in files.items()}


def interpreter(path: str, seed: int = 0):
    from ai_edge_litert import interpreter as lit
    it = lit.Interpreter(model_path=path, num_threads=1)
    it.allocate_tensors()
    feed(it, seed)
    return it


def feed(it, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for d in it.get_input_details():
        shape, name = d["shape"], d["name"]
        value = (rng.integers(5, 30000, shape) if "word" in name
                 else np.ones(shape) if "mask" in name else np.zeros(shape))
        it.set_tensor(d["index"], value.astype(d["dtype"]))


def sequence_output(it) -> np.ndarray:
    out = max(it.get_output_details(), key=lambda o: np.prod(o["shape"]))
    return it.get_tensor(out["index"]).reshape(-1, out["shape"][-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="albert_base")
    parser.add_argument("--shapes", default="1x16,1x128")
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--data_dir", default=None, help="default: $ALBERT_TF_DATA_DIR")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    from albert_tf import resources
    from albert_tf.benchmark.cpu import cpu_info
    from albert_tf.benchmark.timing import time_call
    args.data_dir = resources.data_dir(args.data_dir)
    print(f"cpu: {cpu_info(measure_clock=False).summary()}; 1 thread; load average {os.getloadavg()[0]:.2f}")
    print("| model | shape | runtime | CPU ms/invoke (median, p10-p90) | vs fastest int8 | "
          "MiB | cosine to float (min / mean) |")
    print("|---|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        batch, seq = (int(v) for v in shape.split("x"))
        files = artifacts(args.model, args.work_dir, args.data_dir, batch, seq)
        its = {k: interpreter(p) for k, p in files.items()}
        drift = {}
        reference = []
        for seed in range(4):
            feed(its["tflite_none"], seed)
            its["tflite_none"].invoke()
            reference.append(sequence_output(its["tflite_none"]))
        reference = np.concatenate(reference)
        for name, it in its.items():
            outs = []
            for seed in range(4):
                feed(it, seed)
                it.invoke()
                outs.append(sequence_output(it))
            out = np.concatenate(outs)
            cos = (out * reference).sum(-1) / np.linalg.norm(out, axis=-1) / np.linalg.norm(
                reference, axis=-1)
            drift[name] = (cos.min(), cos.mean())
        cpu = {k: [] for k in its}
        for _ in range(args.rounds):
            for name, it in its.items():
                cpu[name] += time_call(it.invoke, 5, 0.0, 0, clock=time.thread_time)
        medians = {k: float(np.median(v)) for k, v in cpu.items()}
        fastest_int8 = min(medians["tflite_int8"], medians["tflite_dynamic"])
        for name, values in cpu.items():
            print(f"| {args.model} | {shape} | {name} | {medians[name]:.2f} "
                  f"({np.percentile(values, 10):.2f}-{np.percentile(values, 90):.2f}) | "
                  f"{fastest_int8 / medians[name]:.2f}x | "
                  f"{os.path.getsize(files[name]) / 2**20:.1f} | "
                  f"{drift[name][0]:.4f} / {drift[name][1]:.4f} |")

if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
