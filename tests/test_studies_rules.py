"""studies/ drives the package, it does not re-implement it (issue #45, item 2): rules
read from the source (no script is imported, no TensorFlow).

* no script edits ``sys.path`` (a script imports installed packages and, inside a study
  folder, its own folder's modules: Python puts a script's folder on the path itself);
* no script builds the data directory from ``shared/data``: data comes from ``--data_dir``
  or ``$ALBERT_TF_DATA_DIR`` through `albert_tf.resources.data_dir`;
* every script with a ``main`` runs it under ``if __name__ == "__main__":`` (figures.py
  runs each one in a fresh process);
* no test imports a script of studies/.

"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDIES = os.path.join(ROOT, "studies")
LIBRARIES = {"studies/compression/common.py"}


def python_files(folder: str) -> list[str]:
    found = []
    for directory, _, names in os.walk(folder):
        found += [os.path.relpath(os.path.join(directory, n), ROOT) for n in names
                  if n.endswith(".py")]
    return sorted(found)


def source(relative: str) -> str:
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def sys_path_edits(text: str) -> list[int]:
    """Lines that mutate ``sys.path`` (insert, append, extend, assignment)."""
    lines = []
    for node in ast.walk(ast.parse(text)):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            target = next((t for t in targets if "sys.path" in ast.unparse(t)), None)
        if target is not None and ast.unparse(target).startswith("sys.path"):
            lines.append(node.lineno)
    return lines


def has_main_block(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for node in tree.body)


SCRIPTS = python_files(STUDIES)


def test_the_rules_see_the_scripts():
    assert "studies/figures.py" in SCRIPTS and len(SCRIPTS) > 20
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')\n") == [2]
    assert sys_path_edits("import sys\nsys.path += ['x']\n") == [2]
    assert sys_path_edits("import sys\nprint(sys.path)\n") == []


@pytest.mark.parametrize("path", SCRIPTS)
def test_script_follows_the_rules(path):
    text = source(path)
    assert not sys_path_edits(text), f"{path} edits sys.path (lines {sys_path_edits(text)})"
    assert not re.search(r"shared/data|[\"']shared[\"'],\s*[\"']data[\"']", text), \
        f"{path} builds the data directory itself: use albert_tf.resources.data_dir"
    tree = ast.parse(text)
    defines_main = any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
    if defines_main and path not in LIBRARIES:
        assert has_main_block(tree), f"{path} has main() but no `if __name__ == \"__main__\":`"


def test_no_test_imports_a_script():
    offenders = []
    for path in python_files(os.path.join(ROOT, "tests")):
        if path == "tests/test_studies_rules.py":
            continue
        text = source(path)
        if re.search(r"load_script\(\s*[\"']studies/|spec_from_file_location\([^)]*studies"
                     r"|^\s*(from|import) studies\b", text, re.M):
            offenders.append(path)
    assert not offenders, f"tests importing a script of studies/: {offenders}"


def test_the_sdk_python_default_has_one_home(monkeypatch):
    """Scripts and tests find the SDK environment through `albert_tflite.sdk_check`."""
    from albert_tflite.sdk_check import default_python

    monkeypatch.delenv("ALBERT_TF_SDK_PYTHON", raising=False)
    assert default_python("/co") == "/co/.venv-sdk/bin/python"
    monkeypatch.setenv("ALBERT_TF_SDK_PYTHON", "/elsewhere/python")
    assert default_python("/co") == "/elsewhere/python"
    for path in SCRIPTS:
        assert ".venv-sdk\", \"bin\"" not in source(path), f"{path} restates the SDK default"
