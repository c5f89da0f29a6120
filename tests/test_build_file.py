"""The Bazel BUILD file declares every module and test file."""

import importlib.util
import os
import subprocess
import sys

import pytest

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


# Under Bazel (`make bazel`) the tests run in a runfiles tree, which is what BUILD made, not
# the checkout BUILD is made from: comparing the two is this file's job outside Bazel.
from_checkout = pytest.mark.skipif("TEST_SRCDIR" in os.environ,
                                   reason="compares BUILD with the git checkout, not runfiles")


@from_checkout
def test_every_module_and_test_is_declared():
    declared = _declared_srcs()
    wanted = [p for p in update_build.source_files()
              if p.startswith(("albert_tf/", "tests/", "tflite/"))]
    assert len(wanted) > 20
    missing = [p for p in wanted if p not in declared]
    assert not missing, f"not in BUILD (git add them, then `make build-file`): {missing}"
    stale = [p for p in declared if not os.path.exists(os.path.join(ROOT, p))]
    assert not stale, f"BUILD declares files that do not exist: {stale}"


@from_checkout
def test_build_file_is_up_to_date():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "update_build.py"),
                             "--check"], cwd=ROOT)
    assert result.returncode == 0, "BUILD is stale: run `make build-file` (tools/update_build.py)"


def _rules() -> dict[str, tuple[str, list[str]]]:
    """``{name: (kind, deps)}`` of every rule in BUILD."""
    rules, kind, name, deps, in_deps = {}, None, None, [], False
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as f:
        for line in f:
            text = line.strip()
            if text.endswith("(") and not line.startswith(" "):
                kind, name, deps, in_deps = text[:-1], None, [], False
            elif text.startswith("name = ") and name is None:
                name = text.split('"')[1]
            elif text.startswith("deps = ["):
                in_deps = True
                deps += [p for p in text.split('"')[1::2]]
                in_deps = not text.endswith("],")
            elif in_deps:
                if text.startswith("]"):
                    in_deps = False
                else:
                    deps.append(text.split('"')[1])
            elif text == ")" and name:
                rules[name] = (kind, [d.lstrip(":") for d in deps])
    return rules


def test_build_file_builds_offline_with_bazel_4_native_rules():
    """What Debian's Bazel 4.2 needs to build it offline (docs/setup.md#bazel): no
    rules_python load, py_libraries without cycles (Bazel rejects them), every dep a rule
    of the file, every py_test run through the pytest main with its own file."""
    with open(os.path.join(ROOT, "BUILD"), encoding="utf-8") as f:
        text = f.read()
    assert "@rules_python" not in text and "load(" not in text
    rules = _rules()
    assert sum(kind == "py_test" for kind, _ in rules.values()) > 20
    for name, (_, deps) in rules.items():
        unknown = [d for d in deps if d not in rules]
        assert not unknown, f"{name}: deps that are not rules of BUILD: {unknown}"
    libraries = {n: [d for d in deps if rules[d][0] == "py_library"]
                 for n, (kind, deps) in rules.items() if kind == "py_library"}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in libraries[node]:
            assert state.get(dep) != 1, f"cycle: {' -> '.join(path + [node, dep])}"
            if dep not in state:
                visit(dep, path + [node])
        state[node] = 2
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for node in libraries:
        if node not in state:
            visit(node, [])
    assert 'main = "tests/bazel_pytest_main.py"' in text
    assert 'args = ["tests/test_build_file.py"]' in text
