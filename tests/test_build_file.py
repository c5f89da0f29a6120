"""The Bazel BUILD file declares every module and test file."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _declared_srcs() -> set[str]:
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as f:
        return {line.split('"')[1] for line in f if line.strip().startswith("srcs = [")}


def test_every_module_and_test_is_declared():
    declared = _declared_srcs()
    missing = []
    for top in ("albert_tf", "tests", "tflite"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            if "__pycache__" in dirpath:
                continue
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                if name.endswith(".py") and rel not in declared:
                    missing.append(rel)
    assert not missing, f"not in BUILD (run `make build-file`): {missing}"


def test_build_file_is_up_to_date():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "update_build.py"),
                             "--check"], cwd=ROOT)
    assert result.returncode == 0, "BUILD is stale: run `make build-file` (tools/update_build.py)"
