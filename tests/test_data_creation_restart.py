"""Pretraining-data creation is restartable (#20): a run killed at any moment and run again
writes exactly the files of an uninterrupted run; a truncated shard is rejected by the reader
with its name; changed flags or inputs rewrite the shards and say why."""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest

from albert_tf.backend import tf
from albert_tf.data import pretraining_data as pd
from albert_tf.data import pretraining_shards as shards
from albert_tf.data.documents import ReadStats, iter_documents
from albert_tf.data.pretraining import PretrainingDataError, pretraining_dataset, validate_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ, PRED, SHARDS = 64, 10, 8
CONFIG = dict(max_seq_length=SEQ, max_predictions_per_seq=PRED, dupe_factor=2, random_seed=17,
              shuffle_buffer=200)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir) -> str:
    """~400 KB of IMDB reviews."""
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), "rb") as f:
        data = f.read(400_000)
    path = tmp_path_factory.mktemp("corpus") / "imdb.txt"
    path.write_bytes(data[: data.rfind(b"\n\n") + 2])
    return str(path)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus):
    """An uninterrupted run: (summary, output file, {shard name: bytes})."""
    out = tmp_path_factory.mktemp("reference") / "data.tfrecord"
    summary = pd.create_pretraining_data([corpus], str(out), VOCAB,
                                         pd.PretrainingConfig(**CONFIG), num_shards=SHARDS,
                                         progress=False)
    files = {os.path.basename(p): open(p, "rb").read() for p in summary["outputs"]}
    assert len(files) == SHARDS and all(files.values())
    return summary, str(out), files


def _cli(corpus: str, out, workers: int) -> list[str]:
    return [sys.executable, "-m", "albert_tf.bin.create_pretraining_data",
            f"--input_file={corpus}", f"--output_file={out}", f"--spm_model_file={VOCAB}",
            *(f"--{k}={v}" for k, v in CONFIG.items()), f"--num_shards={SHARDS}",
            f"--num_workers={workers}", "--progress=false"]


def _finished(out) -> int:
    return sum(1 for name in os.listdir(os.path.dirname(out)) if name.endswith(".done.json"))


def _partial(out) -> list[str]:
    return [n for n in os.listdir(os.path.dirname(out)) if ".tmp-" in n or "-tmp-" in n]


def _files(out) -> dict:
    names = sorted(n for n in os.listdir(os.path.dirname(out)) if not n.startswith("."))
    return {n: open(os.path.join(os.path.dirname(out), n), "rb").read() for n in names}


def _copy(reference, tmp_path) -> str:
    _, out, _ = reference
    shutil.copytree(os.path.dirname(out), tmp_path / "copy")
    return str(tmp_path / "copy" / os.path.basename(out))


@pytest.mark.slow
def test_killed_three_times_then_completed_equals_uninterrupted(tmp_path, corpus, reference):
    """SIGKILL while the first shard is being written (1 worker), after 3 shards (2 workers),
    after 5 (1 worker), each after a seeded random delay; then the same command to the end."""
    ref_summary, _, ref_files = reference
    out = str(tmp_path / "run" / "data.tfrecord")
    os.makedirs(os.path.dirname(out))
    delays = random.Random(20)
    points = [("a partial shard exists", lambda: bool(_partial(out)), 1),
              ("3 shards finished", lambda: _finished(out) >= 3, 2),
              ("5 shards finished", lambda: _finished(out) >= 5, 1)]
    outcomes = []
    for what, ready, workers in points:
        with open(tmp_path / "stderr.txt", "w") as err:
            proc = subprocess.Popen(_cli(corpus, out, workers), cwd=ROOT,
                                    stdout=subprocess.DEVNULL, stderr=err)
            deadline = time.time() + 240
            while not ready():
                assert proc.poll() is None, f"the run ended before the kill point: {what}"
                assert time.time() < deadline, f"no kill point: {what}"
                time.sleep(0.005)
            time.sleep(delays.uniform(0, 0.03))
            proc.kill()
            proc.wait()
        assert proc.returncode == -signal.SIGKILL, f"not killed at: {what}"
        time.sleep(0.2)                      # the workers die with their parent
        finished = _finished(out)
        outcomes.append((what, finished, len(_partial(out))))
        assert finished < SHARDS
        # What a reader sees meanwhile: whole shards only (partial files are hidden). A
        # shard is renamed into place before its completion record is written, so a kill
        # between the two leaves it visible (whole) but not finished: at most one per worker.
        visible = sorted(p for p in tf.io.gfile.glob(out + "*")
                         if not shards.is_bookkeeping_file(p))
        assert finished <= len(visible) <= finished + workers, (visible, finished)
        if visible:
            assert validate_files(visible, SEQ, PRED) == visible
        unrecorded = len(visible) - finished
    print("kill points (what, finished shards, partial files):", outcomes)
    assert outcomes[0][2] >= 1 and outcomes[2][1] >= 5
    result = subprocess.run(_cli(corpus, out, 1), cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    assert len(summary["reused_shards"]) == outcomes[2][1]
    assert sorted(summary["reused_shards"] + summary["written_shards"]) == summary["outputs"]
    # A shard killed between its rename and its completion record is rewritten, and said so.
    assert len(summary["invalidated_shards"]) == unrecorded
    assert all(why.startswith("no completion record")
               for why in summary["invalidated_shards"].values())
    assert f"kept {outcomes[2][1]} finished shard(s) of {SHARDS}" in result.stderr
    assert _partial(out) == []
    assert _files(out) == ref_files                          # byte for byte
    for key in ("documents", "instances", "tokens", "masked_fraction", "span_lengths"):
        assert summary[key] == json.loads(json.dumps(ref_summary[key])), key


def _last_record_offset(path: str) -> int:
    with open(path, "rb") as f:
        data = f.read()
    offset = last = 0
    while offset < len(data):
        last = offset
        offset += 12 + struct.unpack("<Q", data[offset:offset + 8])[0] + 4
    return last


def test_truncated_shard_is_rejected_with_its_name_then_rewritten(tmp_path, corpus, reference):
    _, _, ref_files = reference
    out = _copy(reference, tmp_path)
    paths = shards.shard_paths(out, SHARDS)
    shard = paths[3]
    data = open(shard, "rb").read()
    glob = out + "*"                     # matches the completion records too: they are skipped
    with open(shard, "wb") as f:         # cut inside a record
        f.write(data[:len(data) - 100])
    with pytest.raises(PretrainingDataError, match=rf"{os.path.basename(shard)}.*truncated.*"
                                                   r"rerun albert-tf-create-pretraining-data"):
        pretraining_dataset(glob, 4, SEQ, PRED)
    with open(shard, "wb") as f:         # cut at a record boundary: the framing is intact
        f.write(data[:_last_record_offset(shard)])
    with pytest.raises(PretrainingDataError, match=rf"{os.path.basename(shard)} has \d+ records.*"
                                                   r"completion record.*truncated"):
        pretraining_dataset(glob, 4, SEQ, PRED)
    summary = pd.create_pretraining_data([corpus], out, VOCAB, pd.PretrainingConfig(**CONFIG),
                                         num_shards=SHARDS, progress=False)
    assert summary["written_shards"] == [shard]
    assert summary["reused_shards"] == [p for p in paths if p != shard]
    assert "truncated" in summary["invalidated_shards"][shard]
    assert _files(out) == ref_files
    assert sum(1 for _ in pretraining_dataset(glob, 4, SEQ, PRED, is_training=False)) > 0


def test_changed_flags_or_inputs_rewrite_and_say_why(tmp_path, corpus, reference):
    _, _, ref_files = reference
    out = _copy(reference, tmp_path)
    paths = shards.shard_paths(out, SHARDS)
    same = pd.create_pretraining_data([corpus], out, VOCAB, pd.PretrainingConfig(**CONFIG),
                                      num_shards=SHARDS, num_workers=1, progress=False)
    assert same["reused_shards"] == paths and same["written_shards"] == []
    assert _files(out) == ref_files
    lines = []
    changed = pd.create_pretraining_data([corpus], out, VOCAB,
                                         pd.PretrainingConfig(**{**CONFIG, "dupe_factor": 1}),
                                         num_shards=SHARDS, progress=False, log=lines.append)
    assert changed["reused_shards"] == [] and changed["written_shards"] == paths
    assert all(r == "made with other flags or inputs: --dupe_factor 2 -> 1"
               for r in changed["invalidated_shards"].values())
    assert len(changed["invalidated_shards"]) == SHARDS and "--dupe_factor 2 -> 1" in lines[0]
    assert changed["instances"] < same["instances"]
    edited = tmp_path / "edited.txt"
    edited.write_bytes(open(corpus, "rb").read() + b"One more review. With two sentences.\n")
    again = pd.create_pretraining_data([str(edited)], out, VOCAB,
                                       pd.PretrainingConfig(**{**CONFIG, "dupe_factor": 1}),
                                       num_shards=SHARDS, progress=False)
    assert set(again["invalidated_shards"].values()) == {
        "made with other flags or inputs: the input files changed"}
    users = f"{out}-00000-of-00009"       # named like a shard, but not albert-tf's
    with open(users, "w", encoding="utf-8") as f:
        f.write("the user's notes\n")
    fewer = pd.create_pretraining_data([str(edited)], out, VOCAB,
                                       pd.PretrainingConfig(**{**CONFIG, "dupe_factor": 1}),
                                       num_shards=2, progress=False, log=lines.append)
    # Issue #44: the shards of the earlier --num_shards (albert-tf's: their completion
    # records) are removed, or a glob of the output reads every record twice; the user's
    # file is left as it was, and said.
    assert fewer["removed_stale_outputs"] == paths and fewer["stale_outputs"] == [users]
    assert not any(os.path.exists(p) or os.path.exists(shards.completion_record_path(p))
                   for p in paths)
    assert open(users, encoding="utf-8").read() == "the user's notes\n"
    assert f"removed {SHARDS} shard(s) an earlier run wrote with another --num_shards" \
        in lines[-2] \
        and "cannot tell it wrote, left as they are" in lines[-1]
    assert sorted(tf.io.gfile.glob(out + "*")) == sorted(shards.shard_paths(out, 2) + [users])


def test_a_second_run_on_the_same_output_is_refused(tmp_path, corpus):
    out = tmp_path / "data.tfrecord"
    with open(tmp_path / ".data.tfrecord.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        with pytest.raises(pd.CreationError, match="another albert-tf-create-pretraining-data "
                                                   "is writing .*data.tfrecord"):
            pd.create_pretraining_data([corpus], str(out), VOCAB,
                                       pd.PretrainingConfig(**CONFIG), progress=False)


def test_shard_regions_hold_exactly_the_documents(tmp_path):
    """The shards' reads (a seek to their first document) give `iter_documents`' documents,
    in order, across files, blank runs, non-UTF-8 lines and files without documents."""
    (tmp_path / "a.txt").write_bytes(b"d0 l1\nd0 l2\n\n\n\nd1\n\xff\xfe bad\n\nd2\n")
    (tmp_path / "b.txt").write_bytes(b"")
    (tmp_path / "c.txt").write_bytes(b"\n\n  \n\xff\n")
    (tmp_path / "d.txt").write_bytes(b"d3 x\n\nd4\n\n" + b"".join(
        f"doc {i} line\nsecond {i}\n\n".encode() for i in range(5, 40)))
    files = [str(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt", "d.txt")]
    sizes = [os.path.getsize(f) for f in files]
    for per_file in (False, True):
        expected = list(iter_documents(files, document_per_file=per_file))
        for count in (1, 3, 7, 50):
            read = ReadStats()
            plans = shards.plan_shards(files, [f"s{i}" for i in range(count)], per_file, read)
            got, first = [], 0
            for plan in plans:
                docs = [d for d, _ in shards.region_documents(files, sizes, plan, per_file)]
                assert len(docs) == plan.documents
                if docs:
                    assert plan.first_document == first
                first += len(docs)
                got.extend(docs)
            assert got == expected, (per_file, shards)
            assert read.documents == len(expected)
