"""The suite's cost accounting: per-file CPU tables, the two tiers, tests/file_costs.json.

``make test-cpu`` runs every test (both tiers, docs/setup.md#the-test-tiers) with
``ALBERT_TF_TEST_CPU=DIR``: tests/conftest.py writes one JSON line per test (wall seconds,
the xdist worker's own CPU seconds, the CPU seconds of the processes the test started,
whether it is marked ``slow``). This tool reads DIR and

- prints the files by CPU, costliest first, with the totals, and each tier's totals;
- lists the tests that the ``slow`` marker should carry: unmarked ones over ``--limit``
  CPU seconds (the gate's budget holds only while there are none);
- writes tests/file_costs.json: for each tier, file -> wall seconds of its tests in that
  tier. tests/conftest.py orders the files by it, costliest first, so that with
  ``-n 2 --dist=loadfile`` the long files start at once instead of forming a tail; the
  numbers only steer the order, so a stale table costs time, never correctness.

Usage: python tools/test_costs.py --cpu DIR [--limit 5] [--out tests/file_costs.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The gate's per-test budget in CPU seconds: a test over it belongs in the slow tier.
SLOW_LIMIT = 5.0


def cpu_rows(folder: str) -> list[dict]:
    """The per-test lines of ``folder/*.jsonl`` (tests/conftest.py's CPU accounting)."""
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                rows.extend(json.loads(line) for line in handle if line.strip())
    return rows


def _cpu(row: dict) -> float:
    return row["self_cpu"] + row["child_cpu"]


def _file(row: dict) -> str:
    return row["test"].split("::")[0]


def cpu_costs(rows: list[dict]) -> dict[str, list[float]]:
    """``{file: [wall, own CPU, subprocess CPU, tests]}``."""
    costs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for row in rows:
        totals = costs[_file(row)]
        totals[0] += row["wall"]
        totals[1] += row["self_cpu"]
        totals[2] += row["child_cpu"]
        totals[3] += 1
    return dict(costs)


def cpu_table(costs: dict[str, list[float]], top: int = 40) -> str:
    """The files by CPU seconds (own + subprocesses), costliest first, and the totals."""
    rows = sorted(costs.items(), key=lambda item: -(item[1][1] + item[1][2]))
    total = [sum(c[i] for c in costs.values()) for i in range(4)]
    lines = [f"{'CPU s':>7} {'own':>7} {'subproc':>7} {'wall s':>7} {'tests':>5}  file"]
    for path, (wall, own, child, tests) in rows[:top]:
        lines.append(f"{own + child:7.1f} {own:7.1f} {child:7.1f} {wall:7.1f} {tests:5d}  {path}")
    lines.append(f"{total[1] + total[2]:7.1f} {total[1]:7.1f} {total[2]:7.1f} {total[0]:7.1f} "
                 f"{total[3]:5d}  all {len(costs)} files")
    return "\n".join(lines)


def tier_costs(rows: list[dict]) -> dict[str, dict[str, float]]:
    """``{"all": {file: wall s}, "gate": {file: wall s of its unmarked tests}}``, each
    costliest first (tests/file_costs.json)."""
    tiers: dict[str, dict[str, float]] = {"all": defaultdict(float), "gate": defaultdict(float)}
    for row in rows:
        tiers["all"][_file(row)] += row["wall"]
        if not row.get("slow"):
            tiers["gate"][_file(row)] += row["wall"]
    return {tier: {path: round(seconds, 1) for path, seconds in
                   sorted(costs.items(), key=lambda item: (-item[1], item[0]))}
            for tier, costs in tiers.items()}


def tier_summary(rows: list[dict]) -> str:
    """One line per tier: its tests and CPU seconds."""
    gate = [row for row in rows if not row.get("slow")]
    slow = [row for row in rows if row.get("slow")]
    return "\n".join(f"{name}: {len(part)} tests, {sum(map(_cpu, part)):.0f} CPU-s"
                     for name, part in (("gate (make test)", gate), ("slow", slow)))


def unmarked_over(rows: list[dict], limit: float) -> list[tuple[str, float]]:
    """The tests not marked ``slow`` that took over ``limit`` CPU seconds, costliest first."""
    over = [(row["test"], _cpu(row)) for row in rows
            if not row.get("slow") and _cpu(row) > limit]
    return sorted(over, key=lambda item: -item[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", metavar="DIR", required=True,
                        help="the ALBERT_TF_TEST_CPU folder of a run (make test-cpu)")
    parser.add_argument("--limit", type=float, default=SLOW_LIMIT,
                        help="CPU seconds over which an unmarked test is listed")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "file_costs.json"))
    args = parser.parse_args(argv)
    rows = cpu_rows(args.cpu) if os.path.isdir(args.cpu) else []
    if not rows:
        print(f"no per-test CPU lines in {args.cpu}: run the suite with "
              "ALBERT_TF_TEST_CPU set (make test-cpu)", file=sys.stderr)
        return 1
    print(cpu_table(cpu_costs(rows)))
    print(tier_summary(rows))
    over = unmarked_over(rows, args.limit)
    for test, seconds in over:
        print(f"not marked slow, {seconds:.1f} CPU-s > {args.limit:g}: {test}")
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(tier_costs(rows), handle, indent=1)
        handle.write("\n")
    print(f"{len(rows)} tests -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
