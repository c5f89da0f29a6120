"""Which importance picks the units to remove best? Retraining-free (issue #46).

    .venv/bin/python studies/structured_speedup/importance.py --work_dir=/tmp/ss_imp0 \
        [--teachers=/tmp/ss/teachers] [--archs=albert_mini,bert_mini]

The teachers are `run.py`'s (``<work_dir of run.py>/teachers/<arch>/best``). For every
architecture, importance (``magnitude``, ``gradient``, ``movement``) and structure (half the
heads; three quarters of the FFN neurons; both) one ``albert-tf-compress
--config_file=compress_sst2_speedup`` with ``structured.schedule=one_shot`` and **no
training after the removal** (``structured.train_steps=0``; the importance from 32 training
batches): the SST-2 dev accuracy right after the units are removed measures how well the
importance chose them (Kwon et al. 2022's setting), before fine-tuning evens it out (`run.py`'s
``h50_f75_*`` methods measure that). Writes ``importance.md`` and ``importance.json`` into
--work_dir; a finished compression is not redone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from run import command, run  # noqa: E402  (the study driver beside this file)

IMPORTANCES = ("magnitude", "gradient", "movement")
STRUCTURES = {"heads 1/2": (0.5, 0.0), "FFN 3/4": (0.0, 0.75), "heads 1/2 + FFN 3/4": (0.5, 0.75)}


def removed_without_training(work: str, init: str, arch: str, importance: str,
                             structure: str) -> dict:
    """The dev accuracy of ``init`` right after removing ``structure`` by ``importance``."""
    heads, ffn = STRUCTURES[structure]
    out = os.path.join(work, arch, f"{importance}_h{heads:g}_f{ffn:g}")
    report = os.path.join(out, "report.json")
    if not os.path.exists(report):
        done = run([command("albert-tf-compress"), f"--init_model={init}", f"--model_dir={out}",
                    "--config_file=compress_sst2_speedup", "--notflite",
                    "--params_override=structured.schedule=one_shot,structured.distill_alpha=0,"
                    f"structured.train_steps=0,structured.importance_batches=32,"
                    f"structured.importance={importance},structured.head_fraction={heads},"
                    f"structured.ffn_fraction={ffn}"], os.path.join(work, "log.txt"))
        if done.returncode:
            sys.exit(f"{out}: {done.stderr.strip()[-300:]}")
    with open(report, encoding="utf-8") as f:
        values = json.load(f)
    return {"arch": arch, "importance": importance, "structure": structure,
            "teacher_dev": values["dev"]["start"]["accuracy"],
            "dev": values["dev"]["structured"]["accuracy"]}


def table(rows: list[dict]) -> str:
    lines = ["| model | removed | teacher | " + " | ".join(IMPORTANCES) + " |",
             "|---|---|---:|" + "---:|" * len(IMPORTANCES)]
    for arch in dict.fromkeys(r["arch"] for r in rows):
        for structure in STRUCTURES:
            cells = {r["importance"]: r for r in rows
                     if r["arch"] == arch and r["structure"] == structure}
            teacher = next(iter(cells.values()))["teacher_dev"]
            lines.append(f"| {arch} | {structure} | {100 * teacher:.2f} | " + " | ".join(
                f"{100 * cells[i]['dev']:.2f}" for i in IMPORTANCES) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--teachers", default="/tmp/ss/teachers",
                        help="run.py's teachers: <dir>/<arch>/best")
    parser.add_argument("--archs", default="albert_mini,bert_mini")
    args = parser.parse_args()
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    rows = []
    for arch in args.archs.split(","):
        init = os.path.join(args.teachers, arch, "best")
        if not os.path.isdir(init):
            sys.exit(f"{init}: no teacher; run run.py first (its --work_dir/teachers)")
        for structure in STRUCTURES:
            for importance in IMPORTANCES:
                rows.append(removed_without_training(work, init, arch, importance, structure))
    with open(os.path.join(work, "importance.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    text = table(rows)
    with open(os.path.join(work, "importance.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
