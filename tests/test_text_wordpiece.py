"""WordPiece (``vocab.txt``): the Python tokenizer == Hugging Face == in-graph == TFLite.

Vocabularies: trained here, once per module, with the `tokenizers` library's WordPiece
trainer on the first 3,000 IMDB reviews of ../shared/data/corpus (uncased and cased, 4,000
tokens, the alphabet extended with accented, Greek, Cyrillic, CJK and emoji characters so
that those paths produce pieces and not only [UNK]).

Strings: SST-2 dev (872) and RTE dev (2 x 139) sentences and `generated_strings` (2,000 a
casing; 20x under ``ALBERT_TF_FUZZ_PROFILE=fuzz``, with a fresh seed): words in both cases,
accents (precomposed and combining), CJK (the edges of every ideograph range), emoji (ZWJ
sequences, modifiers, Unicode 14/15 ones), control, format and zero-width characters, every
kind of Unicode space, old and new punctuation, compatibility characters, private-use and
unassigned code points, NUL, U+FFFD, special-token literals, words of 33-150 characters of
1-, 2- and 3-byte characters (the 100-character rule), random code points of every plane.

In transformers 5, ``BertTokenizer`` and ``BertTokenizerFast`` are one class, the
`tokenizers` pipeline that ``WordPieceTokenizer`` also runs: ids identical on every string,
no exclusion. The pure-Python port of the original (``BertTokenizerLegacy``) is compared too;
it disagrees with the `tokenizers` one on the classes `legacy_exclusions` names.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import string
import sys
import types
import unicodedata

import numpy as np
import pytest

from albert_tf.backend import tf
from albert_tf.text.spm_training import VocabularyError
from albert_tf.text.wordpiece import SPECIAL_TOKENS, WordPieceTokenizer
from fuzzing import fuzz_examples

CASINGS = {"uncased": True, "cased": False}
EXTRA_ALPHABET = list("éèêëàâäçñüößøåæœíóúÉÀÇÑÜÖΑΣσςαβγδΩабвгдЖ"
                      "中文字日本語國你好世界한국어😀🙂🎉ﬁ½")
NUM_GENERATED = fuzz_examples(2000)
SEED = 18 if os.environ.get("ALBERT_TF_FUZZ_PROFILE") != "fuzz" else random.randrange(1 << 30)
LITE_BATCH, LITE_SEQ = 64, 48


# ----------------------------------------------------------------------------------------
# Strings.

POOLS = {
    "accents": list("éèêëàâäçñüößøåæœíóúÉÀÇÑÜÖİıŁłĞğŞşǅǄẞŉǰ")
    + ["e\u0301", "a\u0300\u0301", "\u0301", "o\u0308\u0323", "<\u0338", "A\u030a"],
    "cjk": [chr(c) for c in (0x4E2D, 0x6587, 0x5B57, 0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0xF900,
                             0xFAFF, 0x20000, 0x2A6DF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F,
                             0x2B820, 0x2B91F, 0x2B920, 0x2CEAF, 0x2F800, 0x2FA1F, 0x30000,
                             0x3042, 0x30A2, 0xAC00, 0x1100, 0x3001, 0x300C, 0xFF21)],
    "emoji": ["😀", "🙂", "🎉", "🫠", "🤩", "👍🏽", "👨\u200d👩\u200d👧", "❤\ufe0f", "🇫🇷",
              "\U0001FAE8", "#\ufe0f\u20e3"],
    "control": [chr(c) for c in [*range(0, 32), 0x7F, 0x85, 0x9F, 0xAD, 0x600, 0x61C, 0x890,
                                 0x180E, 0xFEFF, 0xFFF9, 0x13430, 0xE0001, 0xE0041, 0xFFFD]],
    "zero_width": ["\u200b", "\u200c", "\u200d", "\u2060", "\u200e", "\u200f", "\u202e",
                   "\u2066", "\ufeff"],
    "space": ["\u00a0", "\u1680", "\u2000", "\u2007", "\u2028", "\u2029", "\u202f",
              "\u205f", "\u3000", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85"],
    "greek": list("ΣσςΟΔΑΩἀᾷ"),
    "punctuation": list("¡¿«»‘’“”„†‡•…‰′″‹›※‼⁇、。〈〉《》「」【】〜・¦©°€£$^`~+<=>|")
    + ["\u2e45", "\u2e4f", "\u2e52", "\U0001E95E", "\u058A", "\u1806", "\u2E2F", "\u037e"],
    "compat": list("ﬁﬂﬀ½²³¹Ⅻ①ｆｕｌＡＢＣ㎏™ℌ") + ["\u2126", "\u212b", "\u212a", "\uf900"],
    "scripts": list("абвгдЖЩ한국어אבגمرحبानमस्तेไทยქართ"),
    "private_use": ["\ue000", "\uf8ff", "\U000f0000", "\U0010fffd"],
    "unassigned": ["\u0378", "\u0530", "\U0001FAFF", "\U000E0080", "\U0003134B"],
    "special": list(SPECIAL_TOKENS) + ["##", "##ing", "[cls]"],
    "ascii": list(string.ascii_letters + string.digits + string.punctuation),
}
WORDS = ["the", "movie", "was", "great", "film", "actor", "don't", "it's", "1,000", "bad",
         "Paris", "naïve", "café", "résumé", "Straße", "ΟΔΟΣ", "Ελλάδα"]
SEPARATORS = [" ", " ", " ", "", "  ", "\t", "\n", "-", ".", ","]


def _part(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.3:
        word = rng.choice(WORDS)
        return rng.choice([word, word.upper(), word.title()])
    if r < 0.36:   # around the 100-character rule, 1-, 2- and 3-byte characters
        return rng.choice(["x", "é", "中", "ab", "аб", "e\u0301"]) * rng.choice(
            [33, 34, 50, 99, 100, 101, 150])
    if r < 0.42:
        c = rng.randrange(sys.maxunicode + 1) if rng.random() < 0.5 else rng.randrange(0x3400)
        return "\ufffd" if 0xD800 <= c <= 0xDFFF else chr(c)
    pool = POOLS[rng.choice(sorted(POOLS))]
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, 4)))


def generated_strings(n: int, seed: int) -> list[str]:
    """``n`` strings of up to 14 parts (see the module docstring), seeded."""
    rng = random.Random(seed)
    return ["".join(_part(rng) + rng.choice(SEPARATORS) for _ in range(rng.randint(0, 14)))
            for _ in range(n)]


def _tsv_column(path: str, columns: list[int]) -> list[str]:
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[c] for row in rows for c in columns]


@pytest.fixture(scope="module")
def glue(data_dir) -> list[str]:
    sst2 = _tsv_column(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), [0])
    rte = _tsv_column(os.path.join(data_dir, "glue", "RTE", "dev.tsv"), [1, 2])
    assert len(sst2) == 872 and len(rte) == 2 * 139
    return sst2 + rte


@pytest.fixture(scope="module")
def generated() -> list[str]:
    return generated_strings(NUM_GENERATED, SEED)


# ----------------------------------------------------------------------------------------
# Vocabularies and tokenizers.


def _train_vocab(corpus: str, lower: bool, out: str) -> None:
    from tokenizers import trainers

    from albert_tf.text.wordpiece import bert_pipeline
    tok = bert_pipeline(lower)
    trainer = trainers.WordPieceTrainer(vocab_size=4000, special_tokens=list(SPECIAL_TOKENS),
                                        initial_alphabet=EXTRA_ALPHABET, show_progress=False)
    with open(corpus, encoding="utf-8") as f:
        tok.train_from_iterator(list(itertools.islice(f, 3000)), trainer)
    os.makedirs(out)
    tok.model.save(out)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": lower}, f)


@pytest.fixture(scope="module", params=sorted(CASINGS))
def case(request, tmp_path_factory, data_dir):
    """A trained vocabulary directory (``vocab.txt`` + ``tokenizer_config.json``) and its
    Python and graph tokenizers."""
    from albert_tf.text.tf_wordpiece import WordPieceGraph
    lower = CASINGS[request.param]
    directory = str(tmp_path_factory.mktemp("wordpiece") / request.param)
    _train_vocab(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), lower, directory)
    py = WordPieceTokenizer(os.path.join(directory, "vocab.txt"), do_lower_case=lower)
    return types.SimpleNamespace(name=request.param, lower=lower, dir=directory, py=py,
                                 vocab_file=py.vocab_file, graph=WordPieceGraph(py))


def _python_ids(case, texts) -> list[list[int]]:
    return [case.py.encode(t) for t in texts]


def _graph_ids(graph, texts, batch: int = 512) -> list[list[int]]:
    out = []
    for i in range(0, len(texts), batch):
        values, row_splits = graph(tf.constant(texts[i:i + batch]))
        out += tf.RaggedTensor.from_row_splits(values, row_splits).to_list()
    return out


def _mismatches(texts, got, want) -> list[str]:
    return [t for t, a, b in zip(texts, got, want) if a != b]


# ----------------------------------------------------------------------------------------
# Python tokenizer: interface and vocabulary errors.


@pytest.mark.slow
def test_python_interface(case):
    py = case.py
    assert py.convert_ids_to_tokens([py.pad_id, py.unk_id, py.cls_id, py.sep_id,
                                     py.mask_id]) == list(SPECIAL_TOKENS)
    assert py.vocab_size == 4000 and py.do_lower_case == case.lower
    text = "Héllo, the MOVIE was great!! 中文"
    tokens = py.tokenize(text)
    assert py.encode(text) == py.convert_tokens_to_ids(tokens)
    assert py.convert_ids_to_tokens(py.encode(text)) == tokens
    assert "中" in tokens and "," in tokens and any(t.startswith("##") for t in tokens)
    ids = py.encode(text)
    assert py.decode(ids) == " ".join(tokens).replace(" ##", "")
    specials = [py.cls_id] + ids + [py.sep_id, py.mask_id, py.pad_id]
    assert py.decode(specials) == py.decode(ids)                     # as SentencePiece's
    assert [py.is_word_start(t) for t in ["the", "##ing", "[CLS]", ","]] == [
        True, False, True, True]
    assert py.tokenize("[MASK] x") == py.tokenize("[ MASK ] x")   # text, not a special token
    assert py.convert_tokens_to_ids(["no-such-token"]) == [py.unk_id]
    packed = py.pack("the movie", "was great", max_seq_length=8)
    assert packed["input_word_ids"][0] == py.cls_id and len(packed["input_mask"]) == 8


@pytest.mark.slow
def test_encode_with_offsets(case, glue):
    from tokenizers import normalizers
    normalize = normalizers.BertNormalizer(lowercase=case.lower).normalize_str
    for text in glue[:300] + ["Héllo  wörld", "a\u200bb 中文", "e\u0301cole"]:
        ids, spans = case.py.encode_with_offsets(text)
        assert ids == case.py.encode(text)
        assert all(0 <= s < e <= len(text) for s, e in spans)
        assert [s for s, _ in spans] == sorted(s for s, _ in spans)
        for token, (s, e) in zip(case.py.convert_ids_to_tokens(ids), spans):
            if token != "[UNK]":
                assert normalize(text[s:e]).strip() == token.removeprefix("##"), (text, token)


def test_albert_tokenizer_is_word_start_is_the_pretraining_rule():
    """ALBERT's rule: a piece starts a word when it starts with '▁' or '<', is punctuation,
    or has a character outside [a-z0-9]; WordPiece's: when it is no ``##`` continuation."""
    from albert_tf.text.tokenizer import AlbertTokenizer
    starts = {"\u2581the": True, "s": False, "ing": False, "123": False, "A": False, "": False,
              ",": True, "\u20ac": True, "<unk>": True, "<x": True, "[CLS]": True, "##a": True,
              "\u00e9": True, "\u0130": True}
    assert {p: AlbertTokenizer.is_word_start(p) for p in starts} == starts
    assert [WordPieceTokenizer.is_word_start(p) for p in ("the", "##s", "#", "[CLS]")] == [
        True, False, True, True]


def _write(path, content: bytes) -> str:
    path.write_bytes(content)
    return str(path)


def test_bad_vocabularies_are_one_line_errors(tmp_path):
    good = "\n".join(SPECIAL_TOKENS + ("a", "##a")) + "\n"
    cases = {
        "not found": str(tmp_path / "nope.txt"),
        "empty vocabulary": _write(tmp_path / "empty.txt", b""),
        "line 3 is not UTF-8": _write(tmp_path / "latin1.txt", b"[PAD]\n[UNK]\ncaf\xe9\n"),
        "line 6 is blank": _write(tmp_path / "blank.txt", good.replace("\na\n", "\n\n").encode()),
        "duplicate token 'a' on lines 6 and 8": _write(tmp_path / "dup.txt",
                                                       (good + "a\n").encode()),
        "duplicate token '[SEP]' on lines 4 and 7": _write(
            tmp_path / "dup_special.txt", good.replace("##a", "[SEP]").encode()),
        "missing special tokens [CLS] [MASK]": _write(
            tmp_path / "missing.txt", good.replace("[CLS]\n", "").replace("[MASK]\n", "")
            .encode()),
    }
    for message, path in cases.items():
        with pytest.raises(VocabularyError, match=re.escape(message)) as err:
            WordPieceTokenizer(path)
        assert "\n" not in str(err.value), str(err.value)
    from albert_tf.text.tf_wordpiece import WordPieceTFTokenizer
    with pytest.raises(VocabularyError, match="duplicate token"):
        WordPieceTFTokenizer(cases["duplicate token 'a' on lines 6 and 8"])


# ----------------------------------------------------------------------------------------
# Hugging Face parity.


@pytest.mark.slow
def test_hugging_face_parity(case, glue, generated):
    """``BertTokenizer``/``BertTokenizerFast`` ``from_pretrained(directory)``: identical ids
    on every string. ``split_special_tokens=True`` makes HF read "[SEP]" in the text as
    text, as BERT and this package do; by default HF turns it into the special token, the
    only difference (checked on the strings without such a literal)."""
    from transformers import BertTokenizer, BertTokenizerFast
    texts = glue + generated
    want = _python_ids(case, texts)
    for cls in (BertTokenizer, BertTokenizerFast):
        hf = cls.from_pretrained(case.dir, split_special_tokens=True)
        assert hf.do_lower_case == case.lower
        assert hf.get_vocab() == {t: i for i, t in enumerate(case.py.vocab)}
        got = hf(texts, add_special_tokens=False)["input_ids"]
        assert _mismatches(texts, got, want) == []
    plain = [t for t in texts if not any(s in t for s in SPECIAL_TOKENS)]
    default = BertTokenizer.from_pretrained(case.dir)(plain, add_special_tokens=False)
    assert _mismatches(plain, default["input_ids"], _python_ids(case, plain)) == []
    assert len(texts) - len(plain) > 50     # the literals are exercised
    print(f"{case.name}: HF ids identical on {len(texts)} strings")


def legacy_exclusions(case, legacy, texts) -> dict[str, set[str]]:
    """Per class, the strings on which ``BertTokenizerLegacy`` (pure Python, Python 3.11's
    Unicode 14.0 database) and the `tokenizers` pipeline (Rust, its own older tables) are
    known to disagree:

    * ``unassigned``: code points of category Cn in Python's database. Legacy deletes
      every category "C*" character; `tokenizers` deletes Cc/Cf/Co and keeps unassigned ones
      (part of a word: [UNK]).
    * ``cjk_extension_e``: U+2B820-U+2B91F. Legacy spaces them as CJK; `tokenizers`' range
      starts at U+2B920.
    * ``unicode_version``: any other character that the two treat differently alone
      between two letters, found character by character: characters of Unicode versions
      newer than `tokenizers`' tables, which it keeps as word characters ([UNK]) where
      legacy splits off punctuation (U+2E45-U+2E55, U+1E95E), deletes format characters
      (U+0890, U+13430) or strips combining marks (U+08CA, U+0C3C, U+0EBA, U+1AC8).
    * ``final_sigma`` (uncased): Python's ``str.lower`` turns a word-final Σ into ς,
      `tokenizers` lower-cases character by character (σ).
    * ``nfc`` (cased): legacy NFC-composes the text first ("e" + U+0301 -> "é", U+2126 Ω
      -> U+03A9 Ω, U+037E -> ";"), `tokenizers` does not normalize cased text.
    * ``special_literal``: a special-token literal ("[SEP]") standing alone between spaces
      stays one token in legacy even with ``split_special_tokens=True`` (its basic
      tokenizer's ``never_split``).
    """
    chars = sorted(set("".join(texts)))
    per_char = {c for c in chars
                if legacy.tokenize(f"x{c}y") != case.py.tokenize(f"x{c}y")}
    classes = {
        "unassigned": {c for c in per_char if unicodedata.category(c) == "Cn"},
        "cjk_extension_e": {c for c in per_char if 0x2B820 <= ord(c) <= 0x2B91F},
    }
    if not case.lower:   # NFC singletons (U+212A K -> K) belong to the "nfc" class
        per_char = {c for c in per_char if unicodedata.normalize("NFC", c) == c}
    classes["unicode_version"] = per_char - set().union(*classes.values())
    out = {name: {t for t in texts if not members.isdisjoint(t)}
           for name, members in classes.items()}
    out["special_literal"] = {t for t in texts if any(s in t for s in SPECIAL_TOKENS)}
    if case.lower:
        out["final_sigma"] = {t for t in texts if "ς" in t.lower() and "ς" not in t}
    else:
        out["nfc"] = {t for t in texts if unicodedata.normalize("NFC", t) != t}
    return out


@pytest.mark.slow
def test_legacy_python_bert_tokenizer_parity(case, glue, generated):
    """``BertTokenizerLegacy``: identical on SST-2/RTE and on every generated string outside
    the classes of `legacy_exclusions`."""
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
    legacy = BertTokenizerLegacy.from_pretrained(case.dir, split_special_tokens=True)
    assert legacy.do_lower_case == case.lower

    def legacy_ids(texts):
        return [legacy.convert_tokens_to_ids(legacy.tokenize(t)) for t in texts]

    assert _mismatches(glue, legacy_ids(glue), _python_ids(case, glue)) == []
    excluded = legacy_exclusions(case, legacy, generated)
    kept = [t for t in generated if not any(t in s for s in excluded.values())]
    assert _mismatches(kept, legacy_ids(kept), _python_ids(case, kept)) == []
    assert len(kept) >= len(generated) // 4
    print(f"{case.name}: legacy identical on {len(glue)} GLUE + {len(kept)}/{len(generated)} "
          "generated; excluded: " + ", ".join(f"{k} {len(v)}" for k, v in excluded.items()))


# ----------------------------------------------------------------------------------------
# In-graph (SavedModel) tokenizer.


@pytest.mark.slow
def test_graph_equals_python_on_every_code_point(case):
    """Each code point between two letters (1,112,064 words, 64 a string)."""
    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    texts = [" ".join(f"x{chr(c)}y" for c in points[i:i + 64]) for i in range(0, len(points), 64)]
    assert _mismatches(texts, _graph_ids(case.graph, texts), _python_ids(case, texts)) == []


@pytest.mark.slow
def test_per_character_normalization_but_for_mark_reordering(case):
    """The in-graph normalizer maps code point by code point (`codepoint_mapping`), which
    equals the Python normalizer on every pair of combining marks but those NFD reorders
    (uncased: both marks kept, out of canonical order); the documented known difference."""
    from albert_tf.text.wordpiece import _normalizer, codepoint_mapping
    marks = [chr(c) for c in range(sys.maxunicode + 1)
             if not 0xD800 <= c <= 0xDFFF and unicodedata.combining(chr(c))]
    pairs = [a + b for a in marks for b in marks]
    mapping, sep = codepoint_mapping(case.lower), "\U0001f600"
    got = _normalizer(case.lower).normalize_str(sep.join("x" + p for p in pairs)).split(sep)
    differ = [p for p, g in zip(pairs, got)
              if g != "x" + "".join(mapping.get(ord(c), c) for c in p)]
    assert all(unicodedata.combining(a) > unicodedata.combining(b) for a, b in differ)
    assert case.lower or not differ
    print(f"{case.name}: {len(differ)} of {len(pairs)} pairs of combining marks reordered")


@pytest.mark.slow
def test_graph_equals_python(case, glue, generated):
    texts = glue + generated
    assert _mismatches(texts, _graph_ids(case.graph, texts), _python_ids(case, texts)) == []
    raw = [b"ok \xff\xfe bytes", b"x\xe4\xb8y", b"\xed\xa0\x80z", b"\xf4\x90\x80\x80q",
           b"a\x00b", b"caf\xc3", "Straße 中文".encode()]
    assert _graph_ids(case.graph, raw) == _python_ids(case, raw)


def test_packing_singles_and_pairs(case, glue):
    from albert_tf.text.tf_wordpiece import WordPieceTFTokenizer
    tok = WordPieceTFTokenizer(case.vocab_file, do_lower_case=case.lower, max_seq_length=128)
    a, b = glue[872::2], glue[873::2]            # RTE pairs
    for seq in (128, 24):                         # 24: truncation
        out = tok(tf.constant(a), tf.constant(b), max_seq_length=seq)
        want = [case.py.pack(x, y, seq) for x, y in zip(a, b)]
        for key in ("input_word_ids", "input_mask", "input_type_ids"):
            assert out[key].dtype == tf.int32 and out[key].shape == (len(a), seq)
            np.testing.assert_array_equal(out[key].numpy(), [w[key] for w in want])
    single = tok(tf.constant(a[:7]))
    np.testing.assert_array_equal(single["input_word_ids"].numpy(),
                                  [case.py.pack(x)["input_word_ids"] for x in a[:7]])


@pytest.mark.slow
def test_saved_model_round_trip(case, tmp_path):
    from albert_tf.text.tf_wordpiece import WordPieceTFTokenizer
    tok = WordPieceTFTokenizer(case.vocab_file, do_lower_case=case.lower, max_seq_length=16)
    module = tf.Module()
    module.tok = tok
    serve = tf.function(lambda a, b: module.tok(a, b), input_signature=[
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    from albert_tf.export.common import without_keras_traces
    with without_keras_traces():            # as the exports save it
        tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": serve})
    loaded = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    a, b = ["Héllo, 1,000 World!", "中文 ΣΑΣ 🙂"], ["x" * 101, b"bad \xff"]
    out = loaded(a=tf.constant(a), b=tf.constant(b))
    np.testing.assert_array_equal(out["input_word_ids"].numpy(),
                                  [case.py.pack(x, y, 16)["input_word_ids"]
                                   for x, y in zip(a, b)])


# ----------------------------------------------------------------------------------------
# TFLite.


def _lite_model(case) -> bytes:
    from albert_tf.export.lite_wordpiece import LiteWordPieceTokenizer
    holder = tf.Module()
    holder.tok = LiteWordPieceTokenizer(case.vocab_file, case.lower, max_seq_length=LITE_SEQ)
    spec = tf.TensorSpec([LITE_BATCH], tf.string)

    def ids(text):
        values, row_splits = holder.tok.tokenize(text)
        return {"values": values, "row_splits": row_splits}

    def pair(text_a, text_b):
        return holder.tok(text_a, text_b)

    functions = [tf.function(ids, autograph=False).get_concrete_function(spec),
                 tf.function(pair, autograph=False).get_concrete_function(spec, spec)]
    converter = tf.lite.TFLiteConverter.from_concrete_functions(functions, holder)
    converter.allow_custom_ops = True
    from albert_tf.export.common import without_keras_traces
    with without_keras_traces():            # as the TFLite export converts
        return converter.convert()


def _batches(texts: list[bytes]):
    """``(chunk, batch)``: ``texts`` in chunks of ``LITE_BATCH``, padded with b""."""
    for i in range(0, len(texts), LITE_BATCH):
        chunk = texts[i:i + LITE_BATCH]
        yield chunk, np.array(chunk + [b""] * (LITE_BATCH - len(chunk)), dtype=object)


@pytest.mark.slow
def test_tflite_equals_python(case, glue, generated, tmp_path):
    """Only TFLite builtins and the four registrable tf-text custom ops; ids (and packed
    pairs, with truncation) identical to the Python tokenizer."""
    from ai_edge_litert import interpreter as lit
    from tensorflow_text.core.pybinds import tflite_registrar

    from albert_tf.export.analysis import op_report
    from albert_tf.export.lite_wordpiece import CUSTOM_OP_REGISTERERS
    path = tmp_path / "tokenizer.tflite"
    path.write_bytes(_lite_model(case))
    assert op_report(str(path))["custom_ops"] == sorted(CUSTOM_OP_REGISTERERS)
    interpreter = lit.InterpreterWithCustomOps(
        model_path=str(path), num_threads=1,
        custom_op_registerers=[getattr(tflite_registrar, r)
                               for r in CUSTOM_OP_REGISTERERS.values()])
    ids_runner = interpreter.get_signature_runner("ids")
    raw = [t.encode() for t in glue + generated]
    raw += [b"ok \xff\xfe bytes", b"x\xe4\xb8y \xf4\x90\x80\x80q"]
    got = []
    for chunk, batch in _batches(raw):
        out = ids_runner(text=batch)
        rows = tf.RaggedTensor.from_row_splits(out["values"], out["row_splits"]).to_list()
        got += rows[:len(chunk)]
    assert _mismatches(raw, got, _python_ids(case, raw)) == []
    pair_runner = interpreter.get_signature_runner("pair")
    half = len(raw) // 2
    for (_, batch_a), (_, batch_b) in zip(_batches(raw[:half]), _batches(raw[half:2 * half])):
        out = pair_runner(text_a=batch_a, text_b=batch_b)
        want = [case.py.pack(x, y, LITE_SEQ) for x, y in zip(batch_a, batch_b)]
        for key in ("input_word_ids", "input_mask", "input_type_ids"):
            np.testing.assert_array_equal(out[key], [w[key] for w in want])
