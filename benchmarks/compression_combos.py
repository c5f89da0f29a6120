"""Combinations: prune -> QAT, and distill -> quantize (QAT and PTQ of the student).

    make figures NAME=compression-combos [ARGS=--only_ptq]

Runs compression-qat's procedure on the pruned model (QAT keeps its zeros) and on the
distilled student (per-depth ranges; the student has no sharing, so that equals shared),
each in a fresh process, then converts the distilled student with the export library's
default int8 (int8 fully connected layers, the ops XNNPACK has no int8 kernel for in
float), the fast CPU layout.
"""

import argparse

from bench_common import run_figure
from compression_common import OUT, export, log, model_inputs, save_result, scored


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only_ptq", action="store_true")
    args = parser.parse_args(argv)
    if not args.only_ptq:
        for name, init in (("prune_qat", f"{OUT}/pruned80"), ("distill_qat", f"{OUT}/distilled")):
            log(f"{name} from {init}")
            run_figure("compression-qat", f"--init={init}", f"--name={name}",
                       "--modes=per_depth", "--steps=400")
    init = f"{OUT}/distilled"
    file = export(init, "distill_ptq_xnnpack", quantization="int8")
    save_result("distill_ptq_xnnpack", {
        "method": "distilled student -> PTQ int8 (XNNPACK layout)",
        **scored(file, model_inputs(init))})
