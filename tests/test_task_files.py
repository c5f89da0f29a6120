"""A custom task's files (``task.train_file``, ``dev_file``, ``test_file``; issue #44): a
relative path is read where the user stands, else from the data directory, and an error
names both places when neither has it (`albert_tf.training.preflight.task_file`)."""

from __future__ import annotations

import os
import types

import pytest

from albert_tf.data.task_data import TaskDataError
from albert_tf.training import preflight

ROWS = "sentence\tlabel\na gorgeous film\t1\ndull and lifeless\t0\n"


def _task(**files) -> types.SimpleNamespace:
    fields = dict(name="mine", train_file="", dev_file="", test_file="", data_dir="")
    return types.SimpleNamespace(**{**fields, **files})


@pytest.fixture
def places(tmp_path, monkeypatch):
    """``(cwd, data)``: the current directory and a data directory, each with a train.tsv
    of its own, and a dev.tsv only in the data directory."""
    cwd, data = tmp_path / "here", tmp_path / "data"
    for directory, names in ((cwd, ("train.tsv",)), (data, ("train.tsv", "dev.tsv"))):
        os.makedirs(directory)
        for name in names:
            (directory / name).write_text(ROWS, encoding="utf-8")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("ALBERT_TF_DATA_DIR", raising=False)
    return str(cwd), str(data)


def test_relative_files_are_read_here_first_then_from_the_data_directory(places):
    cwd, data = places
    task = _task(train_file="train.tsv", dev_file="dev.tsv")
    assert preflight.task_file(task, "train_file", data) == os.path.join(cwd, "train.tsv")
    assert preflight.task_file(task, "dev_file", data) == os.path.join(data, "dev.tsv")
    assert preflight.task_file(task, "test_file", data) is None
    absolute = os.path.join(data, "train.tsv")
    assert preflight.task_file(_task(train_file=absolute), "train_file", None) == absolute


def test_a_file_in_neither_place_is_one_line_naming_both(places):
    cwd, data = places
    with pytest.raises(TaskDataError) as missing:
        preflight.task_file(_task(train_file="nope.tsv"), "train_file", data)
    message = str(missing.value)
    assert "task.train_file=nope.tsv is neither in the current directory" in message
    assert os.path.join(cwd, "nope.tsv") in message and os.path.join(data, "nope.tsv") in message
    with pytest.raises(TaskDataError, match="and there is no data directory to look in "
                                            r"\(pass --data_dir=DIR or set ALBERT_TF_DATA_DIR"):
        preflight.task_file(_task(train_file="nope.tsv"), "train_file", None)
    with pytest.raises(TaskDataError, match="no such file"):
        preflight.task_file(_task(train_file=os.path.join(cwd, "nope.tsv")), "train_file", data)


def test_the_preflight_resolves_the_files_and_needs_no_data_directory_for_local_ones(
        places, monkeypatch):
    cwd, data = places
    local = _task(train_file="train.tsv")
    assert not preflight.needs_data_dir(local)
    assert preflight.needs_data_dir(_task(train_file="train.tsv", dev_file="dev.tsv"))
    assert preflight.needs_data_dir(_task(name="sst2"))
    task = _task(train_file="train.tsv", dev_file="dev.tsv", data_dir=data)
    preflight.resolve_task_files(task)        # what experiment.yaml then records
    assert (task.train_file, task.dev_file, task.test_file) == (
        os.path.join(cwd, "train.tsv"), os.path.join(data, "dev.tsv"), "")
    assert not preflight.needs_data_dir(task)
    monkeypatch.setenv("ALBERT_TF_DATA_DIR", data)   # the variable is the data directory too
    env_task = _task(train_file="train.tsv", dev_file="dev.tsv")
    preflight.resolve_task_files(env_task)
    assert env_task.dev_file == os.path.join(data, "dev.tsv")


@pytest.mark.slow
def test_the_training_library_reads_the_same_files(places):
    """`tasks.load_task_data` (what finetuning reads, TensorFlow imported) takes the
    current directory's train.tsv over the data directory's, and its dev.tsv from there."""
    from albert_tf.training.tasks import custom_task_files, load_task_data
    cwd, data = places
    with open(os.path.join(cwd, "train.tsv"), "a", encoding="utf-8") as f:
        f.write("one more local row\t1\n")      # 3 rows here, 2 in the data directory
    task = types.SimpleNamespace(name="mine", train_file="train.tsv", dev_file="dev.tsv",
                                 test_file="", data_dir=data, text_a_column="sentence",
                                 text_b_column="", label_column="label", has_header=True,
                                 is_regression=False, label_list=[], metric="", type="")
    assert custom_task_files(task) == (os.path.join(cwd, "train.tsv"),
                                       os.path.join(data, "dev.tsv"), None)
    loaded = load_task_data(task)
    assert (len(loaded.train), len(loaded.dev)) == (3, 2)
