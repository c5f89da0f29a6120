"""``albert-tf-convert --to=keras_hub``: our model directory -> keras-hub preset (issue #18).

Random-weight tiny ALBERT (two hidden groups of two inner layers, SentencePiece) and BERT
(E == H, nothing shared, a WordPiece vocabulary trained here on the shared IMDB corpus)
are exported, loaded back with keras-hub's ``from_preset`` and run on the real SST-2 dev
sentences; keras-hub -> ours -> keras-hub gives the weights back bit for bit; the
preset's preprocessors give our ids on raw text (ALBERT: the vocabulary carries our
preprocessing; BERT: on printable ASCII, see `test_bert_preprocessor_from_preset_differs_only_
outside_ascii`), a BERT-shaped classifier is a BertTextClassifier preset (the ALBERT task
presets: `tests/test_interop_keras_hub_tasks.py`); bad inputs are one line each. keras-hub is
imported only here and in the interop module.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import os
import pathlib
import random
import re
import shutil
import types

import numpy as np
import pytest

import albert_tf
from albert_tf.bin.convert import run_conversion
from albert_tf.interop.keras_hub import build_backbone, hub_layout, hub_weights
from albert_tf.text.tokenizer import AlbertTokenizer

keras_hub = pytest.importorskip("keras_hub")

TOL = 1e-5
SPM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "official_configs", "vocab", "imdb_pydocs_8k.model")
SEQ = 128


def randomize(weights, seed: int) -> None:
    """Weights large enough that a wrong mapping shows: LayerNorm gamma ~ 1 +- 0.2."""
    rng = np.random.RandomState(seed)
    for w in weights:
        name = w.path if hasattr(w, "path") else w.name
        if "gamma" in name:
            value = 1.0 + 0.2 * rng.standard_normal(w.shape)
        elif "beta" in name or "bias" in name:
            value = 0.1 * rng.standard_normal(w.shape)
        else:
            value = 0.2 * rng.standard_normal(w.shape)
        w.assign(value.astype("float32"))


def save_ours(config: albert_tf.AlbertConfig, directory, vocab: str | None = None) -> str:
    model = albert_tf.build_pretrainer(config)
    randomize(model.weights, 0)
    spm = vocab if vocab and vocab.endswith(".model") else None
    albert_tf.save_model_dir(model, str(directory), vocab_file=spm)
    if vocab and vocab.endswith(".txt"):
        shutil.copyfile(vocab, os.path.join(str(directory), "vocab.txt"))
    return str(directory)


def export(model_dir: str, out, capsys) -> tuple[int, str, str]:
    """``albert-tf-convert --to=keras_hub``: (status, stdout, stderr)."""
    capsys.readouterr()
    status = run_conversion(None, "keras_hub", model_dir, str(out))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def export_once(model_dir: str, out) -> types.SimpleNamespace:
    """`export` for a module fixture (no ``capsys`` there): the preset at ``out`` and the
    conversion's ``status``, ``out`` and ``err``, shared read-only by the tests that
    read the same model directory's preset."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = run_conversion(None, "keras_hub", model_dir, str(out))
    return types.SimpleNamespace(path=str(out), status=status, out=stdout.getvalue(),
                                 err=stderr.getvalue())


@pytest.fixture(scope="module")
def sentences(data_dir) -> list[str]:
    with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        return [row[0] for row in list(csv.reader(f, delimiter="\t",
                                                  quoting=csv.QUOTE_NONE))[1:]]


@pytest.fixture(scope="module")
def wordpiece_vocab(data_dir, tmp_path_factory) -> str:
    """An uncased WordPiece ``vocab.txt`` trained on 4,000 lines of the IMDB corpus."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=3000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        tokenizer.train_from_iterator(list(itertools.islice(f, 4000)), trainer)
    directory = tmp_path_factory.mktemp("wordpiece")
    tokenizer.model.save(str(directory))
    return str(directory / "vocab.txt")


@pytest.fixture(scope="module")
def albert_dir(tmp_path_factory) -> str:
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=8000, num_hidden_groups=2,
                                                         inner_group_num=2)
    return save_ours(config, tmp_path_factory.mktemp("albert") / "ours", SPM)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, wordpiece_vocab) -> str:
    with open(wordpiece_vocab, encoding="utf-8") as f:
        size = len(f.read().splitlines())
    config = albert_tf.load_config("albert_tiny").replace(vocab_size=size, embedding_size=32,
                                                         sharing="none")
    return save_ours(config, tmp_path_factory.mktemp("bert") / "ours", wordpiece_vocab)


def max_diffs(model_dir: str, backbone, ids: list[list[int]]) -> dict[str, float]:
    """Max abs differences of ours vs keras-hub on ``[CLS] ids [SEP]``, padded to SEQ."""
    ids = [[2] + x[:SEQ - 2] + [3] for x in ids]                  # [CLS]/[SEP]: 2/3 in both
    word = np.zeros((len(ids), SEQ), np.int32)
    for row, x in enumerate(ids):
        word[row, :len(x)] = x
    mask = (np.arange(SEQ)[None] < np.array([len(x) for x in ids])[:, None]).astype(np.int32)
    types = np.zeros_like(word)
    ours = albert_tf.load_encoder(model_dir)(
        {"input_word_ids": word, "input_mask": mask, "input_type_ids": types})
    theirs = backbone({"token_ids": word, "segment_ids": types, "padding_mask": mask})
    return {k: float(np.abs(ours[k].numpy() - np.asarray(theirs[k])).max())
            for k in ("sequence_output", "pooled_output")}


# ----------------------------------------------------------------- (a) outputs match
@pytest.fixture(scope="module")
def albert_export(albert_dir, tmp_path_factory) -> types.SimpleNamespace:
    """`albert_dir` exported once (`export_once`): the tests below read its preset."""
    return export_once(albert_dir, tmp_path_factory.mktemp("albert_preset") / "kh")


@pytest.fixture(scope="module")
def bert_export(bert_dir, tmp_path_factory) -> types.SimpleNamespace:
    """`bert_dir` exported once (`export_once`): the tests below read its preset."""
    return export_once(bert_dir, tmp_path_factory.mktemp("bert_preset") / "kh")


@pytest.mark.slow
def test_albert_preset_matches_ours_on_sst2(albert_dir, albert_export, sentences):
    status, out = albert_export.status, albert_export.out
    assert status == 0, out
    assert "-> keras-hub AlbertBackbone preset" in out
    assert "summary: 73 mapped, 7 skipped, 0 unknown, 0 missing" in out
    assert ("mapped   group_1_inner_1_attention/query/kernel [32, 32] -> "
            "group_1_inner_layer_1/self_attention_layer/query/kernel (reshape)") in out
    backbone = keras_hub.models.AlbertBackbone.from_preset(albert_export.path)
    assert backbone.num_groups == 2 and backbone.num_inner_repetitions == 2
    tokenizer = AlbertTokenizer(SPM)
    assert (tokenizer.cls_id, tokenizer.sep_id) == (2, 3)
    diffs = max_diffs(albert_dir, backbone, [tokenizer.encode(s) for s in sentences])
    print("ALBERT ours vs keras-hub AlbertBackbone on SST-2 dev, max abs diff:", diffs)
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.slow
def test_bert_preset_matches_ours_on_sst2(bert_dir, bert_export, sentences):
    transformers = pytest.importorskip("transformers")
    status, out = bert_export.status, bert_export.out
    assert status == 0, out
    assert "-> keras-hub BertBackbone preset" in out
    assert "summary: 71 mapped, 7 skipped, 0 unknown, 0 missing" in out
    backbone = keras_hub.models.BertBackbone.from_preset(bert_export.path)
    hf = transformers.BertTokenizerFast.from_pretrained(bert_dir)
    assert hf.convert_tokens_to_ids(["[CLS]", "[SEP]"]) == [2, 3]
    ids = hf(sentences, add_special_tokens=False)["input_ids"]
    diffs = max_diffs(bert_dir, backbone, ids)
    print("BERT ours vs keras-hub BertBackbone on SST-2 dev, max abs diff:", diffs)
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.slow
@pytest.mark.parametrize("changes, backbone, note", [
    (dict(sharing="none"), "AlbertBackbone", "num_groups = num_layers = 4"),
    (dict(embedding_size=32, num_hidden_groups=4), "BertBackbone", "BERT-shaped"),
    (dict(embedding_size=32), "AlbertBackbone", "embedding_projection is written as the "
                                                "identity"),
], ids=["unshared-albert", "all-shared-but-bert-shaped", "albert-with-E=H"])
def test_backbone_is_chosen_by_architecture(changes, backbone, note, tmp_path, capsys):
    config = albert_tf.load_config("albert_tiny").replace(**changes)
    status, out, _ = export(save_ours(config, tmp_path / "ours"), tmp_path / "kh", capsys)
    assert status == 0 and f"keras-hub {backbone} preset" in out and note in out, out
    assert "probe batch, max abs difference to ours" in out
    assert [line for line in out.splitlines() if "backbone only" in line] == [
        f"note     no vocab.model or vocab.txt in {tmp_path / 'ours'}: wrote the backbone only "
        "(no tokenizer)"]
    assert not (tmp_path / "kh" / "tokenizer.json").exists()
    assert getattr(keras_hub.models, backbone).from_preset(str(tmp_path / "kh"))


# ------------------------------------------------------------- (b) keras-hub round trip
def hub_tokenizer(cls: str, wordpiece_vocab: str):
    """keras-hub's tokenizer of the family with our SentencePiece model / WordPiece vocab."""
    if cls == "AlbertBackbone":
        return keras_hub.models.AlbertTokenizer(proto=SPM)
    return keras_hub.models.BertTokenizer(vocabulary=wordpiece_vocab, lowercase=True,
                                          strip_accents=True)


@pytest.mark.slow
@pytest.mark.parametrize("cls, kwargs", [
    ("AlbertBackbone", dict(embedding_dim=16, num_groups=2, num_inner_repetitions=2)),
    ("BertBackbone", {}),
])
def test_keras_hub_to_ours_to_keras_hub_gives_the_weights_back(cls, kwargs, tmp_path, capsys,
                                                               wordpiece_vocab):
    tokenizer = hub_tokenizer(cls, wordpiece_vocab)
    original = getattr(keras_hub.models, cls)(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=4, num_heads=4, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=24, dropout=0.0, **kwargs)
    randomize(original.weights, 1)
    original.save_to_preset(str(tmp_path / "preset"))
    tokenizer.save_to_preset(str(tmp_path / "preset"))
    assert run_conversion("keras_hub", "albert_tf", str(tmp_path / "preset"),
                          str(tmp_path / "ours")) == 0
    status, out, _ = export(str(tmp_path / "ours"), tmp_path / "back", capsys)
    assert status == 0, out
    back = getattr(keras_hub.models, cls).from_preset(str(tmp_path / "back"))
    config = {k: v for k, v in original.get_config().items() if k != "name"}
    assert {k: v for k, v in back.get_config().items() if k != "name"} == config
    theirs = {w.path: np.asarray(w.numpy()) for w in back.weights}
    assert sorted(theirs) == sorted(w.path for w in original.weights)
    for w in original.weights:
        np.testing.assert_array_equal(theirs[w.path], np.asarray(w.numpy()), err_msg=w.path)
    back_tokenizer = type(tokenizer).from_preset(str(tmp_path / "back"))
    assert back_tokenizer.get_vocabulary() == tokenizer.get_vocabulary()
    assert back_tokenizer.get_config().get("lowercase") == tokenizer.get_config().get("lowercase")


def test_layout_and_weights_without_files():
    """`hub_layout` + `hub_weights` + `build_backbone` on a config and arrays alone."""
    from albert_tf.checkpoints import named_weights
    from albert_tf.interop import MappingReport
    config = albert_tf.load_config("bert_tiny")
    layout = hub_layout(config)
    ours = {n: v.numpy() for n, v in named_weights(albert_tf.build_encoder(config)).items()}
    backbone = build_backbone(layout, hub_weights(config, layout, ours, MappingReport("test")))
    assert type(backbone).__name__ == "BertBackbone" and backbone.num_layers == 2


# ------------------------------------------------------------------- (c) tokenizers
# Odd strings: quotes, accents, upper case, digits with commas, odd whitespace, compatibility
# characters, control and format characters, emoji and CJK, empty, truncated.
ODD = ["", "   ", "``Quoted'' text '' `` ' `", "Café naïve résumé; ÉLAN and Ångström",
       "maelström", "UPPER CASE and MiXeD case", "It's 1,000,000 or 2,5 -- 3.14",
       "1,000 and 2, 3,4,5 ,6", "tabs\tand\nnew lines\r\n", "Hello\u00a0WORLD\u3000x",
       "ﬁne Ｆｕｌｌ ｗｉｄｔｈ Ⅳ", "straße ÀÉÎÕÜ", "\u201ccurly\u201d \u2018quotes\u2019",
       "emoji 🙂 中文 العربية", "zero\u200bwidth and a\x7fdel", "x" * 300, "word " * 200]


def packed_ids(preprocessor, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """keras-hub's ``token_ids [N, S]`` of ``texts``: eager (its Python path) and in a
    ``tf.data`` pipeline (its TensorFlow path, what ``fit`` runs)."""
    import tensorflow as tf
    eager = np.asarray(preprocessor(texts)["token_ids"])
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(256).map(preprocessor)
    return eager, np.concatenate([np.asarray(batch["token_ids"]) for batch in dataset])


@pytest.fixture(scope="module")
def albert_preset(albert_export) -> str:
    assert albert_export.status == 0, albert_export.err
    return albert_export.path


@pytest.mark.slow
def test_albert_preprocessor_from_preset_gives_our_ids(albert_dir, albert_preset, sentences):
    """keras-hub's own ``AlbertTextClassifierPreprocessor.from_preset`` on raw text packs our
    ids (the vocabulary carries ALBERT's preprocessing), at max_position_embeddings; the
    plain vocabulary under keras-hub's AlbertTokenizer differs on part of the same text."""
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor.from_preset(albert_preset)
    assert preprocessor.sequence_length == albert_tf.load_config(
        os.path.join(albert_dir, "config.json")).max_position_embeddings == SEQ
    ours = AlbertTokenizer(os.path.join(albert_dir, "vocab.model"))
    texts = sentences + ODD
    want = np.array([ours.pack(t, max_seq_length=SEQ)["input_word_ids"] for t in texts])
    eager, graph = packed_ids(preprocessor, texts)
    plain = keras_hub.models.AlbertTokenizer(proto=SPM)
    differ = [t for t in texts if [int(i) for i in plain(t)] != ours.encode(t)]
    print(f"keras-hub AlbertTextClassifierPreprocessor.from_preset, raw text: ids equal ours on "
          f"{int(np.sum((eager == want).all(1)))}/{len(texts)} (eager), "
          f"{int(np.sum((graph == want).all(1)))}/{len(texts)} (tf.data); the plain "
          f"vocabulary differs on {len(differ)}")
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(graph, want)
    assert "maelström" in differ and "``Quoted'' text '' `` ' `" in differ


@pytest.mark.slow
def test_albert_tokenizer_differs_only_where_documented(albert_dir, albert_preset, data_dir):
    """On fuzz strings and 20,000 IMDB lines keras-hub's ids differ from ours only in the
    classes `ALBERT_TOKENIZER_NOTE` names: a digit before a comma (ALBERT's digit-comma split
    depends on context) and a Greek final sigma."""
    rng = random.Random(0)
    alphabet = list("aAzZ019 ,,.'\"`-éÉöÖçßﬁΣσ\t\n\u00a0\u3000中😀") + ["``", "''", "1,000"]
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
            for _ in range(3000)]
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), encoding="utf-8") as f:
        imdb = list(itertools.islice(f, 20000))
    tokenizer = keras_hub.models.AlbertTokenizer.from_preset(albert_preset)
    ours = AlbertTokenizer(os.path.join(albert_dir, "vocab.model"))

    def differing(texts: list[str]) -> list[str]:
        return [t for t, ids in zip(texts, tokenizer(texts))
                if [int(i) for i in ids] != ours.encode(t)]

    odd_fuzz, odd_imdb = differing(fuzz), differing(imdb)
    print(f"keras-hub AlbertTokenizer vs ours: {len(odd_fuzz)}/{len(fuzz)} fuzz strings and "
          f"{len(odd_imdb)}/{len(imdb)} IMDB lines differ (IMDB lines with a digit before a "
          f"comma: {sum(bool(re.search(r'[0-9],', t)) for t in imdb)})")
    assert all(re.search(r"\d,", t) or "Σ" in t for t in odd_fuzz + odd_imdb)
    assert len(odd_imdb) <= 0.001 * len(imdb)


@pytest.mark.slow
def test_bert_tokenizer_from_preset_matches_hugging_face(bert_dir, bert_export, sentences):
    transformers = pytest.importorskip("transformers")
    status, out = bert_export.status, bert_export.out
    assert status == 0
    assert "do_lower_case=True (from vocab.txt: no upper-case tokens)" in out
    theirs = keras_hub.models.BertTokenizer.from_preset(bert_export.path)
    hf = transformers.BertTokenizerFast.from_pretrained(bert_dir)
    expected = hf(sentences, add_special_tokens=False)["input_ids"]
    assert [list(map(int, x)) for x in theirs(sentences)] == expected


@pytest.mark.slow
def test_bert_preprocessor_from_preset_differs_only_outside_ascii(bert_dir, bert_export,
                                                                  sentences):
    """keras-hub's BertTokenizer cannot carry our normalization (`BERT_TOKENIZER_NOTE`): its
    packed ids are ours on every SST-2 dev sentence and every printable-ASCII odd string,
    and differ only on text outside that (NFKC case folding, control characters, NBSP)."""
    from albert_tf.export.sdk_metadata import in_wordpiece_same_ids
    from albert_tf.text.wordpiece import WordPieceTokenizer
    assert bert_export.status == 0
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        bert_export.path)
    ours = WordPieceTokenizer(os.path.join(bert_dir, "vocab.txt"))
    texts = sentences + ODD
    want = np.array([ours.pack(t, max_seq_length=SEQ)["input_word_ids"] for t in texts])
    eager, graph = packed_ids(preprocessor, texts)
    np.testing.assert_array_equal(graph, eager)
    differ = [t for t, a, b in zip(texts, eager, want) if not np.array_equal(a, b)]
    print(f"keras-hub BertTextClassifierPreprocessor.from_preset: ids equal ours on "
          f"{len(texts) - len(differ)}/{len(texts)}; differ: {differ}")
    assert not set(differ) & set(sentences)
    assert differ and not any(map(in_wordpiece_same_ids, differ))


@pytest.mark.slow
def test_bert_classifier_is_a_bert_text_classifier_preset(bert_dir, wordpiece_vocab, sentences,
                                                         tmp_path, capsys):
    """A BERT-shaped classifier (three labels, max_seq_length 64) is keras-hub's
    BertTextClassifier with our head: its logits on raw SST-2 dev text are ours."""
    from albert_tf.checkpoints import TaskInfo, load_task_model
    from albert_tf.text.wordpiece import WordPieceTokenizer
    config = albert_tf.load_config(os.path.join(bert_dir, "config.json"))
    model = albert_tf.build_classifier(config, 3)
    randomize(model.weights, 2)
    info = TaskInfo("mnli", "classification", ("a", "b", "c"), 64)
    model_dir = albert_tf.save_model_dir(model, str(tmp_path / "ours"), task_info=info,
                                         vocab_file=wordpiece_vocab)
    status, out, _ = export(model_dir, tmp_path / "kh", capsys)
    assert status == 0 and "-> keras-hub BertTextClassifier preset" in out, out
    classifier = keras_hub.models.TextClassifier.from_preset(str(tmp_path / "kh"))
    assert type(classifier).__name__ == "BertTextClassifier"
    assert classifier.preprocessor.sequence_length == 64
    theirs = np.asarray(classifier.predict(sentences, batch_size=128, verbose=0))
    tokenizer = WordPieceTokenizer(wordpiece_vocab)
    rows = [tokenizer.pack(s, max_seq_length=64) for s in sentences]
    ours = load_task_model(model_dir)[0](
        {k: np.array([r[k] for r in rows], np.int32) for k in rows[0]})["logits"].numpy()
    print("BertTextClassifier preset vs ours on SST-2 dev, max abs logit difference:",
          np.abs(theirs - ours).max())
    assert np.abs(theirs - ours).max() <= TOL


# ------------------------------------------------------------------- (d) bad input
def config_dir(tmp_path, name: str, vocab_files: dict[str, str] | None = None,
               **changes) -> str:
    """A directory with only config.json (and vocabulary files): enough for the checks
    that run before any weight is read."""
    directory = tmp_path / name
    directory.mkdir()
    albert_tf.load_config("albert_tiny").replace(**changes).to_json(str(directory /
                                                                        "config.json"))
    for file_name, source in (vocab_files or {}).items():
        shutil.copyfile(source, str(directory / file_name))
    return str(directory)


def write_vocab(tmp_path, tokens: list[str]) -> str:
    path = tmp_path / "bad_vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path)


BASE_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"]


@pytest.mark.parametrize("case, message", [
    (dict(hidden_act="gelu_erf"), "hidden_act='gelu_erf' (gelu_exact), but keras-hub's "
                                   "backbones use the tanh-approximate GELU"),
    (dict(hidden_act="relu"), "hidden_act='relu', but keras-hub's backbones use the "
                              "tanh-approximate GELU"),
    (dict(layer_norm_eps=1e-6), "layer_norm_eps=1e-06, but keras-hub's backbones fix it at "
                                "1e-12"),
    (dict(sharing="attention"), "sharing='attention' with num_hidden_groups=1 over "
                                "num_hidden_layers=4 cannot be represented in keras-hub: "
                                "AlbertBackbone shares whole layers"),
    (dict(num_hidden_layers=3, num_hidden_groups=2), "sharing='all' with num_hidden_groups=2"),
    (dict(attention_head_size=4), "4 heads of width 4 (pruned heads) span 16"),
    ("both", "holds both vocab.model (SentencePiece) and vocab.txt (WordPiece)"),
    ("small_spm", "has 8000 tokens but the model's vocab_size (config.json) is 1000"),
    ("no_mask", "missing special tokens [MASK]"),
    ("duplicate", "token 'the' on lines 6 and 8"),
], ids=["exact-gelu", "relu", "eps", "attention-sharing", "uneven-groups", "pruned-heads",
        "both-vocabularies", "vocab-vs-embedding", "missing-special", "duplicate-token"])
def test_bad_input_is_one_line_and_writes_nothing(case, message, tmp_path, capsys,
                                                  wordpiece_vocab):
    if case == "both":
        model_dir = config_dir(tmp_path, "m", {"vocab.model": SPM, "vocab.txt": wordpiece_vocab})
    elif case == "small_spm":
        model_dir = config_dir(tmp_path, "m", {"vocab.model": SPM})
    elif case == "no_mask":
        vocab = write_vocab(tmp_path, [t for t in BASE_TOKENS if t != "[MASK]"])
        model_dir = config_dir(tmp_path, "m", {"vocab.txt": vocab})
    elif case == "duplicate":
        vocab = write_vocab(tmp_path, BASE_TOKENS + ["the"])
        model_dir = config_dir(tmp_path, "m", {"vocab.txt": vocab})
    else:
        model_dir = config_dir(tmp_path, "m", **case)
    status, out, err = export(model_dir, tmp_path / "kh", capsys)
    assert status == 1 and not (tmp_path / "kh").exists(), out
    first, *rest = err.splitlines()
    assert first.startswith("albert-tf-convert: error: ") and message in first, err
    assert first.endswith(f"(nothing was written to {tmp_path / 'kh'})") and not rest, err


def test_to_keras_hub_refuses_from_flag(tmp_path, capsys):
    status = run_conversion("hf", "keras_hub", str(tmp_path), str(tmp_path / "kh"))
    assert status == 1
    assert "--to=keras_hub reads an albert-tf model directory" in capsys.readouterr().err


@pytest.mark.slow
def test_preset_config_is_keras_hubs_own(albert_export):
    """The files are keras-hub's own save_to_preset output (no hand-written JSON)."""
    assert albert_export.status == 0
    kh = pathlib.Path(albert_export.path)
    names = sorted(os.listdir(kh))
    assert names == [".albert-tf-output.json", "albert_tf", "assets", "config.json",
                     "conversion_report.txt", "metadata.json", "model.weights.h5",
                     "preprocessor.json", "tokenizer.json"]
    assert sorted(os.listdir(kh / "albert_tf")) == ["vocab.model"]
    meta = json.loads((kh / "metadata.json").read_text())
    assert meta["keras_hub_version"] == keras_hub.__version__
