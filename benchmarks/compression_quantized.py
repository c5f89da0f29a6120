"""The dense, structured and distilled models in the fast CPU layouts: dynamic-range int8
and the export default int8 (int8 fully connected layers, the rest float on XNNPACK).

    nice -n 10 .venv/bin/python benchmarks/compression_quantized.py

Speed-ups of a smaller architecture can differ by layout: int8 kernels shrink the
matrix work, so the fixed per-op cost weighs more. Each file is scored on SST-2 dev
here and timed with the others by compression_latency.py.
"""

from compression_common import DATA_DIR, SEQ, START, export, path, save_result, sizes, \
    tflite_accuracy

from albert_tf.checkpoints import load_task_info, vocab_path
from albert_tf.compression.data import load_task_inputs

# (model, quantizations): the int8 files of the start model and of the student are
# written by compression_baseline.py (ptq_int8_xnnpack) and compression_combos.py
# (distill_ptq_xnnpack).
MODELS = {"start": (START, ("dynamic",)),
          "structured": (path("structured"), ("dynamic", "int8")),
          "distillation": (path("distilled"), ("dynamic",))}


def main() -> None:
    inputs = load_task_inputs(load_task_info(START), DATA_DIR, vocab_path(START),
                              max_seq_length=SEQ)
    for name, (model_dir, quantizations) in MODELS.items():
        for quantization in quantizations:
            label = f"{name}_{quantization}"
            file = export(model_dir, label, quantization=quantization)
            save_result(label, {"method": f"{name}, TFLite {quantization}", "tflite": file,
                                "tflite_dev_accuracy": tflite_accuracy(file, inputs),
                                **sizes(file)})


if __name__ == "__main__":
    main()
