"""A run's task data and vocabulary (issue #44, fresh pass): a GLUE task is read only from
its own folder, a custom task's files are read whole (an unknown label is an error naming
the file and the line, never a dropped row), the split a mode reads exists, and the
vocabulary fits the model; all without TensorFlow (`albert_tf.data.task_checks`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types

import pytest

from albert_tf.data import task_checks
from albert_tf.data.task_data import (TaskDataError, find_glue_task_dir, load_task,
                                      load_tsv_task)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


def _glue(root, directory: str, rows: str = "sentence\tlabel\na film\t1\n") -> str:
    path = os.path.join(root, directory)
    os.makedirs(path)
    for split in ("train", "dev"):
        with open(os.path.join(path, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write(rows)
    return path


def test_another_tasks_folder_is_not_read_as_this_task(tmp_path):
    """``--data_dir=.../glue/CoLA`` for sst2 scored CoLA's dev set as SST-2 (0.4283 on 516
    examples, exit 0): the data directory itself was a candidate folder of every task."""
    cola = _glue(tmp_path / "glue", "CoLA")
    with pytest.raises(TaskDataError, match=r"glue/CoLA is the folder of GLUE task cola "
                                            r"\(CoLA/\), not task sst2's: .*DATA_DIR/glue/SST-2/"):
        load_task("sst2", cola)
    with pytest.raises(TaskDataError, match="is the folder of GLUE task cola"):
        find_glue_task_dir(cola, "SST-2")
    mine = _glue(tmp_path, "mydata")             # a folder of a task's files, not named so
    with pytest.raises(TaskDataError, match=r"mydata/, holding train.tsv\) that is not "
                                            "SST-2's"):
        load_task("sst2", mine)
    sst2 = _glue(tmp_path / "glue", "SST-2")     # the task's own folder, the data root, glue/
    for data_dir in (sst2, str(tmp_path), str(tmp_path / "glue")):
        assert find_glue_task_dir(data_dir, "sst2") == sst2
        assert len(load_task("sst2", data_dir).dev) == 1
    assert find_glue_task_dir(str(tmp_path / "glue"), "rte") is None   # missing: not found


def _custom(tmp_path, dev_rows: str, train_rows: str = "neg\nneg\npos\n"):
    train, dev = tmp_path / "train.tsv", tmp_path / "dev.tsv"
    train.write_text("text\tlab\n" + "".join(f"a text\t{label}\n"
                                             for label in train_rows.split()))
    dev.write_text("text\tlab\n" + dev_rows)
    return str(train), str(dev)


def test_a_custom_tasks_unknown_label_names_the_file_and_the_line(tmp_path):
    """A dev row labeled ``neutral`` among neg/pos was dropped in silence ("examples 4" of
    5); a dev file of labels 0/1 for a task of neg/pos was read as empty (a 68-line
    traceback: "the 'dev' split is empty (missing file?)")."""
    train, dev = _custom(tmp_path, "good\tpos\nbad\tneg\nmeh\tneutral\n")
    with pytest.raises(TaskDataError) as e:
        load_tsv_task(train, dev, text_a_column="text", label_column="lab")
    assert str(e.value).startswith(f"{dev}, line 4: label 'neutral' is not one of the task's "
                                   f"labels (neg, pos: the labels of the train file {train})")
    train, dev = _custom(tmp_path, "good\t1\n")
    with pytest.raises(TaskDataError, match=r"dev.tsv, line 2: label '1' is not one of"):
        load_tsv_task(train, dev, text_a_column="text", label_column="lab")
    with pytest.raises(TaskDataError, match=r"train.tsv, line 4: label 'pos' is not one of "
                                            r"the task's labels \(neg, x: task.label_list\)"):
        load_tsv_task(train, None, text_a_column="text", label_column="lab",
                      label_list=["neg", "x"])
    train, dev = _custom(tmp_path, "good\tpos\na tab\tinside\tneg\n")   # dropped before
    with pytest.raises(TaskDataError, match=r"dev.tsv, line 3: 3 tab-separated fields where "
                                            r"the header has 2 \(a tab inside a text\?\)"):
        load_tsv_task(train, dev, text_a_column="text", label_column="lab")
    train, dev = _custom(tmp_path, "good\tpos\n")
    task = load_tsv_task(train, dev, text_a_column="text", label_column="lab")
    assert len(task.dev) == 1 and task.label_list == ["neg", "pos"]


def _task(**fields):
    values = dict(name="mine", train_file="", dev_file="", test_file="", data_dir="")
    values.update(fields)
    return types.SimpleNamespace(**values)


def test_the_split_a_mode_reads_must_exist(tmp_path, data_dir):
    """``--mode=predict`` of a custom task without a test file ended in a traceback; now one
    line naming ``task.test_file``; a GLUE folder without the split says so."""
    custom = _task(train_file="t.tsv", dev_file="d.tsv")
    task_checks.check_split_files(custom, "eval")
    task_checks.check_split_files(custom, "train")
    with pytest.raises(TaskDataError, match=r"--mode=predict reads the test split, and task "
                                            r"'mine' has none: pass its file with "
                                            r"--params_override=task.test_file=FILE"):
        task_checks.check_split_files(custom, "predict")
    with pytest.raises(TaskDataError, match=r"task.dev_file=FILE .*\(or --mode=train"):
        task_checks.check_split_files(_task(train_file="t.tsv"), "train_and_eval")
    with pytest.raises(TaskDataError, match=r"test split of task cola, and .*glue/CoLA has "
                                            "no test.tsv"):
        task_checks.check_split_files(_task(name="cola", data_dir=data_dir), "predict")
    task_checks.check_split_files(_task(name="sst2", data_dir=data_dir), "predict")
    with pytest.raises(TaskDataError, match="is the folder of GLUE task cola"):
        task_checks.check_split_files(
            _task(name="sst2", data_dir=os.path.join(data_dir, "glue", "CoLA")), "eval")


def _config(model_config="", init="", vocab="", overrides=None):
    from albert_tf.training.experiment_config import ExperimentConfig
    config = ExperimentConfig()
    config.model.config = model_config
    config.model.init_checkpoint = init
    config.task.vocab_file = vocab
    config.task.do_lower_case = None
    for key, value in (overrides or {}).items():
        setattr(config.model, key, value)
    return config


def test_the_vocabulary_must_fit_the_model(tmp_path):
    """``--model_config=bert_tiny`` (1000 rows) with the 8000-token default vocabulary failed
    after ~9 s of loading TensorFlow; a model directory whose vocabulary was swapped for a
    2000-piece one evaluated to 0.50 and exit 0 where albert-tf-export refused it."""
    from albert_tf.hyperparams import ConfigValueError
    from albert_tf.text.spm_training import VocabularyError
    with pytest.raises(ConfigValueError, match=r"the default vocabulary official_configs/vocab/"
                                               r"imdb_pydocs_8k.model has 8000 tokens but the "
                                               r"model's embedding \(bert_tiny: model.vocab_size\)"
                                               r" has 1000 rows: .*model.vocab_size=8000"):
        task_checks.check_model_vocabulary(_config("bert_tiny"))
    task_checks.check_model_vocabulary(_config("bert_tiny", overrides={"vocab_size": 8000}))
    task_checks.check_model_vocabulary(_config("albert_base"))    # 30000 rows: fits
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(os.path.join(ROOT, "official_configs", "models", "albert_tiny.json"),
                model / "config.json")
    special = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    (model / "vocab.txt").write_text(special + "".join(f"t{i}\n" for i in range(995)))
    task_checks.check_model_vocabulary(_config(init=str(model)))   # 1000 and 1000
    (model / "vocab.txt").write_text(special + "".join(f"t{i}\n" for i in range(595)))
    with pytest.raises(VocabularyError, match=r"--init_checkpoint=.*model: the vocabulary "
                                              r".*vocab.txt has 600 tokens but the model's "
                                              r"vocab_size \(config.json\) is 1000"):
        task_checks.check_model_vocabulary(_config(init=str(model)))


def test_the_checks_import_no_tensorflow():
    code = ("import sys\nimport albert_tf.data.task_checks, albert_tf.runtime.evaluate\n"
            "print(sorted(m for m in ('tensorflow', 'keras', 'tf_keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]", out


BLOCK_TENSORFLOW = """
import importlib.abc, sys
from importlib import metadata
class TensorFlowImportedAfterTheChecks(BaseException):
    pass
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "tf_keras", "keras"):
            raise TensorFlowImportedAfterTheChecks(name)
sys.meta_path.insert(0, Block())
sys.argv = sys.argv[1:]
entry = next(e for e in metadata.entry_points(group="console_scripts") if e.name == sys.argv[0])
sys.exit(entry.load()())
"""


@pytest.mark.parametrize("trained, given", [("SST-2", "sst2"), ("sst2", "SST-2")])
def test_a_tasks_names_are_one_task(tmp_path, data_dir, trained, given):
    """A run trained with --task=SST-2 refused --mode=eval --task=sst2 ("trained on SST-2"),
    and the reverse: task names compare by their GLUE key. The eval passes every check made
    before TensorFlow loads (here, where it may not load, that is where it stops)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "experiment.yaml").write_text(f"task:\n  type: classification\n  name: {trained}\n")
    (run / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    for name in ("ckpt-1.index", "ckpt-1.data-00000-of-00001"):
        (run / name).write_bytes(b"")
    process = subprocess.run(
        [sys.executable, "-c", BLOCK_TENSORFLOW, "albert-tf-finetune", "--mode=eval",
         f"--task={given}", f"--model_dir={run}", f"--data_dir={data_dir}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "TensorFlowImportedAfterTheChecks" in process.stderr, process.stderr
    assert "was trained on" not in process.stderr


def _tfrecord(path, payload: bytes = b"x" * 20) -> None:
    import struct
    from albert_tf.data.input_checks import masked_crc32c
    length = struct.pack("<Q", len(payload))
    with open(path, "wb") as f:
        f.write(length + struct.pack("<I", masked_crc32c(length)) + payload
                + struct.pack("<I", masked_crc32c(payload)))


@pytest.mark.parametrize("kind", ["tfrecord", "binary"])
def test_pretraining_data_is_made_from_text_only(tmp_path, kind):
    """A TFRecord --input_file made 497,806 records from binary data (exit 0); a binary one
    "0 document(s)", and that failed rerun deleted the earlier complete output. Now refused
    before any work (and before TensorFlow loads): the earlier output is untouched."""
    source = tmp_path / f"input.{kind}"
    if kind == "tfrecord":
        _tfrecord(source)
    else:
        source.write_bytes(bytes(range(256)))
    out = tmp_path / "pt"
    out.mkdir()
    earlier = {"a.tfrecord": b"earlier records", ".a.tfrecord.lock": b"",
               ".a.tfrecord.done.json": b"{}"}
    for name, data in earlier.items():
        (out / name).write_bytes(data)
    process = subprocess.run(
        [sys.executable, "-c", BLOCK_TENSORFLOW, "albert-tf-create-pretraining-data",
         f"--input_file={source}", f"--output_file={out / 'a.tfrecord'}",
         f"--vocab_file={VOCAB}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    lines = process.stderr.strip().splitlines()
    assert process.returncode != 0 and len(lines) == 1, process.stderr
    what = "is a TFRecord file, not raw text" if kind == "tfrecord" else \
        "is binary (NUL bytes), not UTF-8 text"
    assert f"--input_file: '{source}' {what}" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier


def test_the_other_custom_heads_read_every_row_too(tmp_path):
    """Multiple choice and token classification files dropped malformed rows and bad labels
    in silence (a dev tag the train file lacks: a KeyError when encoding)."""
    from albert_tf.data.task_data import (load_multiple_choice_task,
                                          load_token_classification_task)
    train, dev = tmp_path / "train.tsv", tmp_path / "dev.tsv"
    train.write_text("tokens\ttags\ngood film\tPOS O\ndull\tNEG\n")
    dev.write_text("tokens\ttags\na film\tO O\nmeh\tNEUTRAL\n")
    with pytest.raises(TaskDataError, match=r"dev.tsv, line 3: tag 'NEUTRAL' is not one of the "
                                            r"task's tags \(NEG, O, POS: the tags of the train "
                                            r"file .*train.tsv\)"):
        load_token_classification_task(str(train), str(dev))
    dev.write_text("tokens\ttags\na film\tO\n")
    with pytest.raises(TaskDataError, match=r"dev.tsv, line 2: 2 words but 1 tags"):
        load_token_classification_task(str(train), str(dev))
    dev.write_text("tokens\ttags\na film\tO O\n")
    assert len(load_token_classification_task(str(train), str(dev)).dev) == 1
    train.write_text("context\tchoice_0\tchoice_1\tlabel\nq\ta\tb\t1\n")
    dev.write_text("context\tchoice_0\tchoice_1\tlabel\nq\ta\tb\t0\nq\ta\tb\t2\n")
    with pytest.raises(TaskDataError, match=r"dev.tsv, line 3: label '2' is not the index of "
                                            r"one of its 2 choices"):
        load_multiple_choice_task(str(train), str(dev))
