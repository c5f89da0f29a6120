"""Combinations: prune -> QAT, and distill -> quantize (QAT and PTQ of the student).

    nice -n 10 .venv/bin/python benchmarks/compression_combos.py

Runs compression_qat.py's procedure on the pruned model (QAT keeps its zeros) and on the
distilled student (per-depth ranges; the student has no sharing, so that equals shared).
"""

import subprocess
import sys

from compression_common import OUT, ROOT, log


def main() -> None:
    for name, init in (("prune_qat", f"{OUT}/pruned80"), ("distill_qat", f"{OUT}/distilled")):
        log(f"{name} from {init}")
        subprocess.run([sys.executable, "benchmarks/compression_qat.py", f"--init={init}",
                        f"--name={name}", "--modes=per_depth", "--steps=400"],
                       cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
