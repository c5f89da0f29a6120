"""Pretraining data: creation (masking, SOP, streaming, bad input) and the TFRecord reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from albert_tf.backend import tf
from albert_tf.data import pretraining_data as pd
from albert_tf.data.documents import iter_documents, split_sentences
from albert_tf.data.pretraining import PretrainingDataError, pretraining_dataset
from albert_tf.text.spm_training import VocabularyError
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.repo_files import imdb_head

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ, PRED = 128, 20


@pytest.fixture(scope="module")
def tok():
    return AlbertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir):
    """~300 KB of IMDB plus bad input: a non-UTF-8 line, empty documents, a one-sentence
    document."""
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    data = imdb_head(data_dir, 300_000)
    data += b"A broken \xff\xfe line in a document.\nIts second sentence is fine.\n\n\n\n"
    data += b"Just one sentence here.\n\n"
    data += b"First of two. Second of two.\n"
    path.write_bytes(data)
    return str(path)


@pytest.fixture(scope="module")
def created(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("out") / "train.tfrecord"
    config = pd.PretrainingConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED,
                                  dupe_factor=2, random_seed=7, shuffle_buffer=500)
    summary = pd.create_pretraining_data([corpus], str(out), VOCAB, config, progress=False)
    return summary, str(out)


def test_summary_statistics(created):
    summary, out = created
    print(json.dumps({k: v for k, v in summary.items() if k != "outputs"}))
    assert summary["instances"] > 500
    assert summary["skipped"]["non_utf8_lines"] == 1
    assert summary["skipped"]["empty_documents"] == 2
    assert summary["skipped"]["one_segment_documents"] >= 1
    assert 0.13 <= summary["masked_fraction"] <= 0.17
    assert 0.45 <= summary["sop_swapped_fraction"] <= 0.55
    spans = summary["span_length_fractions"]
    assert set(spans) == {1, 2, 3} and spans[1] > spans[2] > spans[3]
    # 1/n weights: 6/11, 3/11, 2/11 (budget limits and overlaps favour short spans a bit).
    assert abs(spans[2] - 3 / 11) < 0.07 and abs(spans[3] - 2 / 11) < 0.07
    assert summary["outputs"] == [out] and os.path.getsize(out) > 0


def test_records_have_the_original_features(created, tok):
    summary, out = created
    n = 0
    for raw in tf.data.TFRecordDataset(out):
        ex = tf.train.Example.FromString(raw.numpy()).features.feature
        assert set(ex) == {"input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                           "masked_lm_ids", "masked_lm_weights", "next_sentence_labels",
                           "token_boundary"}
        ids = list(ex["input_ids"].int64_list.value)
        mask = list(ex["input_mask"].int64_list.value)
        seg = list(ex["segment_ids"].int64_list.value)
        boundary = list(ex["token_boundary"].int64_list.value)
        pos = list(ex["masked_lm_positions"].int64_list.value)
        weights = list(ex["masked_lm_weights"].float_list.value)
        assert len(ids) == len(mask) == len(seg) == len(boundary) == SEQ
        assert len(pos) == len(weights) == PRED
        length = sum(mask)
        assert ids[0] == tok.cls_id and ids[length - 1] == tok.sep_id and ids.count(tok.sep_id) == 2
        first_sep = ids.index(tok.sep_id)
        assert seg[:first_sep + 1] == [0] * (first_sep + 1)
        assert seg[first_sep + 1:length] == [1] * (length - first_sep - 1)
        assert first_sep >= 2 and length - first_sep >= 3           # both segments non-empty
        k = int(sum(weights))
        assert 1 <= k <= PRED and pos[:k] == sorted(pos[:k])
        assert all(0 < p < length and ids[p] not in (tok.cls_id, tok.sep_id) for p in pos[:k])
        assert boundary[0] == 1 and boundary[first_sep] == 1
        assert ex["next_sentence_labels"].int64_list.value[0] in (0, 1)
        n += 1
    assert n == summary["instances"]


def test_segments_are_consecutive_text_of_one_document(data_dir, tok):
    """Unmasked, ``A`` and ``B`` are contiguous pieces of one document's token stream, in
    document order for label 0 and swapped for label 1."""
    config = pd.PretrainingConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2)
    maker = pd.InstanceMaker(tok, config, seed=3)
    docs = []
    for doc in iter_documents([os.path.join(data_dir, "corpus", "imdb-unsup.txt")]):
        docs.append(doc)
        if len(docs) == 40:
            break
    labels = []
    for d, doc in enumerate(docs):
        stream = [t for seg in maker.segments(doc) for t in seg]
        text = " ".join(map(str, stream)) + " "
        for inst in maker.instances(doc, d):
            ids = list(inst.input_ids)
            for p, original in zip(inst.masked_lm_positions, inst.masked_lm_ids):
                ids[p] = original
            sep = ids.index(tok.sep_id)
            a, b = ids[1:sep], ids[sep + 1:-1]
            first, second = (a, b) if inst.next_sentence_label == 0 else (b, a)
            i = text.find(" ".join(map(str, first)) + " ")
            j = text.find(" ".join(map(str, second)) + " ", i + 1)
            assert (i == 0 or text[i - 1] == " ") and i >= 0 and j > i, \
                "segments are not consecutive text of their document"
            labels.append(inst.next_sentence_label)
    assert 0.3 < np.mean(labels) < 0.7


def test_sentence_split():
    assert split_sentences("I loved it. Then I saw it again!It was (fine). 3 stars.So bad") == [
        "I loved it.", "Then I saw it again!", "It was (fine).", "3 stars.", "So bad"]
    assert split_sentences("Mr. smith went to washington.") == ["Mr. smith went to washington."]


def test_deterministic_under_seed(tmp_path, corpus):
    config = pd.PretrainingConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED,
                                  dupe_factor=1, random_seed=11, shuffle_buffer=50)
    outs = []
    for name in ("a", "b"):
        pd.create_pretraining_data([corpus], str(tmp_path / name), VOCAB, config, progress=False)
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]


def _records(paths) -> list[bytes]:
    return [r for p in paths for r in tf.data.TFRecordDataset(p).as_numpy_iterator()]


@pytest.mark.slow
def test_cli_output_is_a_function_of_inputs_and_flags(tmp_path, data_dir):
    """Two runs of the binary (separate processes: different hash seeds, different
    protobuf map orders) write the same bytes, with 1 and with 2 workers, and 2 workers
    write the same files as 1 (same --num_shards); other shard counts hold the same records."""
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        reviews = [line for line in (next(f).strip() for _ in range(400)) if line][:200]
    (tmp_path / "in.txt").write_text("\n\n".join(reviews) + "\n", encoding="utf-8")
    outputs = {}
    for workers, run, hash_seed, shards in ((1, "a", "1", 3), (1, "b", "2", 3), (2, "a", "3", 3)):
        out = tmp_path / f"w{workers}{run}" / "data.tfrecord"
        result = subprocess.run(
            [sys.executable, "-m", "albert_tf.bin.create_pretraining_data",
             f"--input_file={tmp_path / 'in.txt'}", f"--output_file={out}",
             f"--spm_model_file={VOCAB}", "--max_seq_length=64",
             "--max_predictions_per_seq=10", "--dupe_factor=2", "--random_seed=3",
             f"--num_workers={workers}", f"--num_shards={shards}", "--progress=false"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert result.returncode == 0, result.stderr[-2000:]
        summary = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
        assert summary["documents"] == 200 and summary["instances"] > 200
        assert summary["written_shards"] == summary["outputs"] and not summary["reused_shards"]
        outputs[workers, run] = [open(p, "rb").read() for p in summary["outputs"]]
    assert all(outputs[1, "a"]) and len(outputs[1, "a"]) == 3
    for key in ((1, "b"), (2, "a")):
        assert outputs[key] == outputs[1, "a"], key
    config = pd.PretrainingConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2,
                                  random_seed=3)
    one = pd.create_pretraining_data([str(tmp_path / "in.txt")], str(tmp_path / "one"), VOCAB,
                                     config, progress=False)
    assert sorted(_records(one["outputs"])) == \
        sorted(_records(sorted(str(p) for p in (tmp_path / "w1a").glob("data*"))))


def test_memory_is_bounded_by_buffers_not_corpus(tmp_path, data_dir):
    """Peak Python memory for a 4x larger corpus stays flat (streaming, bounded buffers)."""
    small = imdb_head(data_dir, 100_000)
    (tmp_path / "x1.txt").write_bytes(small)
    (tmp_path / "x4.txt").write_bytes(small * 4)
    config = pd.PretrainingConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED,
                                  dupe_factor=1, shuffle_buffer=100)
    peaks = {}
    pd.create_pretraining_data([str(tmp_path / "x1.txt")], str(tmp_path / "warm"), VOCAB,
                               config, progress=False)
    for name in ("x1", "x4"):
        tracemalloc.start()
        summary = pd.create_pretraining_data([str(tmp_path / f"{name}.txt")],
                                             str(tmp_path / f"{name}.tfrecord"), VOCAB, config,
                                             progress=False)
        peaks[name] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert summary["instances"] > 0
    assert peaks["x4"] < 1.3 * peaks["x1"], peaks


def test_bad_inputs_fail_clearly(tmp_path, corpus):
    config = pd.PretrainingConfig(max_seq_length=SEQ, dupe_factor=1)
    with pytest.raises(VocabularyError, match="not found"):
        pd.create_pretraining_data([corpus], str(tmp_path / "o"), str(tmp_path / "none.model"),
                                   config, progress=False)
    with pytest.raises(VocabularyError, match="no input file matches"):
        pd.create_pretraining_data([str(tmp_path / "missing*.txt")], str(tmp_path / "o"), VOCAB,
                                   config, progress=False)
    with pytest.raises(ValueError, match="max_seq_length"):
        pd.create_pretraining_data([corpus], str(tmp_path / "o"), VOCAB,
                                   pd.PretrainingConfig(max_seq_length=3), progress=False)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n\nonly one sentence\n\n")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ValueError, match="no training instance .*at least two sentences"):
        pd.create_pretraining_data([str(empty)], str(tmp_path / "o"), VOCAB, config,
                                   progress=False)     # was: empty records and a summary
    assert sorted(os.listdir(tmp_path)) == before      # no shard, record or lock left


@pytest.mark.slow
def test_cli_with_workers_and_shards(tmp_path, data_dir):
    (tmp_path / "in.txt").write_bytes(imdb_head(data_dir, 60_000))
    out = tmp_path / "shards" / "data.tfrecord"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.create_pretraining_data",
         f"--input_file={tmp_path / 'in.txt'}", f"--output_file={out}",
         f"--spm_model_file={VOCAB}", "--max_seq_length=64", "--max_predictions_per_seq=10",
         "--dupe_factor=1", "--num_workers=2", "--num_shards=4", "--ngram=3",
         "--masked_lm_prob=0.15", "--short_seq_prob=0.1", "--random_seed=5", "--do_lower_case"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    assert len(summary["outputs"]) == 4 and all(os.path.exists(p) for p in summary["outputs"])
    assert result.stdout.splitlines()[-1].startswith(f"wrote {summary['outputs'][0]}, ")
    assert "MB/s" in result.stderr                                   # the progress bar
    total = sum(1 for p in summary["outputs"] for _ in tf.data.TFRecordDataset(p))
    assert total == summary["instances"] > 0
    ds = pretraining_dataset(str(out) + "-*", batch_size=8, max_seq_length=64,
                             max_predictions_per_seq=10, is_training=False)
    assert sum(int(b["input_word_ids"].shape[0]) for b in ds) == total


# -- reader -----------------------------------------------------------------------------------

def test_reader_batches_and_determinism(created):
    _, out = created
    ds = pretraining_dataset(out, batch_size=4, max_seq_length=SEQ,
                             max_predictions_per_seq=PRED, seed=3)
    batch = next(iter(ds))
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in batch.items()}
    assert shapes == {
        "input_word_ids": ((4, SEQ), tf.int32), "input_mask": ((4, SEQ), tf.int32),
        "input_type_ids": ((4, SEQ), tf.int32), "masked_lm_positions": ((4, PRED), tf.int32),
        "masked_lm_ids": ((4, PRED), tf.int32), "masked_lm_weights": ((4, PRED), tf.float32),
        "next_sentence_labels": ((4,), tf.int32)}
    again = next(iter(pretraining_dataset(out, batch_size=4, max_seq_length=SEQ,
                                          max_predictions_per_seq=PRED, seed=3)))
    for k in batch:
        np.testing.assert_array_equal(batch[k].numpy(), again[k].numpy())


def test_reader_shards_for_replicas(created):
    _, out = created
    seen = []
    for pipeline in range(2):
        ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                         num_replicas_in_sync=2)
        ds = pretraining_dataset(out, batch_size=8, max_seq_length=SEQ,
                                 max_predictions_per_seq=PRED, is_training=False,
                                 input_context=ctx)
        batches = list(ds)
        assert batches[0]["input_word_ids"].shape[0] == 4        # per-replica batch
        seen.append({tuple(r) for b in batches for r in b["input_word_ids"].numpy()})
    assert not seen[0] & seen[1]


def test_reader_names_bad_files(tmp_path, created, corpus):
    _, out = created
    with pytest.raises(PretrainingDataError, match="not found: .*nothere"):
        pretraining_dataset(str(tmp_path / "nothere*"), 4, SEQ, PRED)
    data = open(out, "rb").read()
    truncated = tmp_path / "truncated.tfrecord"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(PretrainingDataError, match="truncated.tfrecord.*truncated"):
        pretraining_dataset(str(truncated), 4, SEQ, PRED)
    with pytest.raises(PretrainingDataError, match="corpus.txt"):
        pretraining_dataset(corpus, 4, SEQ, PRED)
    with pytest.raises(PretrainingDataError, match=r"train.tfrecord.*max_seq_length=64"):
        pretraining_dataset(out, 4, 64, PRED)
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    with pytest.raises(PretrainingDataError, match="no records.*empty.tfrecord"):
        pretraining_dataset(str(tmp_path / "empty.tfrecord"), 4, SEQ, PRED)
