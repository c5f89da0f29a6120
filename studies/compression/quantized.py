"""The dense, structured and distilled models in the fast CPU layouts: dynamic-range int8
and the export default int8 (int8 fully connected layers, the rest float on XNNPACK).

    make figures NAME=compression-quantized

Speed-ups of a smaller architecture can differ by layout: int8 kernels shrink the
matrix work, so the fixed per-op cost weighs more. Each file is scored on SST-2 dev
here and timed with the others by compression-latency.
"""

from common import START, export, model_inputs, path, save_result, scored

# (model, quantizations): the int8 files of the start model and of the student are
# written by compression-baseline (ptq_int8_xnnpack) and compression-combos
# (distill_ptq_xnnpack).
MODELS = {"start": (START, ("dynamic",)),
          "structured": (path("structured"), ("dynamic", "int8")),
          "distillation": (path("distilled"), ("dynamic",))}


def main() -> None:
    inputs = model_inputs(START)
    for name, (model_dir, quantizations) in MODELS.items():
        for quantization in quantizations:
            label = f"{name}_{quantization}"
            file = export(model_dir, label, quantization=quantization)
            save_result(label, {"method": f"{name}, TFLite {quantization}",
                                **scored(file, inputs)})


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
