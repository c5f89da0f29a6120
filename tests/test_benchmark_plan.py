"""albert-tf-benchmark's flags become a `BenchmarkPlan` before any work (issue #45, item 4):
the mode's defaults applied (--quick, --compressed), or the first problem as the error the
command raises, with TensorFlow not imported and nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from albert_tf.benchmark import targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Parses the flags as the command does and prints the plan (or the problem) as JSON.
PROBE = """
import json, sys
from absl import flags
from albert_tf.bin import benchmark
benchmark.define_flags()
flags.FLAGS(["albert-tf-benchmark", *sys.argv[1:]])
plan, problem = benchmark.BenchmarkPlan.from_flags()
print(json.dumps({
    "problem": None if problem is None else [type(problem).__name__, str(problem)],
    "plan": None if plan is None else {
        "models": list(plan.models), "shapes": [list(s) for s in plan.shapes],
        "runtimes": list(plan.runtimes), "min_seconds": plan.min_seconds,
        "compressed": plan.compressed is not None, "end_to_end": plan.end_to_end is not None},
    "tensorflow": "tensorflow" in sys.modules}))
"""


def _plan(tmp_path, data_dir, *args) -> dict:
    env = dict(os.environ, ALBERT_TF_DATA_DIR=data_dir,
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["tensorflow"] is False, "the plan imported TensorFlow"
    assert os.listdir(tmp_path) == [], "the plan wrote something"
    return found


def test_quick_is_the_standard_comparison(tmp_path, data_dir):
    found = _plan(tmp_path, data_dir, "--quick")
    assert found["problem"] is None
    assert found["plan"] == {"models": ["albert_base", "bert_base"], "shapes": [[1, 128]],
                             "runtimes": list(targets.quick_names()), "min_seconds": 2.0,
                             "compressed": False, "end_to_end": False}


def test_compressed_quick_takes_its_own_defaults(tmp_path, data_dir):
    found = _plan(tmp_path, data_dir, "--compressed", "--quick", "--min_seconds=1")
    assert found["problem"] is None
    plan = found["plan"]
    assert (plan["models"], plan["shapes"], plan["min_seconds"], plan["compressed"]) == (
        ["albert_base"], [[1, 128]], 1.0, True)


@pytest.mark.parametrize("args, kind, line", [
    (["--models=albert_base", "--runtimes=tf", "--shapes=1x"], "UsageError",
     "--shapes: '1x' is not BATCHxSEQ (e.g. 1x128)."),
    (["--compressed", "--profile"], "UsageError",
     "--compressed times per-shape latency only; run --sst2_end_to_end and --profile "
     "without it."),
    (["--models=", "--shapes=", "--runtimes=tf", f"--output_dir={ROOT}"], "OutputError",
     f"--output_dir={ROOT} holds files albert-tf did not write"),
])
def test_the_first_problem_comes_back_before_any_work(tmp_path, data_dir, args, kind, line):
    found = _plan(tmp_path, data_dir, *args)
    assert found["plan"] is None
    assert found["problem"][0] == kind
    assert found["problem"][1].startswith(line), found["problem"][1]
