"""The Bazel BUILD file declares every module and test file."""

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_script(path: str):
    """A repository script (not part of the package) loaded as a module."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


update_build = _load_script(os.path.join(ROOT, "tools", "update_build.py"))


def _declared_srcs() -> set[str]:
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as f:
        return {line.split('"')[1] for line in f if line.strip().startswith("srcs = [")}


def test_every_module_and_test_is_declared():
    declared = _declared_srcs()
    wanted = [p for p in update_build.source_files()
              if p.startswith(("albert_tf/", "tests/", "tflite/"))]
    assert len(wanted) > 20
    missing = [p for p in wanted if p not in declared]
    assert not missing, f"not in BUILD (git add them, then `make build-file`): {missing}"
    stale = [p for p in declared if not os.path.exists(os.path.join(ROOT, p))]
    assert not stale, f"BUILD declares files that do not exist: {stale}"


def test_build_file_is_up_to_date():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "update_build.py"),
                             "--check"], cwd=ROOT)
    assert result.returncode == 0, "BUILD is stale: run `make build-file` (tools/update_build.py)"
