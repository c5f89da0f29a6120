"""How much do activation ranges differ across the depths of the shared block?

    make figures NAME=compression-qat-ranges

Isolates the range decision from training: the starting model is wrapped for QAT with
per-depth and with shared ranges, the ranges are calibrated by 100 forward passes in
training mode (no weight update), and each is converted to full int8 and scored on dev.
Also records, per quantization point, the range of every depth and their spread.
"""

import json
import os
import re

import numpy as np
from common import (RESULTS, SEQ, START, calibration_features, load_start, log,
                                 tflite_accuracy, write_tflite)

from albert_tf.backend import tf
from albert_tf.compression import qat
from albert_tf.compression.compression_config import QATConfig
from albert_tf.export.common import load_source

BATCHES = 100


def main() -> None:
    model, task_info, vocab, inputs = load_start()
    source = load_source(START)
    calibration = calibration_features(inputs)
    out = {}
    for mode in ("per_depth", "shared"):
        quantized = qat.quantize_model(model, QATConfig(activation_ranges=mode))
        forward = tf.function(lambda x: quantized(x, training=True), reduce_retracing=True)
        for features, _ in inputs.train_dataset(32, seed=7).take(BATCHES):
            forward(features)
        file = write_tflite(qat.convert_int8(quantized, source, calibration, SEQ),
                            f"ranges_{mode}_int8")
        ranges = qat.activation_ranges(quantized)
        out[mode] = {"tflite": file, "tflite_dev_accuracy": tflite_accuracy(file, inputs),
                     "ranges": ranges}
        log(f"{mode}: calibrated-only int8 dev accuracy {out[mode]['tflite_dev_accuracy']:.4f}")
    spread = {}
    for name, (lo, hi) in out["per_depth"]["ranges"].items():
        match = re.match(r".*quant_call(\d+)_(.*)", name)
        if match:
            spread.setdefault(match.group(2), []).append((int(match.group(1)), lo, hi))
    summary = {}
    for point, values in sorted(spread.items()):
        widths = [hi - lo for _, lo, hi in sorted(values)]
        summary[point] = {"widths_by_depth": [round(w, 3) for w in widths],
                          "max_over_min": round(max(widths) / max(min(widths), 1e-9), 2)}
    out["per_depth_width_ratio"] = summary
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "qat_ranges.json"), "w") as f:
        json.dump(out, f, indent=2)
    for point, s in summary.items():
        log(f"{point}: widths by depth {s['widths_by_depth']} (max/min {s['max_over_min']})")
    log(f"median max/min width ratio over points: "
        f"{np.median([s['max_over_min'] for s in summary.values()]):.2f}")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
