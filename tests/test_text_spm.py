"""albert-tf-train-spm: an ALBERT-style SentencePiece vocabulary from real corpus text."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sentencepiece as spm

from albert_tf.text.spm_training import USER_DEFINED_SYMBOLS, VocabularyError, train_sentencepiece

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_cli_trains_an_albert_vocabulary(tmp_path, data_dir):
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), "rb") as f:
        sample = f.read(1_500_000)
    (tmp_path / "a.txt").write_bytes(sample + b"\n\xff\xfe not utf-8\n")
    (tmp_path / "b.txt").write_text("Some More Text For The Glob.\n")
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.bin.train_spm", f"--input={tmp_path}/*.txt",
         f"--model_prefix={tmp_path}/vocab/v1k", "--vocab_size=1000", "--do_lower_case",
         "--num_threads=2"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["files"] == 2 and summary["skipped_non_utf8"] == 1
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "vocab" / "v1k.model"))
    assert sp.get_piece_size() == 1000
    assert [sp.id_to_piece(i) for i in range(5 + len(USER_DEFINED_SYMBOLS))] == \
        ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"] + USER_DEFINED_SYMBOLS
    assert sp.is_control(2) and sp.is_control(4) and sp.is_unknown(1)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert not any(p != p.lower() for p in pieces[5:] if p not in ("<unk>",))
    assert (tmp_path / "vocab" / "v1k.vocab").exists()


def test_bad_inputs(tmp_path):
    with pytest.raises(VocabularyError, match="no input file matches"):
        train_sentencepiece([str(tmp_path / "missing*.txt")], str(tmp_path / "m"), 100)


def test_committed_project_vocabulary():
    path = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
    assert os.path.getsize(path) < 500_000
    sp = spm.SentencePieceProcessor(model_file=path)
    assert sp.get_piece_size() == 8000
    assert [sp.piece_to_id(p) for p in ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")] == [0, 1, 2, 3, 4]
