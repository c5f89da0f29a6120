"""Dynamic masking (`albert_tf.data.dynamic_masking`) on real text: the record reader's
features, the static records' statistics, determinism, sharding, a few training steps and
one-line errors.

The statistics compare instances masked in the input pipeline with the TFRecords that
`albert_tf.data.pretraining_data` writes from the same IMDB slice and vocabulary; every draw
on both sides is seeded, so the numbers are fixed and the tolerances (several standard
errors) only stop a change of the algorithm, never chance, from passing.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from albert_tf.backend import tf
from albert_tf.data import dynamic_masking as dm
from albert_tf.data.pretraining_data import PretrainingConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ, PRED = 128, 20
EPOCHS = 3                # static: dupe_factor copies; dynamic: epochs
CONFIG = PretrainingConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED,
                           dupe_factor=EPOCHS, random_seed=7)
SLICE_DOCS = 200          # IMDB reviews in the slice (x 3 copies/epochs: ~1,600 instances)


def _documents(path: str, count: int, skip: int = 0) -> list[str]:
    """``count`` documents (after ``skip``) of a blank-line separated corpus, as text."""
    docs, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current.append(line.rstrip("\n"))
            elif current:
                docs.append("\n".join(current))
                current = []
                if len(docs) >= skip + count:
                    break
    return docs[skip:skip + count]


@pytest.fixture(scope="module")
def corpus(data_dir, tmp_path_factory):
    """The IMDB slice as one file, the same documents as two files, python-docs files."""
    imdb = os.path.join(data_dir, "corpus", "imdb-unsup.txt")
    docs = _documents(imdb, SLICE_DOCS, skip=1000)
    directory = tmp_path_factory.mktemp("text")
    one = directory / "imdb.txt"
    one.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    half = len(docs) // 2
    (directory / "part-0.txt").write_text("\n\n".join(docs[:half]) + "\n", encoding="utf-8")
    (directory / "part-1.txt").write_text("\n\n".join(docs[half:]) + "\n", encoding="utf-8")
    pydocs = sorted(os.path.join(data_dir, "corpus", "python-docs", "tutorial", f)
                    for f in os.listdir(os.path.join(data_dir, "corpus", "python-docs",
                                                     "tutorial")))[:4]
    return {"one": str(one), "parts": str(directory / "part-*.txt"), "dir": directory,
            "pydocs": pydocs, "docs": docs}


@pytest.fixture(scope="module")
def masker():
    return dm.DynamicMasker(VOCAB, CONFIG)


@pytest.fixture(scope="module")
def static(corpus, tmp_path_factory):
    """The static records of the slice (3 copies) and the creator's summary."""
    from albert_tf.data.pretraining_data import create_pretraining_data
    out = str(tmp_path_factory.mktemp("records") / "imdb.tfrecord")
    summary = create_pretraining_data([corpus["one"]], out, VOCAB, CONFIG, num_workers=1,
                                      progress=False)
    from albert_tf.data.pretraining import pretraining_dataset
    batches = list(pretraining_dataset(out, 512, SEQ, PRED, is_training=False).as_numpy_iterator())
    return summary, out, _stack(batches)


@pytest.fixture(scope="module")
def dynamic(corpus, masker):
    """3 epochs of the slice masked in the pipeline, with the span counts."""
    ds = dm.text_pretraining_dataset(corpus["one"], VOCAB, 512, CONFIG, is_training=False,
                                     seed=7, num_epochs=EPOCHS, with_stats=True,
                                     masker=masker)
    return _stack(list(ds.as_numpy_iterator()))


def _stack(batches: list[dict]) -> dict:
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def _statistics(data: dict, mask_id: int) -> dict:
    weights = data["masked_lm_weights"]
    tokens = data["input_mask"].sum(1) - 3                     # non-special tokens
    real = weights > 0
    at = np.take_along_axis(data["input_word_ids"], data["masked_lm_positions"], 1)[real]
    labels = data["masked_lm_ids"][real]
    return {"instances": len(weights), "masked_fraction": weights.sum() / tokens.sum(),
            "sop": data["next_sentence_labels"].mean(),
            "mask": np.mean(at == mask_id), "keep": np.mean(at == labels),
            "random": np.mean((at != mask_id) & (at != labels)),
            "length": data["input_mask"].sum(1).mean()}


# ------------------------------------------------------------------ (a) the feature spec
@pytest.mark.slow
def test_same_features_as_the_record_reader(static, dynamic, corpus, masker):
    from albert_tf.data.pretraining import pretraining_dataset
    records = pretraining_dataset(static[1], 8, SEQ, PRED, seed=0).element_spec
    text = dm.text_pretraining_dataset(corpus["one"], VOCAB, 8, CONFIG, seed=0,
                                       shuffle_buffer=16, masker=masker)
    assert text.element_spec == records
    batch = next(iter(text))
    assert {k: (v.shape, v.dtype) for k, v in batch.items()} == {
        k: (tf.TensorShape([8] + s.shape[1:].as_list()), s.dtype) for k, s in records.items()}
    ids, mask = batch["input_word_ids"].numpy(), batch["input_mask"].numpy()
    assert (ids[:, 0] == masker.cls_id).all() and ((ids == masker.sep_id).sum(1) == 2).all()
    assert ((ids * (1 - mask)) == 0).all()


@pytest.mark.slow
def test_segments_are_the_python_tokenizers(corpus, masker):
    """Sentence split + in-graph tokenizer == `InstanceMaker.segments` (IMDB reviews, and
    python-docs paragraphs with code, quotes and odd punctuation)."""
    from albert_tf.data.documents import iter_documents
    from albert_tf.data.pretraining_data import InstanceMaker
    maker = InstanceMaker(masker.py_tokenizer, CONFIG, 0)
    docs = list(iter_documents([corpus["one"]]))[:60] + list(iter_documents(corpus["pydocs"]))
    assert len(docs) > 150
    ds = tf.data.Dataset.from_generator(lambda: iter(docs),
                                        output_signature=tf.TensorSpec([None], tf.string))
    got = ds.map(lambda lines: masker.segments(lines).to_tensor(-1)).as_numpy_iterator()
    for lines, ids in zip(docs, got):
        assert [[t for t in row if t >= 0] for row in ids.tolist()] == maker.segments(lines)


# ------------------------------------------------------- (b) statistics vs static records
@pytest.mark.slow
def test_statistics_match_the_static_records(static, dynamic, masker):
    summary, _, records = static
    ours, theirs = _statistics(dynamic, masker.mask_id), _statistics(records, masker.mask_id)
    assert ours["instances"] > 1400 and theirs["instances"] > 1400
    # Same chunking: instance counts and lengths within a few percent.
    assert abs(ours["instances"] / theirs["instances"] - 1) < 0.05
    assert abs(ours["length"] - theirs["length"]) < 3
    # Masked fraction of the non-special tokens (the budget round(0.15 * len) on both).
    assert abs(theirs["masked_fraction"] - summary["masked_fraction"]) < 1e-3
    assert abs(ours["masked_fraction"] - theirs["masked_fraction"]) < 0.002
    assert 0.14 < ours["masked_fraction"] < 0.17
    # SOP: swapped half the time (n ~ 1,600: sd 0.0125).
    assert abs(ours["sop"] - 0.5) < 0.05 and abs(theirs["sop"] - 0.5) < 0.05
    # 80/10/10 (n ~ 26,000 masked tokens: sd < 0.0025).
    for key, expected in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        assert abs(ours[key] - expected) < 0.015, (key, ours)
        assert abs(ours[key] - theirs[key]) < 0.015, (key, ours, theirs)
    # n-gram spans: weights 1/n normalized (6/11, 3/11, 2/11), shifted to shorter spans by
    # the budget and the sequence end the same way on both sides.
    spans = dynamic["span_counts"].sum(0)
    ours_frac = spans / spans.sum()
    theirs_frac = np.array([summary["span_length_fractions"].get(n, 0.0) for n in (1, 2, 3)])
    assert np.abs(ours_frac - theirs_frac).max() < 0.03, (ours_frac, theirs_frac)
    assert ours_frac[0] > ours_frac[1] > ours_frac[2] > 0.1
    assert abs(ours_frac[0] - 6 / 11) < 0.08 and abs(ours_frac[2] - 2 / 11) < 0.06


# ------------------------------------------------------------------ (c) determinism
def _batches(corpus, masker, seed, count=2, **kwargs):
    ds = dm.text_pretraining_dataset(corpus["parts"], VOCAB, 16, CONFIG, seed=seed,
                                     shuffle_buffer=32, masker=masker, **kwargs)
    return list(ds.take(count).as_numpy_iterator())


@pytest.mark.slow
def test_deterministic_for_a_seed(corpus, masker):
    first, again, other = (_batches(corpus, masker, s) for s in (3, 3, 4))
    for a, b in zip(first, again):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    assert any(not np.array_equal(a["masked_lm_positions"], c["masked_lm_positions"])
               for a, c in zip(first, other))


@pytest.mark.slow
def test_each_epoch_masks_afresh(dynamic):
    """Epoch 1 cuts and masks the documents again: the same text, other masks."""
    n = len(dynamic["input_word_ids"]) // EPOCHS
    assert not np.array_equal(dynamic["masked_lm_positions"][:n],
                              dynamic["masked_lm_positions"][n:2 * n])


# ------------------------------------------------------------------ (d) sharding
@pytest.mark.parametrize("files", ["one", "parts"])
def test_input_pipelines_read_disjoint_documents(corpus, files):
    paths = dm.resolve_text_files(corpus[files])

    def keys(context):
        ds = dm.text_documents(paths, is_training=False, input_context=context)
        return {(int(d["file"]), int(d["document"])) for d in ds.as_numpy_iterator()}

    everything = keys(None)
    first = keys(tf.distribute.InputContext(2, 0, 2))
    second = keys(tf.distribute.InputContext(2, 1, 2))
    assert len(everything) == SLICE_DOCS
    assert first and second and not first & second and first | second == everything


@pytest.mark.slow
@pytest.mark.parametrize("files", ["one", "parts"])
def test_instances_do_not_depend_on_the_worker_count(corpus, masker, files):
    """Two input pipelines make, between them, the instances of one (an instance depends on
    the seed, the epoch, the file and the document only), and each pipeline's batches are
    a function of the seed at that worker count."""
    def rows(context):
        ds = dm.text_pretraining_dataset(corpus[files], VOCAB, 64, CONFIG, seed=9,
                                         is_training=False, input_context=context,
                                         masker=masker)
        batches = list(ds.as_numpy_iterator())
        keys = sorted(batches[0])
        return [b"".join(np.ascontiguousarray(b[k][i]).tobytes() for k in keys)
                for b in batches for i in range(len(b[keys[0]]))]

    second = rows(tf.distribute.InputContext(2, 1, 2))
    assert rows(tf.distribute.InputContext(2, 1, 2)) == second           # same order too
    both = rows(tf.distribute.InputContext(2, 0, 2)) + second
    assert sorted(both) == sorted(rows(None))


@pytest.mark.slow
def test_per_replica_batches(corpus, masker):
    context = tf.distribute.InputContext(2, 1, 2)
    ds = dm.text_pretraining_dataset(corpus["parts"], VOCAB, 16, CONFIG, seed=0,
                                     shuffle_buffer=16, input_context=context, masker=masker)
    assert next(iter(ds))["input_word_ids"].shape == (8, SEQ)


# ------------------------------------------------------------ (e) training from source=text
def _experiment(tmp_path, corpus, *overrides):
    from albert_tf.bin.pretrain import defaults
    from albert_tf.training.experiment_config import build_experiment
    return build_experiment(defaults(), ["tiny_ci"], [
        f"model_dir={tmp_path}", f"task.train_data.input_path={corpus['one']}",
        "task.train_data.source=text", "task.train_data.shuffle_buffer=32",
        f"task.vocab_file={VOCAB}", "trainer.train_steps=4", "trainer.steps_per_loop=2",
        "trainer.checkpoint_interval=4", *overrides])


@pytest.mark.slow
def test_pretraining_steps_from_text(tmp_path, corpus):
    from albert_tf.training.trainer import run_experiment
    result = run_experiment(_experiment(tmp_path, corpus), "train")
    assert result["step"] == 4 and np.isfinite(result["train"]["loss"])
    assert np.isfinite(result["train"]["mlm_loss"]) and result["train"]["mlm_loss"] > 0


# ------------------------------------------------------------------ (f) one-line errors
def _one_line_error(config, capsys) -> str:
    from albert_tf.training.trainer import main_guard, run_experiment
    code = main_guard(lambda: run_experiment(config, "train") and None)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("albert-tf: error: ") and "\n" not in err, err
    return err


def test_no_file_matches(tmp_path, corpus, capsys):
    missing = str(tmp_path / "nothing-*.txt")
    err = _one_line_error(_experiment(tmp_path / "run", corpus,
                                      f"task.train_data.input_path={missing}"), capsys)
    assert missing in err and "matches no file" in err
    assert not os.path.exists(tmp_path / "run" / "ckpt")


def test_empty_corpus(tmp_path, corpus, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \nOne sentence only\n\nAnother lonely one\n", encoding="utf-8")
    err = _one_line_error(_experiment(tmp_path / "run", corpus,
                                      f"task.train_data.input_path={empty}"), capsys)
    assert "no document with two sentences" in err and str(empty) in err
    with pytest.raises(dm.TextDataError, match="is a directory"):
        dm.resolve_text_files(str(corpus["dir"]))


def test_vocabulary_larger_than_the_model(tmp_path, corpus, capsys):
    err = _one_line_error(_experiment(tmp_path / "run", corpus, "model.vocab_size=4000"),
                          capsys)
    assert "8000 tokens" in err and "model.vocab_size" in err


def test_records_given_as_text(tmp_path, corpus, static, capsys):
    err = _one_line_error(_experiment(tmp_path / "run", corpus,
                                      f"task.train_data.input_path={static[1]}"), capsys)
    assert "is a TFRecord file, not raw text" in err and "source=records" in err
    assert not os.path.exists(tmp_path / "run" / "ckpt")


def test_not_a_vocabulary(tmp_path, corpus, capsys):
    err = _one_line_error(_experiment(tmp_path / "run", corpus,
                                      f"task.vocab_file={corpus['one']}"), capsys)
    assert err.startswith("albert-tf: error: task.vocab_file (source=text tokenizes with it): ")
    assert corpus["one"] in err and "line 2 is blank" in err


@pytest.mark.parametrize("override, key", [
    ("task.train_data.source=tfds", "task.train_data.source"),
    ("task.train_data.masked_lm_prob=1.5", "task.train_data.masked_lm_prob"),
    ("task.train_data.ngram=0", "task.train_data.ngram")])
def test_bad_config_values(tmp_path, corpus, override, key):
    from albert_tf.training.experiment_config import ConfigValueError
    with pytest.raises(ConfigValueError, match=key.replace(".", r"\.")) as info:
        _experiment(tmp_path, corpus, override)
    assert "\n" not in str(info.value)
