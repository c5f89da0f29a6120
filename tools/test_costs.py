"""Sum a pytest ``--durations=0`` report per test file into tests/file_costs.json.

tests/conftest.py orders the collected files by these costs, costliest first, so that
with ``-n 2 --dist=loadfile`` the long files start at once instead of forming a tail.
Regenerate the table with ``make test-costs`` (it runs the suite once with
``--durations=0`` and pipes the report here); the numbers only steer the order, so
a stale table costs time, never correctness.

Usage: python tools/test_costs.py [REPORT] [--out tests/file_costs.json]
(REPORT defaults to standard input).
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", help="pytest --durations=0 output (default stdin)")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "file_costs.json"))
    args = parser.parse_args(argv)
    if args.report:
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
