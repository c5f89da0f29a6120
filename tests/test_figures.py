"""Figures by command (issue #31): every table in docs/ names the command that regenerates it.

* every figure of ``benchmarks/figures.py`` names a docs file that exists and a heading in it;
* every markdown table in ``docs/*.md`` (a run of lines starting with ``|`` outside code
  fences) has, between the heading above it and its first line (code blocks included), a line
  that names where it comes from: ``make figures NAME=...``, another make target in backticks,
  an ``albert-tf-*`` command, ``python -m albert_tf.<module>`` (tables generated from a
  registry), ``pytest`` / ``--update-docs``, or a ``Source:`` line for tables that are
  reference, not measurement;
* ``figures.py --list`` runs without importing TensorFlow, and an unknown name is a one-line
  error with exit status 2.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES_PY = os.path.join(ROOT, "benchmarks", "figures.py")
DOCS = os.path.join(ROOT, "docs")

# What counts as naming a table's command or source (see the module docstring).
SOURCE_LINE = re.compile(r"make figures NAME=|`make [a-z]|albert-tf-[a-z]|python -m albert_tf\."
                         r"|pytest|--update-docs|(^|\s)Source:")
HEADING = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")


def load_figures():
    """benchmarks/figures.py as a module (it imports no TensorFlow at import time)."""
    if "figures_under_test" not in sys.modules:
        spec = importlib.util.spec_from_file_location("figures_under_test", FIGURES_PY)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module        # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["figures_under_test"]


def markdown_tables(text: str) -> list[tuple[int, str, list[str]]]:
    """(1-based line of the table's first row, the heading above it, the section's lines
    between that heading and the table) for every table outside code fences."""
    tables = []
    heading, section, fenced, in_table = "(top of file)", [], False, False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            section.append(line)
            in_table = False
            continue
        if not fenced and HEADING.fullmatch(line):
            heading, section, in_table = HEADING.fullmatch(line).group(1), [], False
            continue
        if not fenced and line.startswith("|"):
            if not in_table:
                tables.append((number, heading, list(section)))
            in_table = True
        else:
            in_table = False
        section.append(line)
    return tables


def headings(path: str) -> set[str]:
    found, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
            elif not fenced and HEADING.fullmatch(line.rstrip("\n")):
                found.add(HEADING.fullmatch(line.rstrip("\n")).group(1))
    return found


def tables_without_source() -> list[str]:
    missing = []
    pages = [name for name in os.listdir(DOCS) if name.endswith(".md")]
    if os.path.isdir(os.path.join(DOCS, "results")):    # the measured runs, one page each
        pages += [f"results/{name}" for name in os.listdir(os.path.join(DOCS, "results"))
                  if name.endswith(".md")]
    for name in sorted(pages):
        with open(os.path.join(DOCS, name), encoding="utf-8") as f:
            text = f.read()
        for number, heading, section in markdown_tables(text):
            if not any(SOURCE_LINE.search(line) for line in section):
                missing.append(f"docs/{name}:{number} (under '{heading}')")
    return missing


def test_every_figure_names_an_existing_docs_heading():
    figures = load_figures().FIGURES
    assert figures
    for figure in figures.values():
        path = os.path.join(ROOT, figure.doc)
        assert os.path.isfile(path), f"{figure.name}: no docs file {figure.doc}"
        assert figure.heading in headings(path), \
            f"{figure.name}: no heading {figure.heading!r} in {figure.doc}"
        assert figure.minutes > 0 and figure.summary, figure.name


def test_every_docs_table_names_its_command_or_source():
    missing = tables_without_source()
    assert not missing, (
        "markdown tables with no regenerating command or source line between their heading and "
        "the table (`make figures NAME=...`, a `make ...` target, albert-tf-*, python -m "
        "albert_tf.<module>, pytest / --update-docs, or 'Source:'):\n  " + "\n  ".join(missing))


def test_the_table_rule_itself():
    text = ("# A\n\nprose\n\n| a |\n|---|\n\n## B\n\nSource: reference.\n\n| b |\n\n"
            "## C\n\n```bash\nalbert-tf-benchmark --models=x\n```\n\n| c |\n| c |\n"
            "text between\n| d |\n")
    tables = markdown_tables(text)
    assert [(n, h) for n, h, _ in tables] == [(5, "A"), (12, "B"), (20, "C"), (23, "C")]
    found = [any(SOURCE_LINE.search(line) for line in section) for _, _, section in tables]
    assert found == [False, True, True, True]


def _figures(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, FIGURES_PY, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_list_prints_every_figure_without_tensorflow():
    figures = load_figures().FIGURES
    done = _figures("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == sorted(figures)
    for line in lines:
        name = line.split()[0]
        assert f" min  {figures[name].doc} # {figures[name].heading}" in line
    probe = ("import runpy, sys\nsys.argv = [sys.argv[1], '--list']\n"
             "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print('IMPORTED' if 'tensorflow' in sys.modules else 'CLEAN')\n")
    done = subprocess.run([sys.executable, "-c", probe, FIGURES_PY], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "CLEAN", done.stdout[-500:] + done.stderr[-500:]


@pytest.mark.parametrize("args", [("no-such-figure",), ("no-such-figure", "--flag")])
def test_unknown_figure_is_a_one_line_error(args):
    done = _figures(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-figure" in lines[0] and "--list" in lines[0], done.stderr


def test_make_figures_target():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    assert re.search(r"^figures:", makefile, re.M)
    assert re.search(r"^\.PHONY:.*\bfigures\b", makefile, re.M)
    assert "benchmarks/figures.py" in makefile
