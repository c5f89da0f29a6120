"""Python tokenizer: ALBERT preprocessing, SentencePiece + digit-comma split, packing."""

from __future__ import annotations

import itertools
import os
import random

import pytest

from albert_tf.text import packing
from albert_tf.text.preprocessing import preprocess_text, preprocess_with_alignment
from albert_tf.text.spm_training import VocabularyError
from albert_tf.text.tokenizer import AlbertTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(ROOT, "official_configs", "vocab", "imdb_pydocs_8k.model")


@pytest.fixture(scope="module")
def tok():
    return AlbertTokenizer(VOCAB, do_lower_case=True)


def test_preprocess_matches_the_original_rules():
    assert preprocess_text("  a\t\u00a0b \n c  ") == "a b c"
    assert preprocess_text("``quoted''") == '"quoted"'
    assert preprocess_text("Café naïve", lower=True) == "cafe naive"
    assert preprocess_text("Café") == "Cafe"
    assert preprocess_text("\ufb01 \u00bd", lower=False) == "fi 1\u20442"   # NFKD compatibility
    assert preprocess_text("ΟΔΟΣ ΣΑΣ", lower=True) == "οδος σας"           # final sigma
    assert preprocess_text(b"caf\xc3\xa9", lower=True) == "cafe"
    # invalid UTF-8 -> U+FFFD, as the in-graph tokenizer (tests/test_fuzz_text.py)
    assert preprocess_text(b"\xff\xfe") == "\ufffd\ufffd"


def test_alignment_covers_every_output_character():
    text = "  Hello  ``World''  Ĉafé ﬁ ΣΑΣ  "
    out, source = preprocess_with_alignment(text, lower=True)
    assert out == preprocess_text(text, lower=True)
    assert len(source) == len(out)
    assert text[source[out.index('"')][0]:source[out.index('"')][1]] == "``"


def test_special_ids_are_the_original_ones(tok):
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.vocab_size == 8000
    assert tok.convert_ids_to_tokens([5, 6, 7, 8, 9]) == ["(", ")", '"', "-", "."]


def test_digit_comma_split(tok):
    pieces = tok.tokenize("It cost 1,000, or 2,5 dollars")
    assert not any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces)
    assert "".join(pieces).replace("\u2581", " ").strip() == "it cost 1,000, or 2,5 dollars"
    # The id-level table reproduces the piece-level rule.
    for text in ["1,2,3, 10,000,000,", "a1, b22, c333,", "x 7, y"]:
        assert tok.encode(text) == tok.convert_tokens_to_ids(tok.tokenize(text))


def test_encode_with_offsets_matches_encode(tok, data_dir):
    with open(os.path.join(data_dir, "glue", "RTE", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:40]
    for row in rows:
        for text in row[1:3]:
            ids, spans = tok.encode_with_offsets(text)
            assert ids == tok.encode(text)
            assert all(0 <= s <= e <= len(text) for s, e in spans)
            # Spans are in order and, stripped, the tokens spell the text.
            assert [s for s, _ in spans] == sorted(s for s, _ in spans)


def test_missing_and_invalid_vocabulary_files(tmp_path):
    with pytest.raises(VocabularyError, match="not found: .*nope.model"):
        AlbertTokenizer(str(tmp_path / "nope.model"))
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(VocabularyError, match="bad.model"):
        AlbertTokenizer(str(bad))


def test_truncation_closed_form_equals_the_original_loop():
    for la, lb, m in itertools.product(range(12), range(12), range(1, 14)):
        a, b = list(range(la)), list(range(lb))
        packing.truncate_seq_pair(a, b, m)
        assert (len(a), len(b)) == packing.truncated_lengths(la, lb, m), (la, lb, m)


def test_pack_layout(tok):
    out = tok.pack("a b c d e f g h", "x y", max_seq_length=10)
    ids, mask, types = out["input_word_ids"], out["input_mask"], out["input_type_ids"]
    assert len(ids) == len(mask) == len(types) == 10
    assert ids[0] == tok.cls_id and ids.count(tok.sep_id) == 2
    a_len = ids.index(tok.sep_id) - 1
    b_len = sum(mask) - a_len - 3
    want = packing.truncated_lengths(len(tok.encode("a b c d e f g h")), len(tok.encode("x y")), 7)
    assert (a_len, b_len) == want and a_len + b_len == 7      # the longer segment was cut
    assert ids[1:1 + a_len] == tok.encode("a b c d e f g h")[:a_len]
    assert types == [0] * (a_len + 2) + [1] * (b_len + 1)
    single = tok.pack("hello world", None, max_seq_length=8)
    assert single["input_word_ids"][:1] == [tok.cls_id]
    assert single["input_mask"] == [1] * (sum(single["input_mask"])) + [0] * (8 - sum(single["input_mask"]))
    assert set(single["input_type_ids"]) == {0}
    with pytest.raises(ValueError):
        tok.pack("a", "b", max_seq_length=2)


def test_random_unicode_never_crashes(tok):
    rng = random.Random(0)
    alphabet = [chr(c) for c in list(range(32, 0x250)) + [0x3a3, 0x130, 0x2028, 0xfdfa, 0x1d400,
                                                         0x3000, 0xac00, 0x0301, 0x200b]]
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        ids = tok.encode(text)
        assert all(0 <= i < tok.vocab_size for i in ids)
