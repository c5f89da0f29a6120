"""albert-tf-benchmark: CPU inference of ALBERT vs BERT at every size, our artifacts vs
PyTorch and ONNX Runtime on the same weights, against the CPU's measured peak.

    albert-tf-benchmark --quick                      # ~ albert_base vs bert_base, b1 x s128
    albert-tf-benchmark --models=albert_base,albert_large,albert_xlarge,albert_xxlarge,\\
        bert_base,bert_large --shapes=1x16,1x32,1x128,32x128,1x384,32x384
    albert-tf-benchmark --model_dirs=runs/quick/finetune/albert_small/best

Writes report.md, results.json and latency_vs_flops.png to --output_dir.
"""

from __future__ import annotations

import os

from absl import app, flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    flags.DEFINE_list("models", ["albert_base", "albert_large", "albert_xlarge", "albert_xxlarge",
                                 "bert_base", "bert_large"],
                      "Official configs to time with random weights.")
    flags.DEFINE_list("model_dirs", [], "Model directories (trained weights) to time as well.")
    flags.DEFINE_list("runtimes", None, "Runtimes (default: all): tf, tflite_none, tflite_dynamic, "
                      "tflite_int8, torch, torch_int8, onnx, onnx_int8.")
    flags.DEFINE_list("shapes", ["1x128", "32x128", "1x384", "32x384", "1x16", "1x32"],
                      "BATCHxSEQ shapes.")
    flags.DEFINE_integer("threads", 2, "Threads per runtime.")
    flags.DEFINE_float("min_seconds", 3.0, "Minimum timed seconds per shape.")
    flags.DEFINE_string("output_dir", "runs/benchmark", "Report, JSON, plots and artifacts.")
    flags.DEFINE_string("data_dir", os.path.join("..", "shared", "data"),
                        "Real text for int8 calibration (SST-2 train).")
    flags.DEFINE_boolean("quick", False, "A ~2-minute run: albert_base and bert_base, batch 1 x "
                         "seq 128, TFLite dynamic/int8 and PyTorch dynamic int8.")



def main(argv: list[str]) -> None:
    del argv
    from albert_tf.benchmark.cpu import cpu_info
    from albert_tf.benchmark.report import write_report
    from albert_tf.benchmark.run import RUNTIMES, benchmark_model, random_model_dir

    models, shapes, runtimes = FLAGS.models, FLAGS.shapes, FLAGS.runtimes or list(RUNTIMES)
    min_seconds = FLAGS.min_seconds
    if FLAGS.quick:
        models, shapes = ["albert_base", "bert_base"], ["1x128"]
        runtimes = FLAGS.runtimes or ["tflite_dynamic", "tflite_int8", "torch_int8"]
        min_seconds = min(min_seconds, 2.0)
    unknown = sorted(set(runtimes) - set(RUNTIMES))
    if unknown:
        raise app.UsageError(f"--runtimes: unknown {unknown}; use {list(RUNTIMES)}.")
    parsed = []
    for shape in shapes:
        try:
            batch, seq = (int(v) for v in shape.lower().split("x"))
        except ValueError:
            raise app.UsageError(f"--shapes: {shape!r} is not BATCHxSEQ (e.g. 1x128).")
        parsed.append((batch, seq))

    cpu = cpu_info()
    print(f"CPU: {cpu.describe()}", flush=True)
    work = os.path.join(FLAGS.output_dir, "artifacts")
    targets = [(name, random_model_dir(name, work)) for name in models]
    targets += [(os.path.basename(os.path.normpath(d)), d) for d in FLAGS.model_dirs]
    rows = []
    for index, (name, model_dir) in enumerate(targets, 1):
        print(f"[{index}/{len(targets)}] {name}", flush=True)
        rows += benchmark_model(name, model_dir, runtimes, parsed, work, FLAGS.data_dir,
                                FLAGS.threads, min_seconds, cpu,
                                echo=lambda s: print(s, flush=True))
    meta = {"cpu": cpu.describe(), "threads": FLAGS.threads,
            "weights": "random (seeded) for official configs",
            "peak": "fp32 runtimes vs the FMA peak, int8 runtimes vs the VNNI peak "
                    "(albert_tf/benchmark/cpu.py)"}
    print(write_report(FLAGS.output_dir, rows, meta))


def run() -> None:
    define_flags()
    app.run(main)


if __name__ == "__main__":
    run()
