"""The starting model: Keras and TFLite dev accuracy, size, and post-training int8 (PTQ).

    nice -n 10 .venv/bin/python benchmarks/compression_baseline.py

PTQ is the export library's full-integer int8 (calibrated on 256 training sentences,
every op int8: ``int8_float_ops="none"``) and its default int8 (XNNPACK-friendly mix).
"""

from compression_common import (START, export, keras_accuracy, load_start, log, save_result,
                                 sizes, tflite_accuracy)


def main() -> None:
    model, task_info, vocab, inputs = load_start()
    result = {"method": "start (finetuned albert_small)", "params": model.count_params(),
              "keras_dev_accuracy": keras_accuracy(model, inputs)}
    float_file = export(START, "start")
    result.update(tflite=float_file, tflite_dev_accuracy=tflite_accuracy(float_file, inputs),
                  **sizes(float_file))
    save_result("start", result)
    for name, float_ops in (("ptq_int8_full", "none"), ("ptq_int8_xnnpack", "xnnpack")):
        file = export(START, name, quantization="int8", int8_float_ops=float_ops)
        save_result(name, {"method": f"PTQ int8 ({float_ops} float ops)", "tflite": file,
                           "params": model.count_params(),
                           "tflite_dev_accuracy": tflite_accuracy(file, inputs),
                           **sizes(file)})
    log("done")


if __name__ == "__main__":
    main()
