"""Figures by command (issue #31): every table in docs/ names the command that regenerates it.

* every figure of ``studies/figures.py`` names a docs file that exists and a heading in it;
* every markdown table in ``docs/*.md`` (a run of lines starting with ``|`` outside code
  fences) has, between the heading above it and its first line (code blocks included), a line
  that names where it comes from: ``make figures NAME=...``, another make target in backticks,
  an ``albert-tf-*`` command, ``python -m albert_tf.<module>`` (tables generated from a
  registry), ``pytest`` / ``--update-docs``, or a ``Source:`` line for tables that are
  reference, not measurement;
* ``figures.py --list`` runs without importing TensorFlow, and an unknown name is a one-line
  error with exit status 2.

The registry is read from ``figures.py --list --json`` in a child process: no test imports a
script of studies/.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES_PY = os.path.join(ROOT, "studies", "figures.py")
DOCS = os.path.join(ROOT, "docs")

# What counts as naming a table's command or source (see the module docstring).
SOURCE_LINE = re.compile(r"make figures NAME=|`make [a-z]|albert-tf-[a-z]|python -m albert_tf\."
                         r"|pytest|--update-docs|(^|\s)Source:")
HEADING = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")


class Figure(types.SimpleNamespace):
    """One entry of ``figures.py --list --json`` (name, doc, heading, minutes, summary,
    command)."""


@functools.lru_cache(maxsize=1)
def registered_figures() -> dict[str, Figure]:
    """The figures of studies/figures.py by name, from ``--list --json``."""
    done = _figures("--list", "--json")
    assert done.returncode == 0, done.stderr
    return {entry["name"]: Figure(**entry) for entry in json.loads(done.stdout)}


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
    figures = registered_figures()
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
    figures = registered_figures()
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


def test_every_script_figure_names_an_existing_script():
    for figure in registered_figures().values():
        if figure.command.startswith("python studies/"):
            path = figure.command.split()[1]
            assert os.path.isfile(os.path.join(ROOT, path)), f"{figure.name}: no {path}"


def test_a_figure_without_its_data_directory_is_one_line(tmp_path):
    """The scripts resolve their data through albert_tf.resources: $ALBERT_TF_DATA_DIR
    naming a missing directory stops a figure in one line naming it (pretraining-data-beam
    reads its data before any work)."""
    missing = str(tmp_path / "elsewhere")
    done = subprocess.run([sys.executable, FIGURES_PY, "pretraining-data-beam",
                           f"--workdir={tmp_path / 'work'}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "ALBERT_TF_DATA_DIR": missing})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and missing in lines[0] and "ALBERT_TF_DATA_DIR" in lines[0], lines
    assert not (tmp_path / "work").exists()


def test_script_main_passes_arguments_and_exit_status(tmp_path):
    """`albert_tf.cli.script_main`, the scripts' main block: argv to ``main(argv)``, its int
    result as the exit status; arguments to a ``main()`` without parameters are an error."""
    script = tmp_path / "script.py"
    script.write_text('"""The script\'s help."""\n'
                      "import sys\nfrom albert_tf.cli import script_main\n"
                      "def with_args(argv):\n    print(argv)\n    return 3\n"
                      "def without():\n    print('ran')\n"
                      "script_main(with_args if sys.argv[1:2] == ['a'] else without)\n")

    def run(*args):
        return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, timeout=60)
    done = run("a", "--b=1")
    assert (done.returncode, done.stdout) == (3, "['a', '--b=1']\n"), done.stderr
    done = run()
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    done = run("x")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "takes no arguments (got x)" in done.stderr
    done = run("--help")
    assert (done.returncode, done.stdout) == (0, "The script's help.\n"), done.stderr


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
    assert "studies/figures.py" in makefile
