"""The BERT WordPiece tokenizer in Python (``vocab.txt``), interchangeable with
``AlbertTokenizer`` (the reference for the in-graph ones in ``tf_wordpiece.py`` and
``albert_tf/export/lite_wordpiece.py``).

    tok = WordPieceTokenizer("bert/vocab.txt", do_lower_case=True)
    tok.tokenize("Héllo, 中文!")        # ['hello', ',', '中', '文', '!']
    tok.pack("a premise", "a hypothesis", max_seq_length=128)

Behaviour = BERT's: the basic tokenizer (drop NUL, U+FFFD, control/format/private-use
characters; whitespace -> space; spaces around CJK ideographs; when uncased: NFD, accents
(Mn) stripped, lower-cased; split on whitespace and punctuation), then greedy
longest-match-first WordPiece with ``##`` continuations, a word longer than 100 characters
becoming ``[UNK]``.

Implementation: the `tokenizers` library (``BertNormalizer`` + ``BertPreTokenizer`` +
``WordPiece``), which is what Hugging Face's ``BertTokenizer`` *is* in transformers 5
(``BertTokenizerFast`` is the same class): ids identical by construction, maintained
upstream, ~20x faster than a Python loop, with character offsets. Hand-written loops
(google-research/bert's ``tokenization.py``, transformers' ``BertTokenizerLegacy``) differ
from it, and from each other, on rare characters (``tests/test_text_wordpiece.py`` lists the
classes: unassigned code points, which they delete; Unicode-version differences; the CJK
Extension E range; the Greek final sigma; NFC in cased mode). Special-token strings in the
text ("[SEP]") are ordinary text, as in the original BERT and the SentencePiece tokenizer.

`codepoint_mapping` is the same normalization as a per-code-point table, from which the
in-graph tokenizers build their normalizer.
"""

from __future__ import annotations

import functools
import os
import sys

from albert_tf.text.packing import PacksText
from albert_tf.text.preprocessing import to_text
from albert_tf.text.spm_training import VocabularyError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN = SPECIAL_TOKENS
SUFFIX_INDICATOR = "##"
MAX_CHARS_PER_WORD = 100


# ----------------------------------------------------------------------------------------
# vocab.txt


def _read_lines(path: str) -> list[str]:
    if not os.path.isfile(path):
        raise VocabularyError(f"WordPiece vocabulary file not found: {path}")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise VocabularyError(f"{path}: line {line} is not UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()     # the final newline
    if not lines:
        raise VocabularyError(f"{path}: empty vocabulary")
    return lines


def load_vocab(path: str) -> list[str]:
    """The tokens of ``vocab.txt`` in id order (one a line, trailing whitespace removed, as
    the ``tokenizers`` library reads it); raises `VocabularyError` with one line on a
    missing, empty or non-UTF-8 file, a blank line, a duplicate or a missing special token."""
    path = os.fspath(path)
    tokens = [line.rstrip() for line in _read_lines(path)]
    first: dict[str, int] = {}
    for number, token in enumerate(tokens, 1):
        if not token:
            raise VocabularyError(f"{path}: line {number} is blank")
        if token in first:
            raise VocabularyError(f"{path}: duplicate token {token!r} on lines "
                                  f"{first[token]} and {number}")
        first[token] = number
    missing = [t for t in SPECIAL_TOKENS if t not in first]
    if missing:
        raise VocabularyError(f"{path}: missing special tokens {' '.join(missing)}")
    return tokens


# ----------------------------------------------------------------------------------------
# The tokenizers pipeline.


def _normalizer(do_lower_case: bool):
    from tokenizers import normalizers
    return normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                      strip_accents=None, lowercase=do_lower_case)


def bert_pipeline(do_lower_case: bool, vocab: dict[str, int] | None = None):
    """A `tokenizers.Tokenizer` doing BERT's tokenization: ``BertNormalizer``,
    ``BertPreTokenizer``, WordPiece over ``vocab`` (empty, for a trainer, when None)."""
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordPiece
    tok = Tokenizer(WordPiece(vocab, unk_token=UNK_TOKEN,
                              continuing_subword_prefix=SUFFIX_INDICATOR,
                              max_input_chars_per_word=MAX_CHARS_PER_WORD))
    tok.normalizer = _normalizer(do_lower_case)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def _code_points() -> list[int]:
    return [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


@functools.lru_cache(maxsize=None)
def split_characters() -> tuple[frozenset[str], frozenset[str]]:
    """``(punctuation, whitespace)``: the characters that ``BertPreTokenizer`` splits off
    or splits at (by its own Unicode tables, which are older than Python's)."""
    from tokenizers import pre_tokenizers
    chars = [chr(c) for c in _code_points() if c != ord("a")]
    pieces = pre_tokenizers.BertPreTokenizer().pre_tokenize_str("a" + "a".join(chars) + "a")
    punct = frozenset(p for p, _ in pieces if len(p) == 1 and p != "a")
    return punct, frozenset(chars) - set("".join(p for p, _ in pieces))


@functools.lru_cache(maxsize=None)
def codepoint_mapping(do_lower_case: bool) -> dict[int, str]:
    """``{code point: what it becomes}`` for every code point the tokenizer does not keep
    as it is: the ``BertNormalizer`` output (``""`` when dropped, ``" "`` for whitespace,
    ``" 中 "`` for CJK) with every punctuation character set off by spaces. The text that
    WordPiece sees is the concatenation of the per-character results, split at spaces: the
    normalizer works character by character (no final-sigma rule), but for NFD's canonical
    reordering (uncased): two adjacent combining marks that both survive accent stripping
    (spacing marks with a combining class such as U+1B44 or U+302E, marks newer than the
    library's tables) and are out of canonical order get swapped (1,603 of the 831,744
    ordered pairs of combining marks; never in NFC or NFD text)."""
    sep = "\U0001f600"                    # maps to itself, so it can delimit the results
    points = [c for c in _code_points() if c != ord(sep)]
    normalizer = _normalizer(do_lower_case)
    out = normalizer.normalize_str(sep.join(map(chr, points))).split(sep)
    if len(out) != len(points) or normalizer.normalize_str(sep) != sep:
        raise AssertionError("BertNormalizer changed the delimiter")
    punct, space = split_characters()
    split = punct | space
    mapping = {}
    for c, norm in zip(points, out):
        if not split.isdisjoint(norm):
            norm = "".join(f" {x} " if x in punct else " " if x in space else x for x in norm)
        if norm != chr(c):
            mapping[c] = norm
    return mapping


# ----------------------------------------------------------------------------------------
# The tokenizer.


class WordPieceTokenizer(PacksText):
    """BERT's WordPiece tokenizer with `AlbertTokenizer`'s interface.

    Args:
      vocab_file: ``vocab.txt`` (one token a line; ``[PAD] [UNK] [CLS] [SEP] [MASK]``
        among them).
      do_lower_case: uncased (lower-casing + accent stripping) or cased vocabulary.
    """

    def __init__(self, vocab_file: str, do_lower_case: bool = True):
        self.vocab_file = os.fspath(vocab_file)
        self.do_lower_case = bool(do_lower_case)
        self.vocab = load_vocab(self.vocab_file)
        self._ids = {t: i for i, t in enumerate(self.vocab)}
        self.vocab_size = len(self.vocab)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self._ids[t] for t in SPECIAL_TOKENS)
        self._control_ids = frozenset((self.pad_id, self.cls_id, self.sep_id, self.mask_id))
        self._tokenizer = bert_pipeline(self.do_lower_case, self._ids)

    def _encode(self, text: str | bytes):
        return self._tokenizer.encode(to_text(text), add_special_tokens=False)

    def tokenize(self, text: str | bytes) -> list[str]:
        return self._encode(text).tokens

    def encode(self, text: str | bytes) -> list[int]:
        return self._encode(text).ids

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """``encode(text)`` and, for each id, the ``(start, end)`` characters of ``text`` it
        came from (a ``##`` piece: its part of the word; ``[UNK]``: the whole word)."""
        encoding = self._encode(text)
        return encoding.ids, [tuple(span) for span in encoding.offsets]

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        """Ids of ``tokens`` (the ``[UNK]`` id for a token not in the vocabulary)."""
        return [self._ids.get(t, self.unk_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.vocab[int(i)] for i in ids]

    def decode(self, ids: list[int]) -> str:
        """Words joined by spaces, ``##`` pieces joined to their word; ``[PAD]``, ``[CLS]``,
        ``[SEP]`` and ``[MASK]`` dropped (as SentencePiece drops its control pieces)."""
        from tokenizers import decoders
        tokens = [self.vocab[int(i)] for i in ids if int(i) not in self._control_ids]
        return decoders.WordPiece(prefix=SUFFIX_INDICATOR, cleanup=False).decode(tokens)

    @staticmethod
    def is_word_start(token: str) -> bool:
        """Whether ``token`` starts a word (is no ``##`` continuation): whole-word masking."""
        return not token.startswith(SUFFIX_INDICATOR)

