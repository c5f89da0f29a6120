"""Quantization-aware training: per-depth vs shared activation ranges, against PTQ.

    nice -n 10 .venv/bin/python benchmarks/compression_qat.py [--init=<model dir>] [--name=qat]

Both QAT variants start from the same float model and train the same number of steps;
each is converted to a full-integer TFLite model (`qat.convert_int8`: every op int8,
QAT ranges, 200 training sentences calibrate the rest) and scored by running that file
on the dev split. The float model's TFLite accuracy and PTQ's come from
compression_baseline.py (or are computed here for another --init).
"""

import argparse

from compression_common import (DATA_DIR, SEQ, START, calibration_features, export, log,
                                 save_result, sizes, stage_config, tflite_accuracy,
                                 write_tflite)

from albert_tf.checkpoints import load_task_model, vocab_path
from albert_tf.compression import qat
from albert_tf.compression.data import load_task_inputs
from albert_tf.compression.compressor import compress_model
from albert_tf.export.common import load_source

STEPS = 600


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", default=START)
    parser.add_argument("--name", default="qat")
    parser.add_argument("--modes", default="per_depth,shared")
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args()
    source = load_source(args.init)
    vocab = vocab_path(args.init)
    _, task_info = load_task_model(args.init)
    inputs = load_task_inputs(task_info, DATA_DIR, vocab, max_seq_length=SEQ)
    calibration = calibration_features(inputs)
    if args.init != START:
        float_file = export(args.init, f"{args.name}_float")
        ptq_file = export(args.init, f"{args.name}_ptq_int8", quantization="int8",
                          int8_float_ops="none")
        save_result(f"{args.name}_ptq", {
            "method": f"{args.name}: float and PTQ full int8", "float_tflite": float_file,
            "float_tflite_dev_accuracy": tflite_accuracy(float_file, inputs),
            "float": sizes(float_file), "ptq_tflite": ptq_file,
            "ptq_tflite_dev_accuracy": tflite_accuracy(ptq_file, inputs), **sizes(ptq_file)})
    for mode in args.modes.split(","):
        model, _ = load_task_model(args.init)
        config = stage_config(stages=["qat"], qat__activation_ranges=mode,
                              qat__train_steps=args.steps, qat__learning_rate=3e-5)
        # A pruned --init keeps its zeros (qat.keep_sparsity): prune -> QAT.
        quantized, report = compress_model(model, task_info, vocab, config, log)
        file = write_tflite(qat.convert_int8(quantized, source, calibration, SEQ),
                            f"{args.name}_{mode}_int8")
        result = {"method": f"QAT ({mode} ranges) -> full int8", "tflite": file,
                  "params": model.count_params(),
                  "qat_keras_dev_accuracy": report["dev"]["qat"]["accuracy"],
                  "start_dev_accuracy": report["dev"]["start"]["accuracy"],
                  "tflite_dev_accuracy": tflite_accuracy(file, inputs), **sizes(file)}
        if "sparsity_after_qat" in report:
            result["sparsity_after_qat"] = report["sparsity_after_qat"]["total"]
        save_result(f"{args.name}_{mode}", result)


if __name__ == "__main__":
    main()
