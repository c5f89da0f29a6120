"""The two vocabulary kinds: detection in a model directory and by content, the tokenizer
of each, model directories recording their vocabulary, and a vocabulary that does not fit
the embedding matrix."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import albert_tf
from albert_tf import checkpoints
from albert_tf.checkpoints import CheckpointError, TaskInfo
from albert_tf.text import vocabulary as vocab_lib
from albert_tf.text.vocabulary import SENTENCEPIECE, WORDPIECE, VocabularyError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
WORDS = ["the", "a", "movie", "film", "good", "bad", "was", "is", "it", "this", ",", ".",
         "!", "'", "s", "##s", "##ing", "##ed", "play", "act", "great"]
CASED_WORDS = WORDS + ["The", "Paris"]


def write_wordpiece(path, words=WORDS) -> str:
    """A small BERT-style vocab.txt (specials first, as albert-tf-train-vocab writes it)."""
    return vocab_lib.write_vocab_txt(list(vocab_lib.WORDPIECE_SPECIAL_TOKENS) + words,
                                     str(path))


def tiny_config(vocab_size: int) -> albert_tf.AlbertConfig:
    return albert_tf.AlbertConfig(vocab_size=vocab_size, embedding_size=8, hidden_size=16,
                                  num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=16)


@pytest.fixture(scope="module")
def wordpiece_file(tmp_path_factory):
    return write_wordpiece(tmp_path_factory.mktemp("wp") / "vocab.txt")


def test_find_vocabulary_one_both_or_neither(tmp_path, wordpiece_file):
    spm_dir, wp_dir, both, neither = (tmp_path / n for n in ("spm", "wp", "both", "neither"))
    for d in (spm_dir, wp_dir, both, neither):
        d.mkdir()
    shutil.copy(SPM, spm_dir / "vocab.model")
    shutil.copy(wordpiece_file, wp_dir / "vocab.txt")
    shutil.copy(SPM, both / "vocab.model")
    shutil.copy(wordpiece_file, both / "vocab.txt")
    (neither / "vocab.vocab").write_text("not a vocabulary file name\n")
    assert vocab_lib.find_vocabulary(str(spm_dir)) == (SENTENCEPIECE,
                                                        str(spm_dir / "vocab.model"))
    assert vocab_lib.find_vocabulary(str(wp_dir)) == (WORDPIECE, str(wp_dir / "vocab.txt"))
    assert checkpoints.vocab_path(str(wp_dir)) == str(wp_dir / "vocab.txt")
    with pytest.raises(VocabularyError) as both_error:
        vocab_lib.find_vocabulary(str(both))
    message = str(both_error.value)
    assert "holds both vocab.model (SentencePiece) and vocab.txt (WordPiece)" in message
    assert "delete the file the model was not trained with" in message and "\n" not in message
    with pytest.raises(CheckpointError, match=r"has no vocabulary: expected vocab.model "
                                              r"\(SentencePiece\) or vocab.txt \(WordPiece\)"):
        checkpoints.vocab_path(str(neither))


def test_kind_is_read_from_the_content(tmp_path, wordpiece_file):
    renamed_spm = tmp_path / "spm_named.txt"
    shutil.copy(SPM, renamed_spm)
    renamed_wp = tmp_path / "wordpiece_named.model"
    shutil.copy(wordpiece_file, renamed_wp)
    assert vocab_lib.vocabulary_kind(str(renamed_spm)) == SENTENCEPIECE
    assert vocab_lib.vocabulary_kind(str(renamed_wp)) == WORDPIECE
    assert vocab_lib.kind_from_name(str(renamed_wp)) == SENTENCEPIECE     # names can lie
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x0a\x05\xff\xfe\x00\x01 not a model")
    with pytest.raises(VocabularyError, match=r"garbage.bin is neither a SentencePiece model"):
        vocab_lib.vocabulary_kind(str(garbage))
    with pytest.raises(VocabularyError, match="not found"):
        vocab_lib.vocabulary_kind(str(tmp_path / "missing.txt"))


def test_load_tokenizer_returns_the_kind_s_tokenizer(tmp_path, wordpiece_file):
    from albert_tf.text.tokenizer import AlbertTokenizer
    from albert_tf.text.wordpiece import WordPieceTokenizer
    spm = vocab_lib.load_tokenizer(SPM)
    assert isinstance(spm, AlbertTokenizer) and spm.vocab_size == 8000
    wp = vocab_lib.load_tokenizer(wordpiece_file, do_lower_case=True)
    assert isinstance(wp, WordPieceTokenizer) and wp.vocab_size == 5 + len(WORDS)
    assert (wp.pad_id, wp.unk_id, wp.cls_id, wp.sep_id, wp.mask_id) == (0, 1, 2, 3, 4)
    assert wp.tokenize("The movies!") == ["the", "movie", "##s", "!"]
    directory = tmp_path / "dir"
    directory.mkdir()
    shutil.copy(wordpiece_file, directory / "vocab.txt")
    assert isinstance(vocab_lib.load_tokenizer(str(directory)), WordPieceTokenizer)


def test_casing_rules(tmp_path):
    assert vocab_lib.wordpiece_is_uncased(write_wordpiece(tmp_path / "uncased.txt"))
    assert not vocab_lib.wordpiece_is_uncased(write_wordpiece(tmp_path / "c.txt", CASED_WORDS))
    assert vocab_lib.read_casing(str(tmp_path)) is None
    vocab_lib.write_casing(str(tmp_path), False)
    assert vocab_lib.read_casing(str(tmp_path)) is False
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": "yes"}))
    with pytest.raises(VocabularyError, match="do_lower_case must be true or false"):
        vocab_lib.read_casing(str(tmp_path))


def test_save_model_dir_records_the_vocabulary_kind(tmp_path, wordpiece_file):
    info = TaskInfo("sst2", "classification", label_list=("0", "1"), max_seq_length=16)
    for vocab, kind, name in ((SPM, SENTENCEPIECE, "vocab.model"),
                              (wordpiece_file, WORDPIECE, "vocab.txt")):
        size = vocab_lib.load_tokenizer(vocab).vocab_size
        model = albert_tf.build_classifier(tiny_config(size), 2)
        out = str(tmp_path / kind)
        albert_tf.save_model_dir(model, out, task_info=info, vocab_file=vocab)
        assert sorted(n for n in os.listdir(out) if n.startswith("vocab")) == [name]
        with open(os.path.join(out, "task.json"), encoding="utf-8") as f:
            assert json.load(f)["vocab_type"] == kind
        assert checkpoints.load_task_info(out).vocab_type == kind
        assert vocab_lib.find_vocabulary(out) == (kind, os.path.join(out, name))
    # A task.json written before vocab_type: derived from the directory's vocabulary file.
    old = os.path.join(str(tmp_path / WORDPIECE), "task.json")
    with open(old, encoding="utf-8") as f:
        values = json.load(f)
    del values["vocab_type"]
    with open(old, "w", encoding="utf-8") as f:
        json.dump(values, f)
    assert checkpoints.load_task_info(str(tmp_path / WORDPIECE)).vocab_type == WORDPIECE
    assert checkpoints.recorded_casing(str(tmp_path / WORDPIECE)) is True
    with pytest.raises(ValueError, match="task_info.vocab_type is 'sentencepiece' but .* is a "
                                         "wordpiece vocabulary"):
        albert_tf.save_model_dir(model, str(tmp_path / "x"), vocab_file=wordpiece_file,
                                 task_info=TaskInfo("sst2", "classification", ("0", "1"),
                                                    vocab_type=SENTENCEPIECE))
    with pytest.raises(ValueError, match="task.json vocab_type: unknown 'bpe'"):
        TaskInfo("sst2", "classification", ("0", "1"), vocab_type="bpe")


def test_vocabulary_size_must_fit_the_embedding(tmp_path, wordpiece_file):
    from albert_tf.export.common import ExportError, load_source
    vocab_lib.check_vocab_size(30522, 30522)
    vocab_lib.check_vocab_size(30522, 30528)          # rows padded to a multiple of 8
    with pytest.raises(VocabularyError) as larger:
        vocab_lib.check_vocab_size(8000, 1000, "v.model")
    assert str(larger.value) == (
        "the vocabulary v.model has 8000 tokens but the model's vocab_size (config.json) is "
        "1000: its ids 1000..7999 would index past the embedding; use the vocabulary the model "
        "was trained with, or a config with vocab_size=8000.")
    with pytest.raises(VocabularyError, match=r"has 8000 tokens but .* is 30000: 22000 "
                                              r"embedding rows would never be used"):
        vocab_lib.check_vocab_size(8000, 30000)
    directory = str(tmp_path / "mismatch")
    albert_tf.save_model_dir(albert_tf.build_encoder(tiny_config(100)), directory,
                             vocab_file=wordpiece_file)
    with pytest.raises(ExportError, match=r"vocab.txt has 26 tokens but the model's vocab_size "
                                          r"\(config.json\) is 100"):
        load_source(directory)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ExportError, match="has no vocabulary"):
        load_source(str(empty))


def test_an_empty_vocabulary_is_one_line_without_sentencepiece_s_log(tmp_path, capfd):
    """Issue #44 (fresh pass): an empty vocab.model printed sentencepiece's C++ log
    ("E0000 ... Model is not initialized") before the one-line error; it is refused as
    empty, and a proto without pieces is never handed to sentencepiece."""
    empty, blank = tmp_path / "vocab.model", tmp_path / "blank.txt"
    empty.write_bytes(b"")
    blank.write_text(" \n\n")
    capfd.readouterr()
    with pytest.raises(VocabularyError, match=r"vocab.model is empty: a vocabulary is a "
                       "SentencePiece model"):
        vocab_lib.vocabulary_kind(str(empty))
    with pytest.raises(VocabularyError, match=r"blank.txt is empty \(only whitespace\)"):
        vocab_lib.vocabulary_kind(str(blank))
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    no_pieces = tmp_path / "no_pieces.model"
    no_pieces.write_bytes(model_pb2.ModelProto(trainer_spec=model_pb2.TrainerSpec(
        character_coverage=0.9995)).SerializeToString())     # not UTF-8 text either
    with pytest.raises(VocabularyError, match="is neither a SentencePiece model"):
        vocab_lib.vocabulary_kind(str(no_pieces))
    assert capfd.readouterr().err == ""


def test_a_model_s_vocabulary_is_its_own(tmp_path, wordpiece_file):
    """Issue #44 (fresh pass): `albert-tf-export --vocab_file=` another vocabulary (a
    WordPiece vocab.txt of the model's size) exported with it (48.6% accuracy);
    `model_vocabulary` takes the model directory's own, a copy of it (same sha256), or a
    directory holding one (albert-tf-train-vocab's --output), and refuses another one and a
    vocabulary of another kind than task.json's vocab_type."""
    info = TaskInfo("sst2", "classification", label_list=("0", "1"), max_seq_length=16)
    model = albert_tf.build_classifier(tiny_config(8000), 2)
    model_dir = str(tmp_path / "model")
    albert_tf.save_model_dir(model, model_dir, task_info=info, vocab_file=SPM)
    own = os.path.join(model_dir, "vocab.model")
    assert vocab_lib.model_vocabulary(model_dir) == own
    copy_dir = tmp_path / "trained_vocab"
    copy_dir.mkdir()
    shutil.copy(SPM, copy_dir / "vocab.model")
    assert vocab_lib.model_vocabulary(model_dir, str(copy_dir)) == str(copy_dir / "vocab.model")
    assert vocab_lib.model_vocabulary(model_dir, SPM) == SPM
    with pytest.raises(VocabularyError) as other:
        vocab_lib.model_vocabulary(model_dir, wordpiece_file)
    assert str(other.value) == (
        f"--vocab_file={wordpiece_file} (wordpiece) is not the vocabulary the model was "
        f"trained with, {own} (sentencepiece, another sha256): its embeddings would get "
        "another vocabulary's ids. Drop --vocab_file (the model directory's vocabulary is "
        f"used), or pass --vocab_file={own}.")
    os.remove(own)                                   # a model directory without its vocabulary
    with pytest.raises(VocabularyError, match=r"is a wordpiece vocabulary but the model in .* "
                       r"was trained with a sentencepiece one \(task.json vocab_type\)"):
        vocab_lib.model_vocabulary(model_dir, wordpiece_file)
    assert vocab_lib.model_vocabulary(model_dir, SPM) == SPM
    with pytest.raises(VocabularyError, match="has no vocabulary"):
        vocab_lib.model_vocabulary(model_dir)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_written_vocabularies_have_the_umask_s_modes(tmp_path, umask, mode):
    """Issue #44 (fresh pass): albert-tf-train-vocab's vocab.txt (`write_vocab_txt`) was
    0600 under umask 022 (``tempfile.mkstemp``), unreadable to another user; it and
    `pad_sentencepiece`'s model get the umask's modes, as every output does."""
    import stat
    old = os.umask(umask)
    try:
        txt = write_wordpiece(tmp_path / "vocab.txt")
        padded = vocab_lib.pad_sentencepiece(SPM, 8008, str(tmp_path / "padded.model"))
    finally:
        os.umask(old)
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in (txt, padded)} == {mode}
    assert sorted(os.listdir(tmp_path)) == ["padded.model", "vocab.txt"]   # no stage left
