"""GLUE / TSV task loading and the classification tf.data pipeline."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from albert_tf.backend import tf
from albert_tf.data.task_data import (Example, TaskDataError, classification_dataset, load_task,
                                  load_tsv_task)
from albert_tf.text.tokenizer import AlbertTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


@pytest.fixture(scope="module")
def tok():
    return AlbertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def glue(data_dir):
    return os.path.join(data_dir, "glue")


def test_glue_counts_from_shared_data(glue):
    sst2, rte, cola = load_task("sst2", glue), load_task("rte", glue), load_task("cola", glue)
    assert (len(sst2.train), len(sst2.dev), len(sst2.test)) == (67349, 872, 1821)
    assert (len(rte.train), len(rte.dev), len(rte.test)) == (1244, 139, 1384)
    assert (len(cola.train), len(cola.dev)) == (8551, 516)
    assert sst2.metric == "accuracy" and cola.metric == "matthews" and rte.metric == "accuracy"
    assert rte.label_list == ["entailment", "not_entailment"] and sst2.label_list == ["0", "1"]
    assert all(e.text_b for e in rte.dev) and all(e.text_b is None for e in sst2.dev)
    assert {e.label for e in rte.test} == {"entailment", "not_entailment"}   # labeled re-split
    assert sum(sst2.skipped.values()) == sum(rte.skipped.values()) == 0
    assert load_task("SST-2", glue).dev == sst2.dev


def test_standard_glue_layout(tmp_path):
    cola = tmp_path / "CoLA"
    cola.mkdir()
    (cola / "train.tsv").write_text("gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
                                    "gj04\t0\t*\tThe more we study verbs.\n"
                                    "bad row without enough columns\n")
    (cola / "dev.tsv").write_text("gj04\t1\t\tA dev sentence.\n")
    (cola / "test.tsv").write_text("index\tsentence\n0\tA test sentence.\n")
    task = load_task("cola", str(tmp_path))
    assert task.train == [Example("The sailors rode the breeze clear of the rocks.", None, "1"),
                          Example("The more we study verbs.", None, "0")]
    assert task.skipped["train.tsv"] == 1
    assert task.test == [Example("A test sentence.", None, None)]
    mnli = tmp_path / "MNLI"
    mnli.mkdir()
    header = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
              "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n")
    row = "0\t1\t2\tgov\tx\tx\tx\tx\tA premise.\tA hypothesis.\tneutral\tneutral\n"
    (mnli / "train.tsv").write_text(header + row + row.replace("neutral", "maybe"))
    (mnli / "dev_matched.tsv").write_text(header + row)
    (mnli / "dev_mismatched.tsv").write_text(header + row)
    task = load_task("mnli", str(tmp_path))
    assert task.train == [Example("A premise.", "A hypothesis.", "neutral")]
    assert task.skipped["train.tsv"] == 1                  # unknown label
    assert len(task.dev) == 1 and len(task.extra_splits["dev_mismatched"]) == 1
    stsb = tmp_path / "STS-B"
    stsb.mkdir()
    (stsb / "train.tsv").write_text(
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
        "0\tm\tf\t2012\t1\ts\ts\tA plane.\tAn air plane.\t5.000\n")
    task = load_task("stsb", str(tmp_path))
    assert task.is_regression and task.label_list is None and task.train[0].label == 5.0
    assert task.metric == "pearson_spearman"


def test_missing_data_and_unknown_task(tmp_path):
    with pytest.raises(TaskDataError, match="unknown task"):
        load_task("nope", str(tmp_path))
    with pytest.raises(TaskDataError, match="RTE/train.tsv"):
        load_task("rte", str(tmp_path))


def test_tfds_fails_fast_offline(monkeypatch):
    import albert_tf.data.task_data as tasks
    monkeypatch.setattr(tasks, "_online", lambda timeout=3.0: False)
    start = time.time()
    with pytest.raises(TaskDataError, match="offline.*data_dir"):
        load_task("rte", None)
    assert time.time() - start < 30


def test_custom_tsv_and_csv(tmp_path, data_dir):
    mr = load_tsv_task(os.path.join(data_dir, "extra", "MR_train.tsv"),
                       os.path.join(data_dir, "extra", "MR_dev.tsv"),
                       text_a_column=1, label_column=0, has_header=False, name="mr")
    assert mr.label_list == ["0", "1"] and len(mr.train) > 5000 and len(mr.dev) > 1000
    csv_file = tmp_path / "pairs.csv"
    csv_file.write_text('q1,q2,score\n"Hello, there",General Kenobi,0.5\n')
    task = load_tsv_task(str(csv_file), text_a_column="q1", text_b_column="q2",
                         label_column="score", is_regression=True)
    assert task.train == [Example("Hello, there", "General Kenobi", 0.5)]
    assert task.skipped["pairs.csv"] == 0
    # A custom task's rows are all read (issue #44): a non-numeric score or a short row is
    # an error naming the line, where they were dropped in silence.
    for row, words in (("A,B,x", "line 3: score 'x' is not a finite number"),
                       ("only,two", "line 3: 2 ','-separated fields where the header has 3")):
        csv_file.write_text(f'q1,q2,score\n"Hello, there",General Kenobi,0.5\n{row}\n')
        with pytest.raises(TaskDataError, match=f"pairs.csv, {words}"):
            load_tsv_task(str(csv_file), text_a_column="q1", text_b_column="q2",
                          label_column="score", is_regression=True)
    with pytest.raises(TaskDataError, match="no column 'nope'"):
        load_tsv_task(str(csv_file), text_a_column="nope")
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes(b"sentence\tlabel\ncaf\xe9\t1\n")
    with pytest.raises(TaskDataError, match="latin1.tsv is not UTF-8"):
        load_tsv_task(str(bad))


def test_classification_dataset_padding_bucketing_determinism(glue, tok):
    task = load_task("rte", glue)
    kwargs = dict(tokenizer=tok, max_seq_length=128, batch_size=16, label_list=task.label_list)
    ds = classification_dataset(task.train, is_training=True, seed=1, **kwargs)
    batches = list(ds)
    assert sum(len(y) for _, y in batches) == len(task.train)
    padding = []
    for features, labels in batches:
        ids, mask = features["input_word_ids"].numpy(), features["input_mask"].numpy()
        assert ids.dtype == np.int32 and ids.shape == mask.shape and ids.shape[1] <= 128
        assert mask.sum(1).max() == ids.shape[1]                    # dynamic padding
        assert set(np.unique(labels.numpy())) <= {0, 1}
        padding.append(1 - mask.mean())
    # Length bucketing: far less padding than random batches of the same data.
    lengths = np.array([sum(tok.pack(e.text_a, e.text_b, 128, pad=False)["input_mask"])
                        for e in task.train])
    rng = np.random.default_rng(0)
    random_pad = np.mean([1 - b.mean() / b.max() for b in np.array_split(rng.permutation(lengths), 78)])
    assert np.mean(padding) < 0.5 * random_pad
    again = list(classification_dataset(task.train, is_training=True, seed=1, **kwargs))
    for (f1, y1), (f2, y2) in zip(batches, again):
        np.testing.assert_array_equal(f1["input_word_ids"].numpy(), f2["input_word_ids"].numpy())
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())
    # Evaluation keeps order and matches the Python packer.
    dev = list(classification_dataset(task.dev, is_training=False, **kwargs))
    first = dev[0][0]["input_word_ids"].numpy()[0]
    want = tok.pack(task.dev[0].text_a, task.dev[0].text_b, 128, pad=False)["input_word_ids"]
    assert list(first[:len(want)]) == want and not first[len(want):].any()
    assert sum(len(y) for _, y in dev) == len(task.dev)


def test_classification_dataset_replicas_and_regression(tok):
    examples = [Example(f"sentence number {i} " * (i % 7 + 1), None, float(i)) for i in range(40)]
    seen = []
    for pipeline in range(2):
        ctx = tf.distribute.InputContext(2, pipeline, 2)
        ds = classification_dataset(examples, tok, 32, batch_size=8, is_training=False,
                                    input_context=ctx, is_regression=True)
        labels = np.concatenate([y.numpy() for _, y in ds])
        assert labels.dtype == np.float32 and all(len(y) <= 4 for _, y in ds)
        seen.append(set(labels.tolist()))
    assert not seen[0] & seen[1] and seen[0] | seen[1] == set(map(float, range(40)))
    with pytest.raises(TaskDataError, match="not in label_list"):
        classification_dataset([Example("a", None, "2")], tok, 16, 4, False, label_list=["0", "1"])


def test_the_data_root_and_its_glue_directory_give_the_same_task(tmp_path, data_dir):
    from albert_tf.data.task_data import expected_glue_file, find_glue_task_dir
    from_root = load_task("rte", data_dir)                  # <data>/glue/RTE/ found
    from_glue = load_task("rte", os.path.join(data_dir, "glue"))
    assert from_root.train == from_glue.train and from_root.dev == from_glue.dev
    assert len(from_root.train) > 1000
    assert find_glue_task_dir(data_dir, "RTE") == os.path.join(data_dir, "glue", "RTE")
    assert find_glue_task_dir(str(tmp_path), "rte") is None
    assert find_glue_task_dir(data_dir, "mr") is None      # SentEval, not GLUE
    assert expected_glue_file(str(tmp_path), "sst2") == os.path.join(
        str(tmp_path), "glue", "SST-2", "train.tsv")
    with pytest.raises(TaskDataError, match="RTE/train.tsv under .*DATA_DIR/glue/<Task>/"):
        load_task("rte", str(tmp_path))


def test_split_texts_reads_a_split_from_the_env_data_root(data_dir, monkeypatch, tmp_path):
    from albert_tf import resources
    from albert_tf.data.task_data import TaskDataError, load_task, split_texts

    monkeypatch.setenv("ALBERT_TF_DATA_DIR", data_dir)
    texts, pairs, labels = split_texts("sst2", "dev")
    dev = load_task("sst2", data_dir).dev
    assert texts == [e.text_a for e in dev] and pairs is None
    assert labels == [e.label for e in dev]
    a, b, _ = split_texts("rte", "dev", data_dir)
    assert b is not None and len(a) == len(b) > 0
    with pytest.raises(TaskDataError, match="unknown split"):
        split_texts("sst2", "validation")
    monkeypatch.delenv("ALBERT_TF_DATA_DIR")
    with pytest.raises(resources.DataDirError, match="ALBERT_TF_DATA_DIR"):
        split_texts("sst2")
