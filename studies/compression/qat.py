"""Quantization-aware training: per-depth vs shared activation ranges, against PTQ.

    make figures NAME=compression-qat [ARGS="--init=<model dir> --name=qat"]

Both QAT variants start from the same float model and train the same number of steps;
each is converted to a full-integer TFLite model (`qat.convert_int8`: every op int8,
QAT ranges, 200 training sentences calibrate the rest) and scored by running that file
on the dev split. The float model's TFLite accuracy and PTQ's come from
compression-baseline (or are computed here for another --init).
"""

import argparse

from common import (SEQ, START, calibration_features, export, log, model_inputs,
                                 save_result, scored, sizes, stage_config, tflite_accuracy,
                                 write_tflite)

from albert_tf.checkpoints import load_task_model, vocab_path
from albert_tf.compression import qat
from albert_tf.compression.compressor import compress_model
from albert_tf.export.common import load_source

STEPS = 600


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", default=START)
    parser.add_argument("--name", default="qat")
    parser.add_argument("--modes", default="per_depth,shared")
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args(argv)
    source = load_source(args.init)
    vocab = vocab_path(args.init)
    _, task_info = load_task_model(args.init)
    inputs = model_inputs(args.init)
    calibration = calibration_features(inputs)
    if args.init != START:
        float_file = export(args.init, f"{args.name}_float")
        ptq_file = export(args.init, f"{args.name}_ptq_int8", quantization="int8",
                          int8_float_ops="none")
        save_result(f"{args.name}_ptq", {
            "method": f"{args.name}: float and PTQ full int8", "float_tflite": float_file,
            "float_tflite_dev_accuracy": tflite_accuracy(float_file, inputs),
            "float": sizes(float_file), **scored(ptq_file, inputs, key="ptq_tflite")})
    for mode in args.modes.split(","):
        model, _ = load_task_model(args.init)
        config = stage_config(stages=["qat"], qat__activation_ranges=mode,
                              qat__train_steps=args.steps, qat__learning_rate=3e-5)
        # A pruned --init keeps its zeros (qat.keep_sparsity): prune -> QAT.
        quantized, report = compress_model(model, task_info, vocab, config, log)
        file = write_tflite(qat.convert_int8(quantized, source, calibration, SEQ),
                            f"{args.name}_{mode}_int8")
        result = {"method": f"QAT ({mode} ranges) -> full int8", "params": model.count_params(),
                  "qat_keras_dev_accuracy": report["dev"]["qat"]["accuracy"],
                  "start_dev_accuracy": report["dev"]["start"]["accuracy"],
                  **scored(file, inputs)}
        if "sparsity_after_qat" in report:
            result["sparsity_after_qat"] = report["sparsity_after_qat"]["total"]
        save_result(f"{args.name}_{mode}", result)


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
