"""No import cycle in the package (issue #16): the import graphs of ``albert_tf`` and
``tflite`` (``albert_tflite``) are acyclic, and the library never imports its edge tools
(issue #31: ``albert_tflite`` depends on ``albert_tf``, never the reverse), nor runs them
in another process (`edge_tool_commands`: no ``"albert_tflite.*"`` module name, ``-m
albert_tflite`` command line or ``albert-tflite-*`` command in its code; docstrings,
comments and messages that mention a CLI are no dependency).

The packages and their folders are setup.py's (`installed_packages`): imports name the
installed packages (``albert_tflite``), not the folders (``tflite/``).

The graphs are built statically with `ast` (nothing is imported). The *module-level*
graph has an edge A -> B for every import A executes when it is imported: the module
body, including ``if``/``try``/``with`` blocks and class bodies, but not function bodies
nor ``if TYPE_CHECKING:``. It must have no cycle at all. The *full* graph adds the
imports deferred into functions: a deferred import keeps a cycle from failing at import
time but not from being a cycle (issue #16's export <-> compression cycle was entirely
deferred: ``export/tflite.py`` imported ``compression/qat.py`` inside functions and back),
so it must have none either, but for `KNOWN_CYCLES`.

``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
Importing ``a.b.c`` also initialises the packages ``a`` and ``a.b``; those implicit parent
edges are not counted (as in pylint's cyclic-import), the explicit ones are.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def setup_kwargs(setup_py: str = os.path.join(ROOT, "setup.py")) -> dict:
    """The keyword arguments ``setup.py`` passes to ``setuptools.setup``; it runs with
    ``setuptools.setup`` replaced (nothing is built or installed)."""
    import setuptools

    captured: dict = {}
    with open(setup_py, encoding="utf-8") as f:
        code = compile(f.read(), setup_py, "exec")
    real = setuptools.setup
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    cwd = os.getcwd()
    try:
        os.chdir(os.path.dirname(setup_py))    # find_packages() looks in the working dir
        exec(code, {"__name__": "__main__", "__file__": setup_py})
    finally:
        setuptools.setup = real
        os.chdir(cwd)
    return captured


def installed_packages(setup_py: str = os.path.join(ROOT, "setup.py")) -> dict[str, str]:
    """{installed package name: directory} of the packages ``setup.py`` installs, from its
    own ``packages`` and ``package_dir`` (the repository's ``tflite/`` folder installs as
    ``albert_tflite``, ``official_configs/`` as ``albert_tf.official_configs``): one entry
    per package whose directory is not walked from its parent's (a top-level package, or
    one ``package_dir`` places elsewhere)."""
    captured = setup_kwargs(setup_py)
    names, where = set(captured["packages"]), dict(captured.get("package_dir") or {})
    base = os.path.dirname(setup_py)
    return {name: os.path.join(base, where.get(name, name.replace(".", os.sep)))
            for name in sorted(names)
            if name in where or name.rpartition(".")[0] not in names}


# installed package name -> directory, as setup.py installs them.
PACKAGES = installed_packages()

# Cycles of the full graph (deferred imports included) known and being fixed elsewhere,
# as the sorted tuple of their modules; the test fails when a listed one is gone, so the
# list is cleared as fixes land. Empty is the goal. History: issue #16 found
# export.tflite <-> compression.qat (fixed by the quantization-recipe registry) and
# training.tasks <-> training.squad_task (fixed with the task registry, part 1 of #16).
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def _modules(packages: dict[str, str]) -> dict[str, str]:
    """{module name: file} of every module of the packages."""
    out = {}
    for package, directory in packages.items():
        for base, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__"
                             and os.path.exists(os.path.join(base, d, "__init__.py")))
            rel = os.path.relpath(base, directory)
            parts = [package] + ([] if rel == "." else rel.split(os.sep))
            for name in files:
                if not name.endswith(".py"):
                    continue
                stem = name[:-3]
                module = ".".join(parts if stem == "__init__" else parts + [stem])
                out[module] = os.path.join(base, name)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module):
    """The Import/ImportFrom nodes executed when the module is imported."""
    stack = list(tree.body)[::-1]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        elif isinstance(node, ast.stmt):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt) or isinstance(child, ast.excepthandler):
                    stack.append(child)
        elif isinstance(node, ast.excepthandler):
            stack.extend(node.body)


def _all_imports(tree: ast.Module):
    """Every Import/ImportFrom node, deferred ones included."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def import_graph(packages: dict[str, str] | None = None,
                 deferred: bool = False) -> dict[str, set[str]]:
    """{module: modules it imports} of ``packages`` (default `PACKAGES`); ``deferred``:
    also the imports inside functions."""
    modules = _modules(packages or PACKAGES)
    find_imports = _all_imports if deferred else _module_level_imports
    graph: dict[str, set[str]] = {m: set() for m in modules}

    def target(name: str) -> str | None:
        while name and name not in modules:     # a name inside a module: its module
            name = name.rpartition(".")[0]
        return name or None

    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith("__init__.py")
        for node in find_imports(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = module.split(".")
                    parts = parts if is_package else parts[:-1]
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names]
            for name in names:
                dep = target(name)
                if dep and dep != module:
                    graph[module].add(dep)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path m0 -> ... -> m0) per strongly connected component with more
    than one module (Tarjan), shortest first."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def visit(v):                       # iterative Tarjan (no recursion limit)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for component in components:          # shortest cycle through the smallest module
        start = min(component)
        paths, seen = [[start]], {start}
        found = None
        while paths and found is None:
            path = paths.pop(0)
            for w in sorted(graph[path[-1]] & component):
                if w == start:
                    found = path + [start]
                    break
                if w not in seen:
                    seen.add(w)
                    paths.append(path + [w])
        cycles.append(found)
    return sorted(cycles, key=len)


def test_the_graph_sees_the_packages():
    graph = import_graph()
    assert "albert_tf.export.tflite" in graph and "albert_tflite.runner" in graph
    assert "albert_tf.export.common" in graph["albert_tf.export.tflite"]
    assert "albert_tf.export.metadata" in graph["albert_tflite.runner"]


def test_find_cycles_reports_the_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]


def _cycle_lines(cycles) -> str:
    return "\n".join("  " + " -> ".join(c) for c in cycles)


def test_no_module_level_import_cycle():
    cycles = find_cycles(import_graph())
    if cycles:
        pytest.fail("module-level import cycles (break them: move shared code down, or "
                    "register instead of importing):\n" + _cycle_lines(cycles))


def test_no_import_cycle_through_deferred_imports():
    cycles = find_cycles(import_graph(deferred=True))
    unexpected = [c for c in cycles if tuple(sorted(set(c))) not in KNOWN_CYCLES]
    if unexpected:
        pytest.fail("import cycles through imports deferred into functions (a deferred "
                    "import hides a cycle, it does not remove it: move shared code down, "
                    "or register instead of importing):\n" + _cycle_lines(unexpected))
    fixed = KNOWN_CYCLES - {tuple(sorted(set(c))) for c in cycles}
    assert not fixed, f"KNOWN_CYCLES lists cycles that are gone, remove them: {sorted(fixed)}"


def test_a_deferred_cycle_is_found_and_reported(tmp_path):
    """The issue's case: two modules that import each other only inside functions."""
    package = tmp_path / "pkg"
    (package / "export").mkdir(parents=True)
    (package / "compression").mkdir()
    for init in ("__init__.py", "export/__init__.py", "compression/__init__.py"):
        (package / init).write_text("")
    (package / "export" / "tflite.py").write_text(
        "import os\n\ndef load():\n    from pkg.compression import qat\n")
    (package / "compression" / "qat.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.export import tflite\n"
        "def convert():\n    from ..export.tflite import load\n")
    packages = {"pkg": str(package)}
    assert find_cycles(import_graph(packages)) == []
    assert find_cycles(import_graph(packages, deferred=True)) == [
        ["pkg.compression.qat", "pkg.export.tflite", "pkg.compression.qat"]]


def test_export_does_not_import_compression():
    """The export package knows quantization-aware models only through the recipe
    registry (compression registers its loader), not by importing compression."""
    graph = import_graph()
    for base, _, files in os.walk(PACKAGES["albert_tf"] + os.sep + "export"):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(base, name), encoding="utf-8") as f:
                    # as `git grep -n "albert_tf.compression" albert_tf/export` (a regex)
                    assert not re.search(r"albert_tf.compression", f.read()), name
    assert not any(dep.startswith("albert_tf.compression")
                   for module, deps in graph.items() if module.startswith("albert_tf.export")
                   for dep in deps)


def test_packages_are_setup_pys():
    """PACKAGES is derived from setup.py: installed names mapped to their folders."""
    assert PACKAGES["albert_tf"] == os.path.join(ROOT, "albert_tf")
    assert PACKAGES["albert_tflite"] == os.path.join(ROOT, "tflite")
    assert PACKAGES["albert_tf.official_configs"] == os.path.join(ROOT, "official_configs")
    assert "albert_tf.export" not in PACKAGES          # walked from albert_tf/
    assert "tflite" not in PACKAGES and "tflite.runner" not in import_graph()


def _imported_names(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module name) of every import in ``tree`` (deferred ones included) and of
    every ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out += [(node.lineno, node.module)]
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module"
                   or getattr(node.func, "id", None) in ("import_module", "__import__"))):
            out.append((node.lineno, node.args[0].value))
    return out


def edge_tool_imports(source: str, tools: str = "albert_tflite") -> list[tuple[int, str]]:
    """The imports of ``tools`` (or its modules) in a module's source, deferred included."""
    return [(line, name) for line, name in _imported_names(ast.parse(source))
            if name == tools or name.startswith(tools + ".")]


def test_edge_tool_imports_are_found():
    """The issue's case: the OpenVINO runner subclassed the TFLite runner of the edge tools,
    the end-to-end benchmark imported it inside a function."""
    assert edge_tool_imports("from albert_tflite.runner import TFLiteRunner\n") == [
        (1, "albert_tflite.runner")]
    assert edge_tool_imports("def f():\n    import albert_tflite.runner as r\n") == [
        (2, "albert_tflite.runner")]
    assert edge_tool_imports("import importlib\nimportlib.import_module('albert_tflite')\n"
                             ) == [(2, "albert_tflite")]
    assert edge_tool_imports("from albert_tf.runtime import tflite\n"
                             "CMD = ['-m', 'albert_tflite.evaluate']\n") == []


def test_the_library_does_not_import_its_edge_tools():
    """``albert_tflite`` (the edge tools, setup.py's tflite/ folder) depends on
    ``albert_tf``; no ``albert_tf`` module imports it, at import time or deferred (the
    runners and the preprocessor live in ``albert_tf``: `albert_tf.runtime.runner`,
    `albert_tf.runtime.preprocessor`). Running its CLIs as subprocesses is no import, but no
    dependency either: `test_the_library_runs_no_edge_tool` checks that."""
    tools = next(name for name, folder in PACKAGES.items()
                 if os.path.basename(folder) == "tflite")
    found = []
    for module, path in _modules({k: v for k, v in PACKAGES.items()
                                  if k.split(".")[0] == "albert_tf"}).items():
        with open(path, encoding="utf-8") as f:
            found += [f"{module}:{line} imports {name}"
                      for line, name in edge_tool_imports(f.read(), tools)]
    assert not found, ("the library imports its edge tools (move the shared code into "
                       "albert_tf):\n" + "\n".join(found))
    graph = import_graph(deferred=True)
    assert not [(m, d) for m, deps in graph.items() for d in deps
                if m.split(".")[0] == "albert_tf" and d.split(".")[0] == tools]


def edge_tool_scripts(tools: str = "albert_tflite") -> list[str]:
    """The console scripts ``setup.py`` installs for modules of ``tools``
    (``albert-tflite-run``, ``albert-tflite-evaluate``, ...)."""
    scripts = (setup_kwargs().get("entry_points") or {}).get("console_scripts", [])
    return sorted(name.strip() for name, _, target in (s.partition("=") for s in scripts)
                  if target.strip().startswith(tools + "."))


def _text_only(tree: ast.Module) -> set[int]:
    """The string constants that are statements of their own: docstrings (of the module,
    classes, functions) and attribute docstrings, text that never runs."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def edge_tool_commands(source: str, tools: str = "albert_tflite",
                       scripts: tuple[str, ...] | list[str] = ()) -> list[tuple[int, str]]:
    """(line, string) of every string in ``source``'s code that names ``tools`` as
    something to run: a string constant (an f-string's literal parts included; docstrings
    and comments are not code) that

    - starts with a module of ``tools``, ``"albert_tflite."``: a module name for
      ``python_module("albert_tflite.evaluate", ...)``, ``[sys.executable, "-m",
      "albert_tflite.evaluate"]``, ``runpy.run_module``, ``f"albert_tflite.{name}"``;
    - is a command line running it: starts, after spaces and an optional interpreter
      word, with ``-m albert_tflite`` (``f"{sys.executable} -m albert_tflite.evaluate"``);
    - starts with one of its console ``scripts`` as the command word
      (``["albert-tflite-evaluate", ...]``, ``"albert-tflite-benchmark --model=x"``).

    Prose that mentions a CLI does not start with it and passes (an error message's "or
    write it with `python -m albert_tflite.metadata`"), as does the bare package name
    (``package in ("albert_tf", "albert_tflite")``). A module name built from pieces
    (``"albert_" + "tflite.evaluate"``) is not found: the rule reads literals."""
    tree = ast.parse(source)
    text = _text_only(tree)
    patterns = [re.escape(tools) + r"\.",
                r"\s*(\S*python[\w.]*\s+)?-m\s+" + re.escape(tools) + r"\b"]
    if scripts:
        patterns.append(r"\s*(" + "|".join(map(re.escape, scripts)) + r")(\s|$)")
    command = re.compile("|".join(f"(?:{p})" for p in patterns))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in text and command.match(node.value))


def test_edge_tool_commands_are_found():
    """The issue's case: the pipeline driver ran ``albert_tflite.evaluate`` and
    ``albert_tflite.benchmark`` as stages (``python_module``), a run-time dependency of the
    library on its edge tools that no import showed."""
    scripts = edge_tool_scripts()
    assert "albert-tflite-evaluate" in scripts and "albert-tflite-benchmark" in scripts
    assert not any(s.startswith("albert-tf-") for s in scripts)
    found = lambda source: [v for _, v in edge_tool_commands(source, scripts=scripts)]  # noqa: E731
    assert edge_tool_commands('Stage("score", python_module(\n'
                              '    "albert_tflite.evaluate", f"--model={out}"))\n') == [
        (2, "albert_tflite.evaluate")]
    assert found('CMD = [sys.executable, "-m", "albert_tflite.benchmark", "--model=x"]\n') == [
        "albert_tflite.benchmark"]
    assert found('runpy.run_module(f"albert_tflite.{name}")\n') == ["albert_tflite."]
    assert found('cmd = f"{sys.executable} -m albert_tflite.evaluate --model={m}"\n') == [
        " -m albert_tflite.evaluate --model="]
    assert found('os.system("python3 -m albert_tflite.runner --text=x")\n') == [
        "python3 -m albert_tflite.runner --text=x"]
    assert found('subprocess.run(["albert-tflite-evaluate", "--model=x"])\n') == [
        "albert-tflite-evaluate"]
    assert found('os.system("albert-tflite-benchmark --model=x")\n') == [
        "albert-tflite-benchmark --model=x"]
    # Text about the CLIs, and names that run nothing, pass.
    assert found('''"""Scored by `python -m albert_tflite.evaluate` (albert_tflite.evaluate)."""
import sys  # python_module("albert_tflite.evaluate") ran here
class A:
    """albert_tflite.benchmark times it."""
    def f(self, path):
        """albert-tflite-run --model=x runs it."""
        raise ValueError("or write it with `python -m albert_tflite.metadata`; run it with "
                         "albert-tflite-run --model=" + path + ".")
    x = 1
    """albert_tflite.runner: an attribute docstring."""
def missing(package):
    return package in ("albert_tf", "albert_tflite")
CMD = python_module("albert_tf.runtime.evaluate", "--model=x")
TOOL = ["albert-tf-benchmark", "--quick"]
''') == []


def test_the_library_runs_no_edge_tool():
    """No ``albert_tf`` module runs the edge tools in another process either (issue #31):
    no ``albert_tflite.*`` module name nor ``albert-tflite-*`` command in its code
    (`edge_tool_commands`); the pipeline runs `albert_tf.runtime.evaluate` and
    `albert_tf.benchmark.tflite_export`, whose CLIs ``albert_tflite`` wraps."""
    tools = next(name for name, folder in PACKAGES.items()
                 if os.path.basename(folder) == "tflite")
    scripts = edge_tool_scripts(tools)
    found = []
    for module, path in _modules({k: v for k, v in PACKAGES.items()
                                  if k.split(".")[0] == "albert_tf"}).items():
        with open(path, encoding="utf-8") as f:
            found += [f"{module}:{line} runs {value!r}"
                      for line, value in edge_tool_commands(f.read(), tools, scripts)]
    assert not found, ("the library runs its edge tools (run the albert_tf module that "
                       "holds the code instead):\n" + "\n".join(found))
