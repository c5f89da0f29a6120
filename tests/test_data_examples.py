"""`python -m albert_tf.data.examples` (docs/training.md, finetune --help): its task folders
are albert-tf outputs (`albert_tf.outputs.staged_output`, kind ``example data``), so a
folder of the user's is never written over (issue #44, fresh pass: ``--output_dir=userex``
replaced the user's ``userex/sst2_tags/train.tsv``). What the folders hold:
tests/test_heads_registry.py."""

from __future__ import annotations

import os

import pytest

from albert_tf import outputs
from albert_tf.data import examples


def _files(root) -> dict[str, bytes]:
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def test_a_users_folder_is_refused_before_anything_is_written(tmp_path, data_dir, capsys):
    user = tmp_path / "userex"
    (user / "sst2_tags").mkdir(parents=True)
    (user / "sst2_tags" / "train.tsv").write_text("my own data\n")
    before = _files(user)
    with pytest.raises(outputs.OutputError, match=r"--output_dir/sst2_tags=.*userex/sst2_tags "
                       "holds files albert-tf did not write"):
        examples.build_examples(str(user), data_dir)
    with pytest.raises(SystemExit) as exited:     # the command: one line, exit 2
        examples.main([f"--output_dir={user}", f"--data_dir={data_dir}", "--overwrite"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m albert_tf.data.examples: error: --output_dir/sst2_tags=")
    assert err.count("\n") == 1 and "nothing was touched" in err
    assert _files(user) == before and sorted(os.listdir(user)) == ["sst2_tags"]  # no rte_choice


def test_its_own_folders_are_replaced_only_with_overwrite(tmp_path, data_dir):
    out = str(tmp_path / "ex")
    built = examples.build_examples(out, data_dir)
    assert sorted(built) == ["rte_choice", "sst2_tags"]
    for path in built.values():
        assert outputs.marker_kind(path) == outputs.EXAMPLE_DATA
        assert sorted(os.listdir(path)) == [outputs.MARKER_FILE, "dev.tsv", "train.tsv"]
    first = _files(out)
    with pytest.raises(outputs.OutputError, match=r"rte_choice already exists \(an earlier "
                       "albert-tf output: an example task's data written by python -m "
                       r"albert_tf.data.examples\); pass --overwrite"):
        examples.build_examples(out, data_dir)
    examples.build_examples(out, data_dir, overwrite=True)
    again = _files(out)
    assert {k: v for k, v in again.items() if outputs.MARKER_FILE not in k} == \
        {k: v for k, v in first.items() if outputs.MARKER_FILE not in k}   # deterministic
    with pytest.raises(outputs.OutputError, match="lies inside --data_dir="):
        examples.build_examples(os.path.join(data_dir, "examples"), data_dir)


def test_cloze_squad_questions_are_spans_of_their_contexts(data_dir):
    """`examples.cloze_squad` (the mobile-SDK span study's data): every answer sits at its
    ``answer_start`` and is what "what" replaced in the question; the held-out items come as
    an app sends them (every third upper-cased); the same seed gives the same items."""
    train, held_out = examples.cloze_squad(data_dir, 60, 9)
    assert len(train) == 60 and len(held_out) == 9
    for it in train:
        start = it["answer_start"]
        assert it["context"][start:start + len(it["answer"])] == it["answer"]
        assert "what" in it["question"] and it["question"].endswith("?")
        assert examples.NAME_OR_NUMBER.match(it["answer"].split()[0])
    assert held_out[1]["question"] == held_out[1]["question"].upper()
    assert not {it["context"] for it in held_out} & {it["context"] for it in train}
    assert examples.cloze_squad(data_dir, 60, 9) == (train, held_out)
    squad = examples.squad_json(train[:2])
    (paragraph, _) = squad["data"][0]["paragraphs"]
    assert paragraph["qas"][0]["answers"][0]["text"] == train[0]["answer"]
