"""The training side with a WordPiece vocabulary (issue #18): pretraining data with
whole-word masking over ``##`` pieces, ``albert-tf-finetune`` from a BERT-shaped model
directory holding ``vocab.txt``, compression data, SQuAD offsets. The vocabulary is
trained here on a slice of the IMDB corpus (``train_wordpiece``, well under a second)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.text.vocabulary import WORDPIECE, load_tokenizer, write_casing
from albert_tf.text.wordpiece import WordPieceTokenizer
from albert_tf.text.wordpiece_training import train_wordpiece
from tests.repo_files import imdb_head

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, PRED = 64, 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir) -> str:
    path = tmp_path_factory.mktemp("corpus") / "imdb.txt"
    path.write_bytes(imdb_head(data_dir, 200_000))
    return str(path)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory, corpus) -> str:
    """An uncased 2,000-token WordPiece vocabulary of the corpus slice."""
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    train_wordpiece([corpus], path, vocab_size=2000)
    return path


@pytest.fixture(scope="module")
def tok(vocab) -> WordPieceTokenizer:
    return load_tokenizer(vocab)


def _env() -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    return env


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", module, *args], env=_env(), cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result


# ------------------------------------------------------------------ pretraining data
def _records(path: str) -> list[dict]:
    from albert_tf.backend import tf
    out = []
    for raw in tf.data.TFRecordDataset(path):
        feature = tf.train.Example.FromString(raw.numpy()).features.feature
        out.append({k: list(v.int64_list.value or v.float_list.value)
                    for k, v in feature.items()})
    return out


def _words(tokens: list[str], tok: WordPieceTokenizer) -> list[list[int]]:
    """Positions of each whole word: a piece and the ``##`` pieces after it (``[CLS]``,
    ``[SEP]`` and padding end a word; a ``##`` piece a segment starts with has no head)."""
    words: list[list[int]] = []
    open_word = False
    for i, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]", "[PAD]"):
            open_word = False
        elif tok.is_word_start(token):
            words.append([i])
            open_word = True
        elif open_word:
            words[-1].append(i)
    return words


def _check_whole_words(record: dict, tok: WordPieceTokenizer) -> int:
    """Asserts every word is masked entirely or not at all; returns how many multi-piece
    words are masked."""
    k = int(sum(record["masked_lm_weights"]))
    positions = record["masked_lm_positions"][:k]
    ids = list(record["input_ids"])
    for p, original in zip(positions, record["masked_lm_ids"][:k]):
        ids[p] = original
    tokens = tok.convert_ids_to_tokens(ids)
    masked = set(positions)
    multi = 0
    for word in _words(tokens, tok):
        covered = masked.intersection(word)
        assert not covered or covered == set(word), (
            [tokens[i] for i in word], sorted(covered))
        multi += bool(covered) and len(word) > 1
    starts = [int(tok.is_word_start(t)) for t in tokens]
    length = sum(record["input_mask"])
    assert record["token_boundary"][:length] == starts[:length]
    return multi


@pytest.mark.slow
def test_pretraining_data_masks_whole_wordpiece_words(tmp_path, corpus, vocab, tok):
    out = tmp_path / "pretrain.tfrecord"
    result = _run("albert_tf.bin.create_pretraining_data", f"--input_file={corpus}",
                  f"--output_file={out}", f"--vocab_file={vocab}", f"--max_seq_length={SEQ}",
                  f"--max_predictions_per_seq={PRED}", "--dupe_factor=1", "--noprogress")
    summary = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    records = _records(str(out))
    assert len(records) == summary["instances"] > 200
    assert 0.12 <= summary["masked_fraction"] <= 0.18
    assert sum(_check_whole_words(r, tok) for r in records) > 100   # ## pieces do get masked
    done = json.loads((tmp_path / ".pretrain.tfrecord.done.json").read_text())
    assert done["fingerprint"]["vocabulary"]["kind"] == WORDPIECE

    from albert_tf.data.pretraining import pretraining_dataset
    batch = next(iter(pretraining_dataset(str(out), 8, SEQ, PRED, is_training=False)))
    assert batch["input_word_ids"].shape == (8, SEQ)
    assert batch["masked_lm_positions"].shape == (8, PRED)
    assert int(np.max(batch["input_word_ids"])) < tok.vocab_size
    first = records[0]
    np.testing.assert_array_equal(batch["input_word_ids"][0], first["input_ids"])
    np.testing.assert_array_equal(batch["masked_lm_ids"][0], first["masked_lm_ids"])


def test_random_replacements_are_ordinary_tokens(tok):
    from albert_tf.data.pretraining_data import replacement_ids
    ids = replacement_ids(tok)
    tokens = set(tok.convert_ids_to_tokens(ids))
    assert len(ids) == tok.vocab_size - 5
    assert not tokens & {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}


def test_changing_the_vocabulary_kind_is_named(tmp_path, corpus, vocab):
    from albert_tf import resources
    from albert_tf.data.pretraining_data import PretrainingConfig
    from albert_tf.data.pretraining_shards import creation_fingerprint, what_changed
    config = PretrainingConfig()
    old = creation_fingerprint([corpus], resources.resolve(resources.DEFAULT_VOCAB), config, 1)
    new = creation_fingerprint([corpus], vocab, config, 1)
    assert old["vocabulary"]["kind"] == "sentencepiece"
    assert "the vocabulary changed (sentencepiece -> wordpiece)" in what_changed(old, new)


# ------------------------------------------------------------------------ finetuning
def _bert_dir(directory: str, vocab: str, do_lower_case: bool = True) -> str:
    """A randomly initialised BERT-shaped (E == H, nothing shared) encoder directory with
    the WordPiece vocabulary and its casing, as `albert-tf-convert` writes one."""
    import albert_tf
    config = albert_tf.load_config("bert_tiny").replace(
        vocab_size=WordPieceTokenizer(vocab).vocab_size)
    assert config.is_bert
    albert_tf.save_model_dir(albert_tf.build_pretrainer(config), directory, config,
                             vocab_file=vocab)
    write_casing(directory, do_lower_case)
    return directory


@pytest.mark.slow
def test_finetune_binary_from_a_bert_directory_with_vocab_txt(tmp_path, data_dir, vocab):
    from albert_tf import checkpoints
    from tests.compression_fixtures import tiny_sst2_dir
    init = _bert_dir(str(tmp_path / "bert"), vocab)
    data = tiny_sst2_dir(str(tmp_path / "data"), data_dir, train=512, dev=128)
    out = tmp_path / "sst2"
    result = _run("albert_tf.bin.finetune", "--task=sst2", f"--data_dir={data}",
                  f"--init_checkpoint={init}", f"--model_dir={out}", "--num_train_steps=30",
                  "--max_seq_length=64", "--train_batch_size=16", "--eval_batch_size=64",
                  "--learning_rate=0.001", "--steps_per_loop=10", "--validation_interval=30",
                  "--params_override=trainer.validation_steps=2")
    assert f"initialized from {init}: loaded" in result.stdout
    assert "eval at step 30: accuracy" in result.stdout and "examples 128" in result.stdout
    for name in ("final", "best"):
        with open(tmp_path / "bert" / "vocab.txt", "rb") as f:
            assert (out / name / "vocab.txt").read_bytes() == f.read()
        assert not (out / name / "vocab.model").exists()
        task = json.loads((out / name / "task.json").read_text())
        assert task["vocab_type"] == WORDPIECE and task["do_lower_case"] is True
    info = checkpoints.load_task_info(str(out / "final"))
    assert info.head == "classification" and info.vocab_type == WORDPIECE


def _finetune_config(init: str = "", **task):
    """albert-tf-finetune's experiment with ``task`` given, after the init defaults."""
    from albert_tf.bin.finetune import defaults, init_directory_defaults, unset_init_defaults
    config = unset_init_defaults(defaults())
    config.model.init_checkpoint = init
    for key, value in task.items():
        setattr(config.task, key, value)
    init_directory_defaults(config)
    return config


def test_config_vocabulary_and_casing_default_to_the_init_directory(tmp_path, vocab):
    init = _bert_dir(str(tmp_path / "cased"), vocab, do_lower_case=False)
    config = _finetune_config(init)
    assert config.task.vocab_file == os.path.join(init, "vocab.txt")
    assert config.task.do_lower_case is False and config.model.config == ""
    given = _finetune_config(init, vocab_file="mine.txt", do_lower_case=True)
    assert (given.task.vocab_file, given.task.do_lower_case) == ("mine.txt", True)
    plain = _finetune_config()     # no init directory: albert_mini, the project's vocabulary
    assert (plain.task.vocab_file, plain.task.do_lower_case) == ("", True)
    assert plain.model.config == "albert_mini"


def test_a_vocabulary_other_than_the_init_directorys_is_refused(tmp_path, vocab):
    """A config file's SentencePiece vocab_file with a WordPiece init directory would give
    the embeddings another vocabulary's ids: one line naming both and the flag."""
    import shutil

    from albert_tf.training.experiment_config import ConfigValueError
    init = _bert_dir(str(tmp_path / "bert"), vocab)
    project = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")
    with pytest.raises(ConfigValueError, match=r"\(sentencepiece\) is not the vocabulary .*"
                       r"vocab.txt \(wordpiece\).*Pass --vocab_file=") as error:
        _finetune_config(init, vocab_file=project)
    assert "\n" not in str(error.value)
    copy = str(tmp_path / "copy.txt")          # the same vocabulary elsewhere is fine
    shutil.copyfile(vocab, copy)
    assert _finetune_config(init, vocab_file=copy).task.vocab_file == copy


def test_a_vocabulary_larger_than_the_embedding_is_refused(vocab, tok):
    from albert_tf.training.experiment_config import ConfigValueError
    from albert_tf.training.tasks import ClassificationTask
    from tests.training_fixtures import tiny_experiment
    config = tiny_experiment("")
    config.task.vocab_file = vocab
    config.model.config = "bert_tiny"         # 1,000 embedding rows
    with pytest.raises(ConfigValueError, match=rf"has {tok.vocab_size} tokens but the model's "
                       r"embedding has 1000 rows.*model.vocab_size="):
        ClassificationTask(config).tokenizer


# ----------------------------------------------------------------------- compression
def test_compression_data_with_a_wordpiece_vocabulary(tmp_path, data_dir, vocab, tok):
    from albert_tf.compression.data import load_task_inputs
    from tests.compression_fixtures import sst2_task_info, tiny_sst2_dir
    data = tiny_sst2_dir(str(tmp_path / "data"), data_dir, train=64, dev=32)
    inputs = load_task_inputs(sst2_task_info(32), data, vocab)
    assert isinstance(inputs.tokenizer, WordPieceTokenizer)
    features, labels = inputs.encoded(inputs.dev[:8])
    assert features["input_word_ids"].shape == (8, 32) and labels.shape == (8,)
    first = inputs.dev[0].text_a
    expected = tok.pack(first, max_seq_length=32)["input_word_ids"]
    np.testing.assert_array_equal(features["input_word_ids"][0], expected)
    batch, _ = next(iter(inputs.train_dataset(16)))
    assert batch["input_word_ids"].shape[0] == 16


# ----------------------------------------------------------------------------- SQuAD
def _squad_examples(corpus: str, n: int, seed: int = 0):
    """Questions over IMDB paragraphs whose answers are runs of 1-4 whitespace-separated
    words (punctuation and HTML included) at random places; every fourth starts at the
    accented words appended to each paragraph (accent stripping keeps the offsets)."""
    from albert_tf.data.squad import SquadExample
    rng = random.Random(seed)
    with open(corpus, encoding="utf-8") as f:
        paragraphs = [p.strip()[:600] for p in f.read().split("\n\n") if p.strip()]
    examples = []
    for i, context in enumerate(paragraphs[:n]):
        context += " Café naïve résumé."
        words = [m.span() for m in re.finditer(r"\S+", context)]
        a = len(words) - 3 if i % 4 == 0 else rng.randrange(len(words))
        b = min(len(words) - 1, a + rng.randrange(4))
        start, end = words[a][0], words[b][1]
        examples.append(SquadExample(str(i), "What is said?", context, context[start:end],
                                     start, answers=[context[start:end]]))
    return examples


def test_squad_features_map_wordpiece_spans_back_to_the_text(corpus, tok):
    from albert_tf.data.squad import (convert_examples_to_features, postprocess_predictions,
                                      span_to_text)
    examples = _squad_examples(corpus, 60)
    features = convert_examples_to_features(examples, tok, max_seq_length=96, doc_stride=32,
                                            max_query_length=16, is_training=True)
    answered = [f for f in features if not f.is_impossible]
    assert len(answered) >= len(examples) and len(features) > len(examples)
    for f in answered:
        ex = examples[f.example_index]
        assert span_to_text(ex, f, f.start_position, f.end_position) == ex.answer_text
    # The same spans as predictions: one-hot logits at the gold positions.
    start_logits = np.full((len(features), 96), -10.0)
    end_logits = np.full((len(features), 96), -10.0)
    for i, f in enumerate(features):
        if not f.is_impossible and f.token_is_max_context[f.start_position]:
            start_logits[i, f.start_position] = end_logits[i, f.end_position] = 10.0
    predictions = postprocess_predictions(examples, features, start_logits, end_logits,
                                          max_answer_length=96)
    assert {ex.qas_id: ex.answer_text for ex in examples} == predictions
