"""The suite's own cost accounting (`make test-cpu`): tests/conftest.py's per-test CPU
lines (ALBERT_TF_TEST_CPU), the `slow` tier marker, and tools/test_costs.py's tables."""

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

import pytest

@pytest.mark.slow
def test_busy_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

def test_busy_self():
    assert sum(i * i for i in range(3_000_000)) > 0
"""


def _run_busy(tmp_path, *flags) -> dict[str, dict]:
    """tests/conftest.py's CPU lines of BUSY_CHILD run with pytest ``flags``, by test name."""
    (tmp_path / "test_busy.py").write_text(BUSY_CHILD, encoding="utf-8")
    out = tmp_path / f"cpu{len(flags)}"
    env = dict(os.environ, ALBERT_TF_TEST_CPU=str(out),
               PYTHONPATH=os.path.join(ROOT, "tests"))
    env.pop("PYTEST_XDIST_WORKER", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest",
                             "-p", "no:cacheprovider", "-p", "no:xdist", "--strict-markers",
                             *flags, str(tmp_path / "test_busy.py")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return {r["test"].split("::")[1]: r for r in map(json.loads, (out / "main.jsonl").open())}


def test_conftest_counts_the_cpu_of_the_processes_a_test_starts(tmp_path):
    rows = _run_busy(tmp_path)
    assert set(rows) == {"test_busy_child", "test_busy_self"}
    child, own = rows["test_busy_child"], rows["test_busy_self"]
    assert child["child_cpu"] > 0.05 and child["child_cpu"] > child["self_cpu"]
    assert own["self_cpu"] > 0.05 and own["child_cpu"] < 0.05
    assert all(r["wall"] > 0 for r in rows.values())
    # The tier each test is in: the `slow` marker (registered: --strict-markers passed).
    assert child["slow"] is True and own["slow"] is False


def test_the_gate_leaves_the_slow_tier_out(tmp_path):
    assert set(_run_busy(tmp_path, "-m", "not slow")) == {"test_busy_self"}


def _write_rows(folder, lines) -> None:
    for name, rows in lines.items():
        with open(folder / name, "w", encoding="utf-8") as handle:
            for test, wall, own, child, slow in rows:
                handle.write(json.dumps({"test": test, "wall": wall, "self_cpu": own,
                                         "child_cpu": child, "slow": slow}) + "\n")


ROWS = {"gw0.jsonl": [("tests/test_a.py::one", 2.0, 1.0, 0.5, False),
                      ("tests/test_b.py::one", 9.0, 0.5, 8.0, True)],
        "gw1.jsonl": [("tests/test_a.py::two", 3.0, 2.0, 0.0, False),
                      ("tests/test_b.py::two", 1.5, 1.0, 0.2, False)]}


def test_cpu_table_sums_per_file_costliest_first(tmp_path):
    _write_rows(tmp_path, ROWS)
    (tmp_path / "notes.txt").write_text("not a cost file\n", encoding="utf-8")
    rows = test_costs.cpu_rows(str(tmp_path))
    costs = test_costs.cpu_costs(rows)
    assert costs == {"tests/test_a.py": [5.0, 3.0, 0.5, 2], "tests/test_b.py": [10.5, 1.5, 8.2, 2]}
    table = test_costs.cpu_table(costs).splitlines()
    assert table[1].split()[-1] == "tests/test_b.py" and table[1].split()[0] == "9.7"
    assert table[2].split()[-1] == "tests/test_a.py" and table[2].split()[0] == "3.5"
    assert table[-1].split()[:5] == ["13.2", "4.5", "8.7", "15.5", "4"]


def test_tiers_order_the_files_by_the_tests_each_tier_runs(tmp_path):
    _write_rows(tmp_path, ROWS)
    rows = test_costs.cpu_rows(str(tmp_path))
    tiers = test_costs.tier_costs(rows)
    # all tests: test_b (10.5 s) first; the gate runs only test_b's 1.5-s test: test_a first.
    assert list(tiers["all"].items()) == [("tests/test_b.py", 10.5), ("tests/test_a.py", 5.0)]
    assert list(tiers["gate"].items()) == [("tests/test_a.py", 5.0), ("tests/test_b.py", 1.5)]
    assert test_costs.tier_summary(rows).splitlines() == [
        "gate (make test): 3 tests, 5 CPU-s", "slow: 1 tests, 8 CPU-s"]
    assert test_costs.unmarked_over(rows, 1.0) == [("tests/test_a.py::two", 2.0),
                                                   ("tests/test_a.py::one", 1.5),
                                                   ("tests/test_b.py::two", 1.2)]
    assert test_costs.unmarked_over(rows, 5.0) == []


def test_the_cli_writes_both_tiers_and_names_unmarked_costly_tests(tmp_path, capsys):
    folder = tmp_path / "cpu"
    folder.mkdir()
    _write_rows(folder, ROWS)
    out = tmp_path / "costs.json"
    assert test_costs.main(["--cpu", str(folder), "--limit", "1.9", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "not marked slow, 2.0 CPU-s > 1.9: tests/test_a.py::two" in printed
    assert "tests/test_a.py::one" not in printed.split("not marked slow")[-1]
    assert json.loads(out.read_text())["gate"] == {"tests/test_a.py": 5.0, "tests/test_b.py": 1.5}
    # No lines: an error, and the table is left as it was.
    assert test_costs.main(["--cpu", str(tmp_path / "empty"), "--out", str(out)]) == 1
    assert "make test-cpu" in capsys.readouterr().err
    assert json.loads(out.read_text())["all"]["tests/test_b.py"] == 10.5


def _runs_an_sdk(tree) -> set[str]:
    """The functions of a test module that reach `tests.mobile_sdks` (its `sdk_python` or
    `answers`), directly or through the module's own helpers and fixtures."""
    import ast

    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    reaching = {"sdk_python", "answers"}
    grew = True
    while grew:
        grew = False
        for name, node in functions.items():
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            used |= {a.arg for a in node.args.args}
            if name not in reaching and used & reaching:
                reaching.add(name)
                grew = True
    return reaching & set(functions)


def test_every_test_that_runs_a_mobile_sdk_is_in_the_slow_tier():
    """`make test` (the gate) does not build .venv-sdk, where an SDK test would be skipped:
    every test that runs an SDK carries the `slow` marker, so that it runs in `make test-all`
    or not at all."""
    import ast
    import glob

    unmarked = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py"))):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for name in sorted(_runs_an_sdk(tree)):
            node = next(n for n in tree.body if getattr(n, "name", None) == name)
            if name.startswith("test_") and not any(
                    "mark.slow" in ast.unparse(d) for d in node.decorator_list):
                unmarked.append(f"{os.path.basename(path)}::{name}")
    assert unmarked == []
    # The check sees the SDK tests it guards (a rename of the helpers would blind it).
    with open(os.path.join(ROOT, "tests", "test_mobile_sdk_span.py"), encoding="utf-8") as h:
        assert "test_sdk_answers_are_the_savedmodel_spans" in _runs_an_sdk(ast.parse(h.read()))
