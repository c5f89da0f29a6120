"""Sum a pytest ``--durations=0`` report per test file into tests/file_costs.json.

tests/conftest.py orders the collected files by these costs, costliest first, so that
with ``-n 2 --dist=loadfile`` the long files start at once instead of forming a tail.
Regenerate the table with ``make test-costs`` (it runs the suite once with
``--durations=0`` and pipes the report here); the numbers only steer the order, so
a stale table costs time, never correctness.

Usage: python tools/test_costs.py [REPORT] [--out tests/file_costs.json]
(REPORT defaults to standard input).

``--cpu DIR`` reads instead the CPU accounting of a run with ``ALBERT_TF_TEST_CPU=DIR``
(``make test-cpu``; tests/conftest.py writes one JSON line per test: wall seconds, the
xdist worker's own CPU seconds, and the CPU seconds of the processes the test started),
prints the files by CPU, costliest first, with the totals, and writes the wall-time table
as above.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# "12.34s call     tests/test_x.py::test_y[param]" (setup, call and teardown lines).
_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(?:setup|call|teardown)\s+([^\s:]+\.py)::")


def file_costs(lines) -> dict[str, float]:
    """Seconds per test file (setup + call + teardown of all its tests)."""
    costs: dict[str, float] = defaultdict(float)
    for line in lines:
        match = _LINE.match(line)
        if match:
            costs[match.group(2)] += float(match.group(1))
    return {path: round(seconds, 1) for path, seconds in
            sorted(costs.items(), key=lambda item: (-item[1], item[0]))}


def cpu_costs(folder: str) -> dict[str, list[float]]:
    """``{file: [wall, own CPU, subprocess CPU, tests]}`` from ``folder/*.jsonl``."""
    costs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                totals = costs[row["test"].split("::")[0]]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", help="pytest --durations=0 output (default stdin)")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "file_costs.json"))
    parser.add_argument("--cpu", metavar="DIR",
                        help="the ALBERT_TF_TEST_CPU folder of a run (make test-cpu)")
    args = parser.parse_args(argv)
    if args.cpu:
        measured = cpu_costs(args.cpu)
        print(cpu_table(measured))
        costs = {path: round(c[0], 1) for path, c in
                 sorted(measured.items(), key=lambda item: (-item[1][0], item[0]))}
    elif args.report:
        with open(args.report, encoding="utf-8", errors="replace") as handle:
            costs = file_costs(handle)
    else:
        costs = file_costs(sys.stdin)
    if not costs:
        print("no '--durations' lines found; run pytest with --durations=0", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(costs, handle, indent=1)
        handle.write("\n")
    print(f"{len(costs)} files, {sum(costs.values()):.0f} s in all -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
