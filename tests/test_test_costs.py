"""The suite's own cost accounting (`make test-cpu`): tests/conftest.py's per-test CPU
lines (ALBERT_TF_TEST_CPU) and tools/test_costs.py's table of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import test_costs  # noqa: E402  (tools/test_costs.py)

BUSY_CHILD = """
import subprocess, sys

def test_busy_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

def test_busy_self():
    assert sum(i * i for i in range(3_000_000)) > 0
"""


def test_conftest_counts_the_cpu_of_the_processes_a_test_starts(tmp_path):
    (tmp_path / "test_busy.py").write_text(BUSY_CHILD, encoding="utf-8")
    out = tmp_path / "cpu"
    env = dict(os.environ, ALBERT_TF_TEST_CPU=str(out),
               PYTHONPATH=os.path.join(ROOT, "tests"))
    env.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest",
                             "-p", "no:cacheprovider", "-p", "no:xdist",
                             str(tmp_path / "test_busy.py")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {r["test"].split("::")[1]: r for r in map(json.loads, (out / "main.jsonl").open())}
    assert set(rows) == {"test_busy_child", "test_busy_self"}
    child, own = rows["test_busy_child"], rows["test_busy_self"]
    assert child["child_cpu"] > 0.05 and child["child_cpu"] > child["self_cpu"]
    assert own["self_cpu"] > 0.05 and own["child_cpu"] < 0.05
    assert all(r["wall"] > 0 for r in rows.values())


def test_cpu_table_sums_per_file_costliest_first(tmp_path):
    lines = {"gw0.jsonl": [("tests/test_a.py::one", 2.0, 1.0, 0.5),
                           ("tests/test_b.py::one", 9.0, 0.5, 8.0)],
             "gw1.jsonl": [("tests/test_a.py::two", 3.0, 2.0, 0.0)]}
    for name, rows in lines.items():
        with open(tmp_path / name, "w", encoding="utf-8") as handle:
            for test, wall, own, child in rows:
                handle.write(json.dumps({"test": test, "wall": wall, "self_cpu": own,
                                         "child_cpu": child}) + "\n")
    (tmp_path / "notes.txt").write_text("not a cost file\n", encoding="utf-8")
    costs = test_costs.cpu_costs(str(tmp_path))
    assert costs == {"tests/test_a.py": [5.0, 3.0, 0.5, 2], "tests/test_b.py": [9.0, 0.5, 8.0, 1]}
    table = test_costs.cpu_table(costs).splitlines()
    assert table[1].split()[-1] == "tests/test_b.py" and table[1].split()[0] == "8.5"
    assert table[2].split()[-1] == "tests/test_a.py" and table[2].split()[0] == "3.5"
    assert table[-1].split()[:5] == ["12.0", "3.5", "8.5", "14.0", "3"]
