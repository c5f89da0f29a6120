"""The starting model: Keras and TFLite dev accuracy, size, and post-training int8 (PTQ).

    make figures NAME=compression-baseline

PTQ is the export library's full-integer int8 (calibrated on 256 training sentences,
every op int8: ``int8_float_ops="none"``) and its default int8 (XNNPACK-friendly mix).
"""

from common import START, export, keras_accuracy, load_start, log, save_result, scored


def main() -> None:
    model, task_info, vocab, inputs = load_start()
    result = {"method": "start (finetuned albert_small)", "params": model.count_params(),
              "keras_dev_accuracy": keras_accuracy(model, inputs)}
    save_result("start", {**result, **scored(export(START, "start"), inputs)})
    for name, float_ops in (("ptq_int8_full", "none"), ("ptq_int8_xnnpack", "xnnpack")):
        file = export(START, name, quantization="int8", int8_float_ops=float_ops)
        save_result(name, {"method": f"PTQ int8 ({float_ops} float ops)",
                           "params": model.count_params(), **scored(file, inputs)})
    log("done")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
