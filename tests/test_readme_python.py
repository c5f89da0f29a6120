"""The README's ```python blocks run as written (issue #44: "every documented example
runs"): each block, in README order, executed in one namespace in an empty temporary
directory (no training, no data: builds, one forward pass, a save and a load), so an API
example cannot rot. The ``bash`` blocks are the tour's (tools/tour.py, tests/test_tour.py)."""

from __future__ import annotations

import os
import re

from tests.repo_files import ROOT

_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(first line number, code)`` of every ```python block of a Markdown text."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_python_blocks_are_extracted_with_their_line():
    text = "# t\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(4, "x = 1\n"), (11, "y = 2\n")]


def test_every_readme_python_block_runs(tmp_path, monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = python_blocks(f.read())
    assert blocks, "README.md has no ```python block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for line, code in blocks:
        exec(compile(code, f"README.md:{line}", "exec"), namespace)   # noqa: S102
    # what the API block's comments promise: the models' dicts of outputs, a model
    # directory written where the user stands and read back
    ids = namespace["ids"]
    features = {"input_word_ids": ids, "input_mask": ids * 0 + 1, "input_type_ids": ids * 0}
    assert set(namespace["encoder"](features)) == {"sequence_output", "pooled_output"}
    assert {"mlm_logits", "sop_logits"} <= set(namespace["pretrainer"](features))
    assert tuple(namespace["logits"].shape) == (1, 2)
    assert os.path.isfile(tmp_path / "my_model" / "config.json")
