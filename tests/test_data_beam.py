"""`albert-tf-create-pretraining-data --runner=beam` (issue #30): the shards written by an
Apache Beam pipeline (FnApiRunner, 1 and 2 workers) are byte for byte the local path's for
the same flags and --num_shards, on real text; the summary's per-shard counts agree; a rerun
keeps finished shards; bad input is one line and writes nothing, as with --runner=local."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from albert_tf.data import pretraining_beam as pb
from albert_tf.data import pretraining_data as pd
from tests.console_scripts import finish, one_error_line, start
from tests.repo_files import imdb_head

pytest.importorskip("apache_beam", reason="pip install 'albert-tf[beam]'")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
SHARDS = 3
CONFIG = dict(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2, random_seed=5,
              shuffle_buffer=300)
SCRIPT = "albert-tf-create-pretraining-data"


def _flags(corpus: str, out: str) -> list[str]:
    return [f"--input_file={corpus}", f"--output_file={out}", f"--vocab_file={VOCAB}",
            *(f"--{k}={v}" for k, v in CONFIG.items()), f"--num_shards={SHARDS}",
            "--noprogress"]


def _sha256(summary: dict) -> list[str]:
    return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in summary["outputs"]]


def _counts(summary: dict) -> dict:
    keep = ("documents", "instances", "tokens", "span_lengths", "skipped", "num_shards",
            "shard_records")
    return json.loads(json.dumps({k: summary[k] for k in keep}))    # as the CLI prints it


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir) -> str:
    """~200 KB of IMDB reviews, cut at a document boundary."""
    path = tmp_path_factory.mktemp("corpus") / "imdb.txt"
    path.write_bytes(imdb_head(data_dir, 200_000))
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpus):
    """The local path, and the Beam runner with 1 and 2 workers (in this process), and the
    CLI's --runner=beam with 2 workers (a process started first, finished last)."""
    root = tmp_path_factory.mktemp("runs")
    cli = start(str(root), SCRIPT, *_flags(corpus, str(root / "cli" / "data.tfrecord")),
                "--runner=beam",
                "--beam_pipeline_options=--runner=FnApiRunner,--direct_num_workers=2")
    config = pd.PretrainingConfig(**CONFIG)
    out = {"local": pd.create_pretraining_data([corpus], str(root / "local" / "data.tfrecord"),
                                               VOCAB, config, num_shards=SHARDS,
                                               progress=False)}
    for workers in (1, 2):
        out[f"beam{workers}"] = pb.create_pretraining_data_beam(
            [corpus], str(root / f"beam{workers}" / "data.tfrecord"), VOCAB,
            pd.PretrainingConfig(**CONFIG), num_shards=SHARDS, progress=False,
            beam_options=[f"--direct_num_workers={workers}"])
    code, stdout, stderr = finish(cli)
    assert code == 0, stderr[-3000:]
    out["cli"] = json.loads(stdout[stdout.index("{"):stdout.rindex("}") + 1])
    return out


@pytest.mark.slow
def test_beam_writes_the_local_paths_bytes(runs):
    local = _sha256(runs["local"])
    assert len(local) == SHARDS and runs["local"]["instances"] > 500
    print({name: [h[:12] for h in _sha256(s)] for name, s in runs.items()})
    for name in ("beam1", "beam2", "cli"):
        assert _sha256(runs[name]) == local, name
        assert _counts(runs[name]) == _counts(runs["local"]), name
        assert runs[name]["written_shards"] == runs[name]["outputs"], name
    assert sum(runs["local"]["shard_records"]) == runs["local"]["instances"]
    assert all(runs["local"]["shard_records"])


@pytest.mark.slow
def test_rerun_keeps_finished_shards(runs, corpus, tmp_path):
    """As the local path (tests/test_data_creation_restart.py): a killed run's partial file
    is removed, finished shards are kept, a shard without its completion record rewritten."""
    source = os.path.dirname(runs["beam1"]["outputs"][0])
    shutil.copytree(source, tmp_path / "copy")
    out = str(tmp_path / "copy" / "data.tfrecord")
    paths = pd.shard_paths(out, SHARDS)
    os.remove(pd.completion_record_path(paths[1]))              # killed before its record
    partial = tmp_path / "copy" / f".{os.path.basename(paths[2])}.tmp-99999"
    partial.write_bytes(b"half a shard")
    lines = []
    again = pb.create_pretraining_data_beam([corpus], out, VOCAB, pd.PretrainingConfig(**CONFIG),
                                            num_shards=SHARDS, progress=False,
                                            log=lines.append)
    assert again["reused_shards"] == [paths[0], paths[2]]
    assert again["written_shards"] == [paths[1]]
    assert "no completion record" in again["invalidated_shards"][paths[1]]
    assert again["removed_partial_files"] == [str(partial)] and not partial.exists()
    assert _sha256(again) == _sha256(runs["local"])
    assert _counts(again) == _counts(runs["local"])
    assert lines and lines[0].startswith("kept 2 finished shard(s) of 3; writing 1")


@pytest.mark.slow
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, corpus):
    """Each case: exit status 1, one line on stderr naming the problem, the working
    directory as it was (both runners check before writing; the Beam ones before Beam or
    TensorFlow does anything)."""
    (tmp_path / "not_a_vocab.bin").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "mine.tfrecord").write_text("the user's file\n")
    fake = tmp_path / "no_beam" / "apache_beam"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'apache_beam'\")\n")
    beam = "--runner=beam"
    cases = {
        "missing-input": ([f"--input_file={tmp_path}/nope-*.txt", "--output_file=out/x",
                           f"--vocab_file={VOCAB}", beam], "no input file matches", {}),
        "missing-vocabulary": ([f"--input_file={corpus}", "--output_file=out/x",
                                "--vocab_file=none.model", beam],
                               "vocabulary file not found: none.model", {}),
        "not-a-vocabulary": ([f"--input_file={corpus}", "--output_file=out/x",
                              "--vocab_file=not_a_vocab.bin", beam],
                             "neither a SentencePiece model", {}),
        "users-output": ([f"--input_file={corpus}", "--output_file=mine.tfrecord",
                          f"--vocab_file={VOCAB}", beam],
                         "mine.tfrecord exists and albert-tf did not write it", {}),
        "unknown-runner": ([f"--input_file={corpus}", "--output_file=out/x",
                            f"--vocab_file={VOCAB}", beam,
                            "--beam_pipeline_options=--runner=NoSuchRunner"],
                           "--runner=NoSuchRunner: Unexpected pipeline runner", {}),
        "no-beam": ([f"--input_file={corpus}", "--output_file=out/x", f"--vocab_file={VOCAB}",
                     beam], "pip install 'albert-tf[beam]'",
                    {"PYTHONPATH": str(fake.parent)}),
    }
    before = sorted(os.listdir(tmp_path))
    started = {name: start(str(tmp_path), SCRIPT, *args, **env)
               for name, (args, _, env) in cases.items()}
    for name, process in started.items():
        code, _, err = finish(process)
        assert code == 1, (name, err)
        assert cases[name][1] in one_error_line(err), (name, err)
    assert sorted(os.listdir(tmp_path)) == before


def test_pipeline_options():
    assert pb.pipeline_args([]) == ["--runner=FnApiRunner"]
    assert pb.pipeline_args(["--direct_num_workers=1"]) == ["--runner=FnApiRunner",
                                                             "--direct_num_workers=1"]
    assert pb.pipeline_args(["--direct_num_workers=2"]) == [
        "--runner=FnApiRunner", "--direct_num_workers=2", "--direct_running_mode=multi_processing"]
    assert pb.pipeline_args(["--runner=DataflowRunner"]) == ["--runner=DataflowRunner"]
    with pytest.raises(ValueError, match="Beam does not know '--no_such_option=1'"):
        pb.pipeline_options(["--no_such_option=1"])
    with pytest.raises(ValueError, match="'two' is not a --flag=value"):
        pb.pipeline_options(["two"])
    with pytest.raises(ValueError, match="--direct_num_workers: invalid int value: 'two'"):
        pb.pipeline_options(["--direct_num_workers=two"])
