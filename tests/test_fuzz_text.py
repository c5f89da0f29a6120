"""Property-based fuzzing (hypothesis) of the text entry points: the Python tokenizer and
its preprocessing, the in-graph tokenizer (identical ids), and packing/truncation.

Profiles in conftest.py ("ci": derandomized, `make test`; "fuzz": 20x, `make fuzz`).
Examples per entry point in the CI profile (each in-graph example is a batch of strings):

* Python == in-graph ids on arbitrary Unicode: 200 batches of <= 12 strings (~1,250 strings)
* Python == in-graph on arbitrary bytes (invalid UTF-8): 200 batches (~1,150 strings)
* Python tokenizer on any ``str`` incl. lone surrogates: 300
* preprocessing (alignment, offsets): 1,000 strings
* ``pack_ids`` / truncation: 1,000 (length combinations incl. 0 and 10^5)
* in-graph ``pack`` == ``pack_ids``: 150 batches of <= 12 rows
* text -> packed pair, Python == in-graph: 150 batches of <= 12 pairs (~1,050 pairs)
"""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from albert_tf.backend import tf
from albert_tf.text.packing import pack_ids, truncate_seq_pair, truncated_lengths
from albert_tf.text.preprocessing import preprocess_text, preprocess_with_alignment
from albert_tf.text.tf_tokenizer import AlbertTFTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from fuzzing import fuzz_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")

PY = AlbertTokenizer(VOCAB)
TF = AlbertTFTokenizer(VOCAB, fast=True, max_seq_length=32)
STRINGS = tf.TensorSpec([None], tf.string)


@tf.function(input_signature=[STRINGS])
def _graph_tokenize(text):
    ids = TF.tokenize(text)
    return ids.flat_values, ids.row_lengths()


@tf.function(input_signature=[STRINGS])
def _graph_preprocess(text):
    return TF.preprocess(text)


_PACKERS: dict = {}


def _graph_pack(a, b, seq):
    """The in-graph tokenizer + packer, one compiled function per sequence length."""
    if seq not in _PACKERS:
        _PACKERS[seq] = tf.function(lambda x, y: TF(x, y, max_seq_length=seq),
                                    input_signature=[STRINGS, STRINGS])
    return {k: v.numpy() for k, v in _PACKERS[seq](tf.constant(a), tf.constant(b)).items()}


def graph_ids(texts) -> list[list[int]]:
    flat, lengths = _graph_tokenize(tf.constant(list(texts), tf.string))
    return tf.RaggedTensor.from_row_lengths(flat, lengths).to_list()


# ---------------------------------------------------------------------------- strategies
# Characters that exercise every preprocessing rule: whitespace of all kinds (incl. the
# Unicode separators Python's str.split() knows), LaTeX/curly quotes, accents and
# combining marks, compatibility forms, final sigma, zero-width and control characters,
# digit-comma pieces, emoji, CJK, Hangul, RTL scripts, noncharacters.
TRICKY_CHARS = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2003\u200a\u2028\u2029\u202f\u205f\u3000"
    "`'\"\u2018\u2019\u201c\u201d\u00ab\u00bb,.;:!?-_0123456789"
    "aAeEsSzZ\u00e9\u00c9\u00df\u0130\u0131\u01c4\u01c5\u01c6\u1e9e\ufb01\ufb00\u2160\u216b\u2460"
    "\u00bd\u00b2\u2075\uff21\uff41\uff11\u0301\u0308\u0327\u20dd\u0345\u1dc0"
    "\u03a3\u03c3\u03c2\u0391\u0386\u0390\u03f9\u1f88\u1fbc"
    "\u200b\u200c\u200d\u2060\ufeff\u00ad\x00\x01\x07\x7f\u0080\u009f"
    "\U0001f600\U0001f44d\U0001f3fd\u2764\ufe0f\U0001d400\U0001d6ba"
    "\u4e2d\u6587\u3042\u30a2\uac00\ud55c\u0627\u0644\u05d0\u0915\u093f\u0e01\u0e31"
    "\ufdfa\ufffd\ufffe\uffff\U0010ffff\ue000"
)
CHARS = st.characters(exclude_categories=("Cs",))  # lone surrogates: not encodable text
TEXT = st.one_of(
    st.text(CHARS, max_size=40),
    st.text(st.sampled_from(TRICKY_CHARS), max_size=40),
    st.lists(st.sampled_from(["1,000", "2,", " ,", "``", "''", "'s", "\u03a3\u03a3", " \u03a3 ",
                              "caf\u00e9", "ABC", "  ", "\u0301", "x"]), max_size=12).map("".join),
)
LONG_TEXT = st.builds(lambda s, n: s * n, st.text(st.sampled_from(TRICKY_CHARS), min_size=1,
                                                  max_size=8), st.integers(100, 600))
ANY_TEXT = st.one_of(TEXT, TEXT, TEXT, LONG_TEXT)
BATCH = st.lists(ANY_TEXT, min_size=1, max_size=12)
COUNTS = {"strings": 0, "byte_strings": 0, "pairs": 0}


# ------------------------------------------------------------ Python == in-graph tokenizer


@pytest.mark.slow
@settings(max_examples=fuzz_examples(200))
@given(BATCH)
@example([""])
@example(["", " ", "\u200b", "\x00", "\ufeff\ufeff", "\u0301", "a" * 5000])
def test_in_graph_ids_equal_python_ids_on_any_unicode(texts):
    COUNTS["strings"] += len(texts)
    want_pre = [PY.preprocess(t).encode("utf-8") for t in texts]
    assert list(_graph_preprocess(tf.constant(texts)).numpy()) == want_pre
    want = [PY.encode(t) for t in texts]
    assert graph_ids(texts) == want
    for t, ids in zip(texts, want):
        assert all(0 <= i < PY.vocab_size for i in ids)
        assert PY.convert_tokens_to_ids(PY.tokenize(t)) == ids


# Invalid UTF-8: the contract is Python's bytes.decode("utf-8", errors="replace") (every
# maximal invalid subsequence becomes one U+FFFD), in Python and in the graph alike.
BYTES = st.one_of(
    st.binary(max_size=40),
    st.lists(st.sampled_from([b"a", b" ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80",
                              b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\x80", b"\xbf", b"\xc0\xaf",
                              b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff", b"\xfe", b"1,0",
                              b"\xef\xbb\xbf"]), max_size=16).map(b"".join),
)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(200))
@given(st.lists(BYTES, min_size=1, max_size=12))
@example([b"ok \xff\xfe bytes", b"\xe2\x82", b"a\xed\xa0\x80b", b"\xc0\xaf", b""])
def test_in_graph_and_python_agree_on_invalid_utf8(raw):
    COUNTS["byte_strings"] += len(raw)
    want_pre = [preprocess_text(b, lower=True).encode("utf-8") for b in raw]
    assert list(_graph_preprocess(tf.constant(raw)).numpy()) == want_pre
    assert graph_ids(raw) == [PY.encode(b) for b in raw]


def test_python_tokenizer_replaces_invalid_utf8_like_the_graph():
    """Regression (fuzzing): ``AlbertTokenizer.encode(b"ok \\xff")`` raised
    UnicodeDecodeError while the in-graph tokenizer turned the byte into U+FFFD."""
    assert preprocess_text(b"ok \xff\xfe bytes") == "ok \ufffd\ufffd bytes"
    assert PY.encode(b"ok \xff\xfe bytes") == PY.encode("ok \ufffd\ufffd bytes")
    assert PY.tokenize(b"a\xe2\x82") == PY.tokenize("a\ufffd")
    assert graph_ids([b"ok \xff\xfe bytes"]) == [PY.encode(b"ok \xff\xfe bytes")]


def test_lone_surrogates_become_replacement_characters():
    """Regression (fuzzing): a ``str`` with a lone surrogate (JSON ``"\\ud800"`` gives one)
    made SentencePiece raise an opaque pybind11 RuntimeError ("Unable to cast Python
    instance..."); such a string has no UTF-8 form, so it is tokenized as U+FFFD, like an
    invalid UTF-8 byte."""
    assert preprocess_text("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert PY.encode("a\ud800b") == PY.encode("a\ufffdb")
    assert PY.tokenize("\ud83d\ude00 x") == PY.tokenize("\ufffd\ufffd x")
    assert PY.encode_with_offsets("a\ud800b")[0] == PY.encode("a\ufffdb")


@settings(max_examples=fuzz_examples(300))
@given(st.text(st.characters(), max_size=30))
def test_python_tokenizer_takes_any_str_incl_surrogates(text):
    ids = PY.encode(text)
    assert ids == PY.encode(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))\
        or any("\ud800" <= c <= "\udfff" for c in text)
    assert ids == PY.encode_with_offsets(text)[0]


# -------------------------------------------------------------------------- preprocessing


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1000))
@given(ANY_TEXT, st.booleans())
def test_preprocessing_alignment_and_offsets(text, lower):
    pre, source = preprocess_with_alignment(text, lower=lower)
    assert pre == preprocess_text(text, lower=lower)
    assert len(source) == len(pre)
    assert all(0 <= a < b <= len(text) for a, b in source)
    assert [a for a, _ in source] == sorted(a for a, _ in source)
    # (not idempotent, and not always stripped: as the original, whitespace is cleaned
    # before accents are removed, so "0 \u0300" -> "0 ")
    if lower:
        ids, spans = PY.encode_with_offsets(text)
        assert ids == PY.encode(text)
        assert len(spans) == len(ids)
        assert all(0 <= s <= e <= len(text) for s, e in spans)


# ------------------------------------------------------------------------ pack / truncation

LENGTH = st.one_of(st.integers(0, 12), st.integers(0, 600), st.sampled_from([0, 1, 2, 100_000]))


def _check_packed(out, a, b, seq, pad=True):
    words, mask, types = out["input_word_ids"], out["input_mask"], out["input_type_ids"]
    special = 3 if b is not None else 2
    n = sum(mask)
    assert len(words) == len(mask) == len(types) == (seq if pad else n)
    assert mask == [1] * n + [0] * (len(mask) - n)
    assert all(w == 0 for w in words[n:]) and all(t == 0 for t in types[n:])
    if b is None:
        la, lb = min(len(a), seq - 2), 0
    else:
        la, lb = truncated_lengths(len(a), len(b), seq - special)
        ta, tb = list(a), list(b)
        truncate_seq_pair(ta, tb, seq - special)
        assert (len(ta), len(tb)) == (la, lb)
        # longest first: a segment is only cut while it is the longer one (b on ties)
        if la < len(a):                    # the last cut of a: a was longer than b
            assert la >= lb
        if lb < len(b):                    # the last cut of b: b was at least as long
            assert lb + 1 >= la
        assert la + lb == min(len(a) + len(b), seq - special)
    assert n == la + lb + special
    assert words[0] == PY.cls_id and words[la + 1] == PY.sep_id
    assert words[1:la + 1] == list(a[:la])
    assert types[:la + 2] == [0] * (la + 2)
    if b is not None:
        assert words[la + 2:n - 1] == list(b[:lb]) and words[n - 1] == PY.sep_id
        assert types[la + 2:n] == [1] * (lb + 1)
    assert words.count(PY.cls_id) == 1 and words.count(PY.sep_id) == special - 1


@pytest.mark.slow
@settings(max_examples=fuzz_examples(1000))
@given(LENGTH, st.one_of(st.none(), LENGTH), st.one_of(st.integers(0, 40), st.integers(0, 700)),
       st.booleans())
@example(0, 0, 3, True)
@example(100_000, 100_000, 512, True)
@example(0, None, 2, False)
def test_pack_ids_layout_and_truncation(len_a, len_b, seq, pad):
    a = [5 + i % 7 for i in range(len_a)]            # ids that are never [CLS]/[SEP]/<pad>
    b = None if len_b is None else [20 + i % 5 for i in range(len_b)]
    special = 3 if b is not None else 2
    if seq < special:
        with pytest.raises(ValueError, match="max_seq_length"):
            pack_ids(a, b, seq, PY.cls_id, PY.sep_id, PY.pad_id, pad=pad)
        return
    out = pack_ids(a, b, seq, PY.cls_id, PY.sep_id, PY.pad_id, pad=pad)
    _check_packed(out, a, b, seq, pad)


RAGGED = st.lists(st.lists(st.integers(5, 8000), max_size=40), min_size=1, max_size=12)


@pytest.mark.slow
@settings(max_examples=fuzz_examples(150))
@given(RAGGED, st.data(), st.sampled_from([1, 2, 3, 4, 5, 8, 16, 37]))
def test_in_graph_pack_equals_pack_ids(ids_a, data, seq):
    pair = data.draw(st.booleans())
    ids_b = data.draw(st.lists(st.lists(st.integers(5, 8000), max_size=40),
                               min_size=len(ids_a), max_size=len(ids_a))) if pair else None
    special = 3 if pair else 2
    ra = tf.ragged.constant(ids_a, dtype=tf.int32, ragged_rank=1, inner_shape=())
    rb = tf.ragged.constant(ids_b, dtype=tf.int32, ragged_rank=1) if pair else None
    if seq < special:
        with pytest.raises(ValueError, match="max_seq_length"):
            TF.pack(ra, rb, max_seq_length=seq)
        return
    out = {k: v.numpy().tolist() for k, v in TF.pack(ra, rb, max_seq_length=seq).items()}
    for i, a in enumerate(ids_a):
        b = ids_b[i] if pair else None
        want = pack_ids(a, b, seq, PY.cls_id, PY.sep_id, PY.pad_id)
        assert {k: v[i] for k, v in out.items()} == want


def test_in_graph_pack_rejects_a_length_without_room_for_the_special_tokens():
    """Regression (fuzzing): ``AlbertTFTokenizer.pack`` with ``max_seq_length=2`` for a pair
    (or 1 for a single text) built negative row lengths (an InvalidArgumentError deep in
    the graph, or garbage) where ``pack_ids`` raises a clear ValueError."""
    a = tf.ragged.constant([[7, 8, 9]], dtype=tf.int32)
    with pytest.raises(ValueError, match="max_seq_length=2 leaves no room"):
        TF.pack(a, a, max_seq_length=2)
    with pytest.raises(ValueError, match="max_seq_length=1 leaves no room"):
        TF.pack(a, None, max_seq_length=1)
    with pytest.raises(ValueError, match="max_seq_length=2 leaves no room"):
        AlbertTFTokenizer(VOCAB, max_seq_length=2)(tf.constant(["a"]), tf.constant(["b"]))


@pytest.mark.slow
@settings(max_examples=fuzz_examples(150))
@given(st.lists(st.tuples(ANY_TEXT, ANY_TEXT), min_size=1, max_size=12),
       st.sampled_from([3, 9, 24, 128]))
def test_packed_pairs_python_equal_in_graph(pairs, seq):
    COUNTS["pairs"] += len(pairs)
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    got = _graph_pack(a, b, seq)
    for i, (x, y) in enumerate(pairs):
        want = PY.pack(x, y, seq)
        assert {k: v[i].tolist() for k, v in got.items()} == want


def test_zz_report_example_counts():
    """Prints how many strings the batched tests generated (``-s`` shows it)."""
    print("fuzzed:", COUNTS)
