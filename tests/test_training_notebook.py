"""The Colab notebook executes headless on CPU (tiny config, TPU fallback path)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "notebooks", "albert_tf_colab.ipynb")


def notebook_code() -> str:
    with open(NOTEBOOK, encoding="utf-8") as f:
        notebook = json.load(f)
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    for cell in cells:
        assert not cell.lstrip().startswith(("!", "%")), "cells must be plain Python"
    return "\n\n".join(cells)


@pytest.mark.slow
def test_notebook_runs_headless_on_cpu(tmp_path, data_dir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", ALBERT_TF_NOTEBOOK_TINY="1",
               ALBERT_TF_NOTEBOOK_WORK=str(tmp_path), ALBERT_TF_DATA_DIR=data_dir)
    env.pop("TF_CONFIG", None)
    result = subprocess.run([sys.executable, "-c", notebook_code()], cwd=os.path.join(ROOT, "notebooks"),
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "strategy: one_device" in result.stdout
    assert "no TPU:" in result.stdout
    assert "rte {" in result.stdout
    assert os.path.isdir(tmp_path / "pretrain" / "final")
    assert os.path.isdir(tmp_path / "finetune_rte" / "final")
