"""Combinations: prune -> QAT, and distill -> quantize (QAT and PTQ of the student).

    nice -n 10 .venv/bin/python benchmarks/compression_combos.py [--only_ptq]

Runs compression_qat.py's procedure on the pruned model (QAT keeps its zeros) and on the
distilled student (per-depth ranges; the student has no sharing, so that equals shared),
then converts the distilled student with the export library's default int8 (int8 fully
connected layers, the ops XNNPACK has no int8 kernel for in float), the fast CPU layout.
"""

import argparse
import subprocess
import sys

from compression_common import (DATA_DIR, OUT, ROOT, SEQ, export, log, save_result, sizes,
                                 tflite_accuracy)

from albert_tf.checkpoints import load_task_info, vocab_path
from albert_tf.compression.data import load_task_inputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only_ptq", action="store_true")
    args = parser.parse_args()
    if not args.only_ptq:
        for name, init in (("prune_qat", f"{OUT}/pruned80"), ("distill_qat", f"{OUT}/distilled")):
            log(f"{name} from {init}")
            subprocess.run([sys.executable, "benchmarks/compression_qat.py", f"--init={init}",
                            f"--name={name}", "--modes=per_depth", "--steps=400"],
                           cwd=ROOT, check=True)
    init = f"{OUT}/distilled"
    inputs = load_task_inputs(load_task_info(init), DATA_DIR, vocab_path(init),
                              max_seq_length=SEQ)
    file = export(init, "distill_ptq_xnnpack", quantization="int8")
    save_result("distill_ptq_xnnpack", {
        "method": "distilled student -> PTQ int8 (XNNPACK layout)", "tflite": file,
        "tflite_dev_accuracy": tflite_accuracy(file, inputs), **sizes(file)})


if __name__ == "__main__":
    main()
