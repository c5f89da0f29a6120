"""``albert-tf-info --configs`` (issue #44): the shipped configs by the names the commands
take, models and experiments, one line each with its description; before, mistyping a name
was the only way to see them."""

from __future__ import annotations

import re
import subprocess

from albert_tf import resources
from albert_tf.bin.info import first_sentence
from tests.console_scripts import env, path


def test_every_shipped_config_is_listed_once_with_its_line(tmp_path):
    out = subprocess.run([path("albert-tf-info"), "--configs"], cwd=tmp_path, env=env(),
                         text=True, capture_output=True, timeout=60, check=True).stdout
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    names = resources.model_config_names() + resources.experiment_names()
    assert sorted(rows) == sorted(names)
    assert "L=12 H=768 E=128 heads=12" in rows["albert_base"]
    assert "sharing none: 109,482,240 parameters" in rows["bert_base"]
    assert rows["compress_sst2_qat"].split(None, 1)[1] == (
        "Quantization-aware training with per-depth activation ranges; writes a full-int8 "
        "TFLite")
    assert not re.search(r"#\d", out)          # no issue numbers: they mean nothing to users
    headings = [line for line in out.splitlines() if not line.startswith("  ")]
    assert len(headings) == 2 and headings[0].startswith("model configs")


def test_the_description_is_the_first_sentence_of_the_leading_comment(tmp_path):
    yaml = tmp_path / "x.yaml"
    yaml.write_text("# Prune it, e.g. to 80% (Li et al. 2020). Then more.\n# next line\n"
                    "#   albert-tf-compress --config_file=x\nstages: [pruning]\n")
    assert first_sentence(str(yaml)) == "Prune it, e.g. to 80% (Li et al. 2020)"
    yaml.write_text("# A long line " + "word " * 40 + "\n")
    cut = first_sentence(str(yaml))
    assert len(cut) <= 100 and cut.endswith("...")
    yaml.write_text("stages: [qat]\n# a comment later\n")
    assert first_sentence(str(yaml)) == ""
