"""The closing table of the compression experiments (markdown), from results/*.json.

    make figures NAME=compression-table [ARGS="--write=results/table.md"]
"""

import argparse
import json
import os

from common import RESULTS

ROWS = [  # (result file, tflite key, label)
    ("start", "tflite", "finetuned albert_small (start), float"),
    ("ptq_int8_full", "tflite", "PTQ full int8 (every op int8)"),
    ("ptq_int8_xnnpack", "tflite", "PTQ int8, XNNPACK float ops (export default)"),
    ("qat_per_depth", "tflite", "QAT, per-depth ranges -> full int8"),
    ("qat_shared", "tflite", "QAT, one range for all depths -> full int8"),
    ("pruning", "tflite", "pruned 80% (unstructured), float"),
    ("pruning_emb", "tflite", "pruned 80% incl. word embeddings, float"),
    ("prune_qat_per_depth", "tflite", "pruned 80% -> QAT -> full int8"),
    ("structured", "tflite", "structured: -25% heads, -50% FFN, float"),
    ("distillation", "tflite", "distilled student (H=128, L=2), float"),
    ("student_direct", "tflite", "same student, no teacher, float"),
    ("distill_qat_per_depth", "tflite", "distilled student -> QAT -> full int8"),
    ("distill_qat_ptq", "ptq_tflite", "distilled student -> PTQ full int8"),
    ("distill_ptq_xnnpack", "tflite", "distilled student -> PTQ int8, XNNPACK layout"),
    ("start_dynamic", "tflite", "start, dynamic-range int8"),
    ("structured_dynamic", "tflite", "structured, dynamic-range int8"),
    ("structured_int8", "tflite", "structured -> PTQ int8, XNNPACK layout"),
    ("distillation_dynamic", "tflite", "distilled student, dynamic-range int8"),
]


def load(name):
    path = os.path.join(RESULTS, f"{name}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", default=os.path.join(RESULTS, "table.md"))
    args = parser.parse_args(argv)
    latency = load("latency") or {}
    start_ms = latency.get("start:tflite")
    lines = ["| method | dev acc. (Keras) | dev acc. (TFLite file) | params | TFLite MB | "
             "gzip MB | latency ms | speed-up |", "|---|---|---|---|---|---|---|---|"]
    for name, key, label in ROWS:
        r = load(name)
        if r is None:
            continue
        keras_acc = r.get("keras_dev_accuracy", r.get("qat_keras_dev_accuracy"))
        tfl_acc = r.get("tflite_dev_accuracy") if key == "tflite" else \
            r.get("ptq_tflite_dev_accuracy")
        ms = latency.get(f"{name}:{key}")
        size, gz = r.get("file_bytes"), r.get("gzip_bytes")

        def pct(v):
            return f"{100 * v:.2f}" if v is not None else "-"
        params = r.get("params")
        params = f"{params:,}" if isinstance(params, int) else "-"
        speed = f"{start_ms / ms:.2f}x" if ms and start_ms else "-"
        ms = f"{ms:.2f}" if ms else "-"
        lines.append(f"| {label} | {pct(keras_acc)} | {pct(tfl_acc)} | {params} | "
                     f"{size / 1e6:.2f} | {gz / 1e6:.2f} | {ms} | {speed} |")
    if len(lines) == 2:
        raise SystemExit(f"no results in {RESULTS}: run the compression figures first "
                         "(`make figures NAME=compression`)")
    table = "\n".join(lines)
    print(table)
    with open(args.write, "w") as f:
        f.write(table + "\n")


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
