"""SST-2 dev end to end (albert-tf-benchmark --sst2_end_to_end): real TFLite exports with two
length buckets, the real dev sentences, bucketing, batching, accuracy, report, errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
BUCKETS = (16, 32)
BATCH = 4


def _tiny_config():
    import albert_tf
    return albert_tf.load_config("albert_tiny").replace(vocab_size=8000)


@pytest.fixture(scope="module")
def dev(data_dir):
    from albert_tf.benchmark.end_to_end import load_sst2_dev, sst2_dev_file
    path = sst2_dev_file(data_dir)
    sentences, labels = load_sst2_dev(path)
    assert len(sentences) == len(labels) == 872 and set(labels) == {"0", "1"}
    return path, sentences, labels


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, dev):
    """A tiny SST-2 classifier (as a finetuned model directory). Random weights give
    nearly the same pooled output for every sentence, so the head is set to split the
    dev sentences: a large random direction, the bias at the median logit difference."""
    import albert_tf
    from albert_tf.backend import keras
    from albert_tf.checkpoints import TaskInfo
    from albert_tf.text.tokenizer import AlbertTokenizer
    keras.utils.set_random_seed(1)
    model = albert_tf.build_classifier(_tiny_config(), 2)
    tok = AlbertTokenizer(VOCAB)
    rows = [tok.pack(s, max_seq_length=32) for s in dev[1][:64]]
    pooled = keras.Model(model.inputs, model.get_layer("pooler").output)(
        {k: np.array([r[k] for r in rows], np.int32) for k in rows[0]}).numpy()
    direction = np.random.default_rng(0).normal(0, 1, pooled.shape[1])
    scores = (pooled - pooled.mean(0)) @ direction
    direction *= 20 / (scores.std() + 1e-12)
    kernel = np.stack([np.zeros_like(direction), direction], axis=1).astype(np.float32)
    model.get_layer("classifier").set_weights(
        [kernel, np.array([0, -np.median(pooled @ direction)], np.float32)])
    path = str(tmp_path_factory.mktemp("e2e") / "sst2_tiny")
    albert_tf.save_model_dir(model, path, task_info=TaskInfo("sst2", "classification",
                                                             ("0", "1"), 32),
                             vocab_file=VOCAB)
    return path


@pytest.fixture(scope="module")
def driven(model_dir, data_dir, tmp_path_factory):
    """The albert-tf-benchmark driver: exports at batch 1 and 4, each timed in a worker."""
    from albert_tf.benchmark.end_to_end import benchmark_end_to_end
    work = str(tmp_path_factory.mktemp("work"))
    rows = benchmark_end_to_end("tiny", model_dir, ["none"], [1, BATCH], BUCKETS, work,
                                data_dir, threads=1, min_seconds=0.05, echo=lambda s: None)
    return {r.batch: r for r in rows}


def expected_bucket(n_ids: int) -> int:
    """The smallest bucket holding [CLS] ids [SEP]; the largest (truncating) otherwise."""
    return next((b for b in BUCKETS if n_ids + 2 <= b), BUCKETS[-1])


@pytest.mark.slow
def test_driver_times_every_dev_sentence_in_a_fresh_process(driven, dev):
    _, sentences, labels = dev
    assert sorted(driven) == [1, BATCH]
    from albert_tf.text.tokenizer import AlbertTokenizer
    tok = AlbertTokenizer(VOCAB)
    lengths = [len(tok.encode(s)) for s in sentences]
    counts = {str(b): sum(expected_bucket(n) == b for n in lengths) for b in BUCKETS}
    assert all(counts.values())
    for batch, r in driven.items():
        with open(os.path.join(r.export, "metadata.json")) as f:
            meta = json.load(f)
        assert sorted(meta["signatures"]) == ["seq_16", "seq_32"]
        assert {s["batch_size"] for s in meta["signatures"].values()} == {batch}
        assert (r.quantization, r.buckets, r.threads, r.sentences) == ("none", [16, 32], 1, 872)
        assert r.bucket_counts == counts
        assert r.truncated == sum(n + 2 > BUCKETS[-1] for n in lengths)
        assert r.rows_run == sum(-(-c // batch) * batch for c in counts.values())
        assert r.sentences_per_s == pytest.approx(872 / r.seconds)
        assert 0 < r.tokenize_seconds < r.seconds
        assert r.accuracy is not None and 0 <= r.accuracy <= 1   # task sst2: scored
        assert 20 < r.peak_rss_mib < 1500
    assert driven[1].accuracy == driven[BATCH].accuracy


@pytest.mark.slow
def test_labels_buckets_and_batching(driven, dev):
    """Every sentence gets a label in the smallest bucket that fits; batching, padding of
    partial batches and the bucket choice do not change a prediction."""
    from albert_tf.benchmark.end_to_end import measure, open_model
    from albert_tf.text.tokenizer import AlbertTokenizer
    _, sentences, labels = dev
    runner = open_model(driven[BATCH].export, threads=1)
    result = measure(driven[BATCH].export, sentences, labels, threads=1, min_seconds=0,
                     min_passes=1, runner=runner)
    assert len(result.predictions) == 872 and set(result.predictions) == {"0", "1"}
    assert result.accuracy == pytest.approx(np.mean(np.array(result.predictions) ==
                                                    np.array(labels)))
    tok = AlbertTokenizer(VOCAB)
    assert result.bucket_of == [expected_bucket(len(tok.encode(s))) for s in sentences]

    # A subset from both buckets (truncated sentences included), 7 = not a multiple of 4.
    lengths = [len(tok.encode(s)) for s in sentences]
    short = [i for i, n in enumerate(lengths) if n + 2 <= 16][:7]
    long = [i for i, n in enumerate(lengths) if n + 2 > 32][:7]
    middle = [i for i, n in enumerate(lengths) if 16 < n + 2 <= 32][:7]
    subset = [sentences[i] for i in short + middle + long]
    batched = runner.predict(subset)
    assert [p["label"] for p in batched] == [result.predictions[i] for i in short + middle + long]
    single = open_model(driven[1].export, threads=1)
    for text, b in zip(subset, batched):
        for alone in (single.predict([text])[0], runner.predict([text])[0]):
            np.testing.assert_allclose(alone["probabilities"], b["probabilities"], atol=1e-5)
            if abs(np.diff(b["probabilities"])[0]) > 1e-4:   # not a tie
                assert alone["label"] == b["label"]
    # Padding to a longer bucket does not change a short sentence's prediction either.
    for i, b in zip(short, batched):
        row = runner.pack(tok.encode(sentences[i]), None, 32)
        out = runner.run_ids("seq_32", [row])[0]
        np.testing.assert_allclose(out["probabilities"], b["probabilities"], atol=1e-5)


@pytest.mark.slow
def test_report_and_json(driven, tmp_path):
    from albert_tf.benchmark.tables import write_report
    text = write_report(str(tmp_path), [], {"threads": 1}, end_to_end=list(driven.values()))
    assert "SST-2 dev end to end" in text
    rows = [line for line in text.splitlines() if line.startswith("| tiny | none |")]
    assert len(rows) == 2 and sum("**" in line for line in rows) == 1
    with open(tmp_path / "results.json") as f:
        saved = json.load(f)["sst2_end_to_end"]
    assert [r["batch"] for r in saved] == [1, BATCH]
    assert sum(r["best"] for r in saved) == 1


@pytest.mark.slow
def test_benchmark_binary_times_given_exports(driven, data_dir, tmp_path):
    """albert-tf-benchmark --sst2_end_to_end --sst2_tflite=EXPORT, no latency shapes."""
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--sst2_end_to_end", "--models=",
         "--shapes=", f"--sst2_tflite={driven[BATCH].export}", "--threads=1",
         "--min_seconds=0.05", f"--data_dir={data_dir}", f"--output_dir={out}"],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    with open(out / "results.json") as f:
        saved = json.load(f)
    assert saved["measurements"] == []
    (row,) = saved["sst2_end_to_end"]
    assert (row["model"], row["batch"], row["sentences"], row["best"]) == (
        f"b{BATCH}_buckets_16-32", BATCH, 872, True)
    assert row["accuracy"] == driven[BATCH].accuracy
    assert "SST-2 dev end to end" in (out / "report.md").read_text()


def test_random_head_for_encoder_dirs_reports_no_accuracy(tmp_path):
    import albert_tf
    from albert_tf.benchmark.end_to_end import (RANDOM_HEAD_TASK, accuracy_applies,
                                                classifier_model_dir)
    from albert_tf.checkpoints import load_task_info, named_weights
    encoder = albert_tf.build_encoder(_tiny_config())
    enc_dir = albert_tf.save_model_dir(encoder, str(tmp_path / "enc"), vocab_file=VOCAB)
    out = classifier_model_dir(enc_dir, str(tmp_path / "work"))
    assert out != enc_dir and os.path.exists(os.path.join(out, "vocab.model"))
    info = load_task_info(out)
    assert (info.task, info.head, info.label_list) == (RANDOM_HEAD_TASK, "classification",
                                                      ("0", "1"))
    model, _ = albert_tf.load_task_model(out)
    mine = named_weights(model)
    for name, weight in named_weights(encoder).items():
        np.testing.assert_array_equal(mine[name].numpy(), weight.numpy())
    assert accuracy_applies({"task": info.task, "labels": ["0", "1"]})[0] is False
    assert accuracy_applies({"task": "cola", "labels": ["0", "1"]})[0] is False
    assert accuracy_applies({"task": "sst2", "labels": ["0", "1"]})[0] is True


def test_missing_dev_file_names_the_path_and_the_fix(tmp_path):
    from albert_tf.benchmark.end_to_end import (EndToEndError, load_sst2_dev, main,
                                                sst2_dev_file)
    missing = os.path.join(str(tmp_path), "glue", "SST-2", "dev.tsv")
    with pytest.raises(EndToEndError, match="--data_dir") as e:
        sst2_dev_file(str(tmp_path))
    assert missing in str(e.value)
    with pytest.raises(EndToEndError, match="not found"):
        load_sst2_dev(missing)
    assert main([f"--model={tmp_path}", f"--data_dir={tmp_path}"]) == 2
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.benchmark", "--sst2_end_to_end", "--models=",
         "--shapes=", f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}"],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0 and missing in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_exports_without_bucket_signatures_are_refused(driven, tmp_path):
    from albert_tf.benchmark.end_to_end import EndToEndError, open_model
    export = driven[BATCH].export
    # A bare .tflite (no metadata.json).
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(os.path.join(export, "model.tflite"), bare / "model.tflite")
    with pytest.raises(EndToEndError, match="metadata.json"):
        open_model(str(bare / "model.tflite"))

    def variant(name, edit):
        path = tmp_path / name
        shutil.copytree(export, path)
        with open(path / "metadata.json") as f:
            meta = json.load(f)
        edit(meta)
        with open(path / "metadata.json", "w") as f:
            json.dump(meta, f)
        return str(path)

    def in_graph(meta):   # what a --with_tokenizer export declares
        meta["tokenizer"]["in_graph"] = True
        meta["signatures"] = {"serving_default": {"inputs": {"text": {
            "dtype": "string", "shape": [BATCH]}}, "batch_size": BATCH}}

    with pytest.raises(EndToEndError, match="no \\[batch, seq\\] token-id bucket signatures"):
        open_model(variant("text", in_graph))
    with pytest.raises(EndToEndError, match="classification"):
        open_model(variant("regression", lambda m: m.update(head="regression", labels=None)))
