"""Every console script's ``--help`` examples (issue #44, "every documented example runs").

`tools/tour.py --help-examples` (`.ci/run full`) runs them after the tour, in a copy of its
directory. Here, without running any of them: what the harness extracts from a help text
and how it caps and skips examples, that the examples of every console script are written
in the tour's layout and read only what the tour or an earlier example writes
(`lint_examples`), that the skip marker is rare, and that ``--help`` prints the docstrings
the examples are read from, with their line continuations intact and no issue numbers.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.console_scripts import env, path
from tests.repo_files import ROOT, load_tour

tour = load_tour()

HELP = """albert-tf-x: a title line (not an example).

    albert-tf-x --a=1                  # a comment # with a hash
    albert-tf-x --b="two words #1" \\
        --c=3   # [not run: needs the network]
        # a comment line under it
  albert-tf-x
Prose naming albert-tf-x --d=4 is not an example, nor is an unindented
albert-tf-x --e=5
    albert-tf-xy --f=6                 # another program
"""


@pytest.fixture(scope="module")
def examples():
    return tour.documented_examples()


def test_examples_are_indented_lines_starting_with_the_program_continuations_joined():
    found = tour.help_examples("albert-tf-x", HELP)
    assert [(c.text, c.line, c.source) for c in found] == [
        ("albert-tf-x --a=1                  # a comment # with a hash", 3, "albert-tf-x --help"),
        ('albert-tf-x --b="two words #1"         --c=3   # [not run: needs the network]', 4,
         "albert-tf-x --help"),
        ("albert-tf-x", 7, "albert-tf-x --help")]
    assert [tour.not_run(c) for c in found] == [None, "needs the network", None]


def test_caps_go_before_the_comment_and_quoted_hashes_stay():
    first, second, bare = tour.help_examples("albert-tf-x", HELP)
    assert tour.without_comment(second.text) == 'albert-tf-x --b="two words #1"         --c=3'
    finetune = tour.Command("x", "albert-tf-finetune --task=sst2 --model_dir=r  # train", 1)
    assert tour.capped(finetune).text == "albert-tf-finetune --task=sst2 --model_dir=r " + \
        " ".join(tour.HELP_CAPS["albert-tf-finetune"])
    assert tour.capped(first).text == "albert-tf-x --a=1"          # no cap for it


def test_the_harness_runs_every_console_script_in_a_fixed_order(examples):
    assert sorted(tour.HELP_ORDER) == sorted(examples) == sorted(tour.console_scripts())
    order = tour.HELP_ORDER
    # what reads an earlier command's output runs after it
    for first, then in (("albert-tf-create-pretraining-data", "albert-tf-pretrain"),
                        ("albert-tf-pretrain", "albert-tf-finetune"),
                        ("albert-tf-compress", "albert-tf-export"),
                        ("albert-tf-compress", "albert-tflite-run")):
        assert order.index(first) < order.index(then)


def test_every_example_runs_in_the_tour_layout_and_reads_what_was_written(examples):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        commands = tour.extract(f.read())
    assert tour.lint_examples(commands, examples) == []
    texts = " ".join(c.text for found in examples.values() for c in found)
    for layout in ("runs/sst2/best", "edge/sst2_int8", "serving/sst2/1", "server/sst2_ort",
                   "runs/sst2_pruned"):
        assert layout in texts
    # the export takes the model directory, never the run directory (it refuses that)
    for c in examples["albert-tf-export"]:
        assert not re.search(r"--model_dir=runs/sst2(\s|$)", c.text), c.text


def test_lint_catches_what_an_example_would_fail_on():
    tour_commands = [tour.Command("1", "albert-tf-finetune --task=sst2 --model_dir=runs/sst2",
                                  1)]
    bad = {"albert-tf-export": tour.help_examples("albert-tf-export", """
    albert-tf-export --model_dir=runs/other/best --format=onnx --output=o
    albert-tf-export --model_dir=/tmp/sst2/best --format=onnx --output=p
""")}
    problems = tour.lint_examples(tour_commands, bad)
    assert any("reads runs/other/best, which no earlier" in p for p in problems), problems
    assert any("/tmp/" in p for p in problems), problems
    assert tour.lint_examples(tour_commands, {"albert-tf-info": []}) == [
        "albert-tf-info: no example in its --help"]


def test_the_skip_marker_is_used_sparingly(examples):
    marked = [c for found in examples.values() for c in found if tour.not_run(c)]
    everything = [c for found in examples.values() for c in found]
    assert len(marked) <= tour.MAX_NOT_RUN <= 4
    assert len(marked) * 10 <= len(everything)
    for c in marked:     # only what needs the network or files the tour does not have
        assert re.search(r"network|download|converted elsewhere", tour.not_run(c)), c.text
    too_many = {"albert-tf-info": [tour.Command("albert-tf-info", f"albert-tf-info  # [not run: "
                                                f"{i}]", i) for i in range(5)]}
    one_command = [tour.Command("1", "albert-tf-info", 1)]
    assert any("marked [not run" in p for p in tour.lint_examples(one_command, too_many))


def test_help_texts_name_no_issue_numbers_and_keep_their_continuations():
    for program, file in tour.entry_points().items():
        with open(file, encoding="utf-8") as f:
            source = f.read()
        doc = tour.ast.get_docstring(tour.ast.parse(source), clean=False) or ""
        assert not re.search(r"issue #|#\d\d", doc), program
        # In a docstring that is not raw, a line ending in one backslash is joined with
        # the next by Python: --help would show the example as one collapsed line.
        literal = source[source.index('"""') + 3:source.index('"""', source.index('"""') + 3)]
        if source[source.index('"""') - 1:source.index('"""')] != "r":
            assert not re.search(r"(?<!\\)\\\n", literal), f"{program}: write \\\\ in {file}"


@pytest.mark.parametrize("program", ["albert-tf-benchmark", "albert-tflite-evaluate",
                                     "albert-tf-create-pretraining-data"])
def test_help_prints_the_documented_examples(program, examples, tmp_path):
    """What --help prints is what the harness reads: the docstring, continuations kept
    (albert-tf-benchmark's were collapsed into one line by a non-raw docstring)."""
    out = subprocess.run([path(program), "--help"], cwd=tmp_path, env=env(), text=True,
                         capture_output=True, timeout=120).stdout
    shown = [c.text for c in tour.help_examples(program, out)]
    assert shown == [c.text for c in examples[program]]
    assert any(line.rstrip().endswith("\\") for line in out.splitlines()
               if line.lstrip().startswith(program))


def test_full_ci_runs_the_help_examples():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    full = re.search(r"^\s*full\).*$", ci, re.MULTILINE).group(0)
    gate = re.search(r"^\s*gate\).*$", ci, re.MULTILINE).group(0)
    assert "--help-examples" in full and "--help-examples" not in gate
