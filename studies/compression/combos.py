"""Combinations: prune -> QAT, and distill -> quantize (QAT and PTQ of the student).

    make figures NAME=compression-combos [ARGS=--only_ptq]

Runs compression-qat's procedure on the pruned model (QAT keeps its zeros) and on the
distilled student (per-depth ranges; the student has no sharing, so that equals shared),
each in a fresh process, then converts the distilled student with the export library's
default int8 (int8 fully connected layers, the ops XNNPACK has no int8 kernel for in
float), the fast CPU layout.
"""

import argparse
import os
import subprocess
import sys

from common import OUT, export, log, model_inputs, save_result, scored

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only_ptq", action="store_true")
    args = parser.parse_args(argv)
    needed = {f"{OUT}/distilled": "compression-distillation"}
    if not args.only_ptq:
        needed[f"{OUT}/pruned80"] = "compression-pruning"
    for directory, figure in needed.items():
        if not os.path.isdir(directory):
            raise SystemExit(f"no model at {directory}: run `make figures NAME={figure}` first")
    if not args.only_ptq:
        for name, init in (("prune_qat", f"{OUT}/pruned80"), ("distill_qat", f"{OUT}/distilled")):
            log(f"{name} from {init}")
            if subprocess.run([sys.executable, os.path.join(HERE, "qat.py"), f"--init={init}",
                               f"--name={name}", "--modes=per_depth", "--steps=400"]
                              ).returncode:
                raise SystemExit(f"compression-combos: QAT of {init} failed (its error above)")
    init = f"{OUT}/distilled"
    file = export(init, "distill_ptq_xnnpack", quantization="int8")
    save_result("distill_ptq_xnnpack", {
        "method": "distilled student -> PTQ int8 (XNNPACK layout)",
        **scored(file, model_inputs(init))})


if __name__ == "__main__":
    from albert_tf.cli import script_main
    script_main(main)
