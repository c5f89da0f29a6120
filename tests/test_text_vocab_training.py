"""albert-tf-train-vocab: WordPiece vocabularies (the `tokenizers` trainer) that Hugging Face's
BertTokenizer and ours read alike, SentencePiece through the same binary, the atomic write,
and bad input in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from albert_tf.text import vocabulary as vocab_lib
from albert_tf.text.spm_training import VocabularyError
from albert_tf.text.wordpiece_training import train_wordpiece

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _binary(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"albert_tf.bin.{module}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def imdb(data_dir):
    """The first 1.5 MB of the IMDB corpus (training) and 300 later reviews (checking)."""
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), "rb") as f:
        train = f.read(1_500_000)
        held_out = [line.decode("utf-8") for line in f.read(2_000_000).splitlines()[1:301]]
    return train, held_out


def test_cli_trains_a_wordpiece_vocabulary_that_bert_tokenizers_read_alike(tmp_path, imdb,
                                                                        data_dir):
    transformers = pytest.importorskip("transformers")
    from albert_tf.text.wordpiece import WordPieceTokenizer
    (tmp_path / "imdb.txt").write_bytes(imdb[0] + b"\n\xff\xfe not utf-8\n")
    docs = os.path.join(data_dir, "corpus", "python-docs", "tutorial", "**", "*.txt")
    out = tmp_path / "wp"
    result = _binary("train_vocab", "--type=wordpiece", f"--input={tmp_path}/imdb.txt,{docs}",
                     "--vocab_size=2000", f"--output={out}", "--num_threads=2")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["files"] > 2 and summary["skipped_non_utf8"] == 1
    assert summary["vocab_size"] == 2000 and summary["vocab"] == str(out / "vocab.txt")
    tokens = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert tokens[:5] == SPECIALS and len(tokens) == len(set(tokens)) == 2000
    assert vocab_lib.wordpiece_is_uncased(str(out / "vocab.txt"))
    assert vocab_lib.find_vocabulary(str(out)) == ("wordpiece", str(out / "vocab.txt"))
    assert sorted(os.listdir(out)) == [".albert-tf-output.json", "vocab.txt"]   # no temp file
    assert sorted(os.listdir(tmp_path)) == ["imdb.txt", "wp"]           # no staging left

    hf = transformers.BertTokenizerFast.from_pretrained(str(out))
    assert (hf.pad_token_id, hf.unk_token_id, hf.cls_token_id, hf.sep_token_id,
            hf.mask_token_id) == (0, 1, 2, 3, 4)
    ours = WordPieceTokenizer(str(out / "vocab.txt"))
    held_out = imdb[1]
    for text in held_out:
        assert ours.encode(text) == hf(text, add_special_tokens=False)["input_ids"], text
    ids = [i for text in held_out for i in ours.encode(text)]
    assert ids.count(1) / len(ids) < 0.002              # [UNK]: only rare characters


def test_cased_vocabulary_keeps_case_and_accents(tmp_path, imdb):
    transformers = pytest.importorskip("transformers")
    from albert_tf.text.wordpiece import WordPieceTokenizer
    (tmp_path / "imdb.txt").write_bytes(imdb[0][:600_000] + "\nCafé Zürich\n".encode() * 5)
    summary = train_wordpiece([str(tmp_path / "imdb.txt")], str(tmp_path / "vocab.txt"),
                              vocab_size=1500, do_lower_case=False)
    assert summary["do_lower_case"] is False and summary["vocab_size"] == 1500
    tokens = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert {"The", "I", "é", "ü"} <= set(tokens)
    assert not vocab_lib.wordpiece_is_uncased(str(tmp_path / "vocab.txt"))
    hf = transformers.BertTokenizerFast.from_pretrained(str(tmp_path), do_lower_case=False)
    ours = WordPieceTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=False)
    text = "The Café in Zürich was GREAT."
    ids = hf(text, add_special_tokens=False)["input_ids"]
    assert ours.encode(text) == ids and hf.convert_ids_to_tokens(ids)[0] == "The"
    assert 1 not in ids                                  # é and ü are in the alphabet


def test_vocab_txt_is_written_atomically(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\nold\n", encoding="utf-8")

    def tokens():
        yield from SPECIALS
        raise KeyboardInterrupt                       # a crash in the middle of the write

    with pytest.raises(KeyboardInterrupt):
        vocab_lib.write_vocab_txt(tokens(), str(path))
    assert path.read_text(encoding="utf-8") == "[PAD]\nold\n"
    assert os.listdir(tmp_path) == ["vocab.txt"]
    vocab_lib.write_vocab_txt(SPECIALS, str(path))
    assert path.read_text(encoding="utf-8").splitlines() == SPECIALS


def test_bad_input_is_one_line(tmp_path, imdb):
    with pytest.raises(VocabularyError, match="no input file matches"):
        train_wordpiece([str(tmp_path / "missing*.txt")], str(tmp_path / "v.txt"))
    (tmp_path / "blank.txt").write_text("\n   \n\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=r"no text to train on: \[.*blank.txt'\] hold no "
                                              r"non-empty UTF-8 line"):
        train_wordpiece([str(tmp_path / "blank.txt")], str(tmp_path / "v.txt"))
    (tmp_path / "small.txt").write_bytes(imdb[0][:200_000])
    with pytest.raises(VocabularyError, match=r"vocab_size=60 is too small for this corpus: .* "
                                              r"already take \d+ entries"):
        train_wordpiece([str(tmp_path / "small.txt")], str(tmp_path / "v.txt"), vocab_size=60)
    assert not (tmp_path / "v.txt").exists()

    result = _binary("train_vocab", "--type=wordpiece", f"--input={tmp_path}/blank.txt",
                     f"--output={tmp_path}/out")
    assert result.returncode == 1 and not (tmp_path / "out").exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("albert-tf-train-vocab: error: no text to train on")
    missing = _binary("train_vocab", f"--input={tmp_path}/small.txt")
    assert "error: required: --type, --output" in missing.stderr


def test_sentencepiece_through_train_vocab_and_the_train_spm_alias(tmp_path, imdb):
    (tmp_path / "imdb.txt").write_bytes(imdb[0][:400_000])
    out = tmp_path / "spm"
    result = _binary("train_vocab", "--type=sentencepiece", f"--input={tmp_path}/imdb.txt",
                     "--vocab_size=400", f"--output={out}", "--num_threads=2")
    assert result.returncode == 0, result.stderr[-2000:]
    assert vocab_lib.find_vocabulary(str(out)) == ("sentencepiece", str(out / "vocab.model"))
    tokenizer = vocab_lib.load_tokenizer(str(out))
    assert tokenizer.vocab_size == 400 and (tokenizer.pad_id, tokenizer.mask_id) == (0, 4)
    both = _binary("train_spm", f"--input={tmp_path}/imdb.txt", f"--output={out}",
                   f"--model_prefix={tmp_path}/p")
    assert both.returncode == 1
    assert "error: give one of --output=DIR and --model_prefix=PREFIX" in both.stderr
