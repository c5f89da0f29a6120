"""The original ALBERT text preprocessing, in Python, plus the tables that let the
TensorFlow-graph tokenizer (``tf_tokenizer.py``) reproduce it exactly.

``preprocess_text`` follows ``tokenization.preprocess_text`` of google-research/albert:

1. whitespace cleanup: ``" ".join(text.strip().split())`` (Python's notion of whitespace);
2. the LaTeX quotes ````` and ``''`` become ``"``;
3. NFKD normalization with every combining character (canonical combining class != 0)
   removed, i.e. accents stripped;
4. optional lower-casing.

Steps 3 and 4 act character by character (NFKD followed by the removal of all non-starters
is the concatenation of the per-character results, because canonical reordering only moves
non-starters), so they are one code-point -> code-points table: ``codepoint_table``. The
only context-dependent rule of ``str.lower`` (Greek final sigma) is applied separately.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

SPIECE_UNDERLINE = "\u2581"

# Special pieces, with the ids of the original ALBERT vocabulary (30k-clean.model).
PAD_PIECE, UNK_PIECE, CLS_PIECE, SEP_PIECE, MASK_PIECE = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_IDS = {PAD_PIECE: 0, UNK_PIECE: 1, CLS_PIECE: 2, SEP_PIECE: 3, MASK_PIECE: 4}


def clean_whitespace(text: str) -> str:
    return " ".join(text.strip().split())


def _strip_accents(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c))


def preprocess_text(text: str | bytes, lower: bool = False, remove_space: bool = True,
                    keep_accents: bool = False) -> str:
    """The original ALBERT ``preprocess_text`` (bytes are decoded as UTF-8, strictly)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    outputs = clean_whitespace(text) if remove_space else text
    outputs = outputs.replace("``", '"').replace("''", '"')
    if not keep_accents:
        outputs = _strip_accents(outputs)
    if lower:
        outputs = outputs.lower()
    return outputs


# ----------------------------------------------------------------------------------------
# Tables for the in-graph implementation.


@functools.lru_cache(maxsize=None)
def whitespace_codepoints() -> tuple[int, ...]:
    """Every code point that Python's ``str.split()`` / ``str.strip()`` treat as whitespace."""
    return tuple(c for c in range(sys.maxunicode + 1) if chr(c).isspace())


@functools.lru_cache(maxsize=None)
def codepoint_table(lower: bool) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
    """(identity_limit, mapping): ``mapping[c]`` is what code point ``c`` becomes after
    NFKD + accent removal (+ lower-casing); code points not in ``mapping`` are unchanged.

    ``identity_limit`` is one past the largest code point that changes.
    """
    mapping: dict[int, tuple[int, ...]] = {}
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        out = _strip_accents(ch)
        if lower:
            out = out.lower()
        if out != ch:
            mapping[c] = tuple(ord(x) for x in out)
    return (max(mapping) + 1 if mapping else 0), mapping


def is_cased(ch: str) -> bool:
    return ch.lower() != ch or ch.upper() != ch or unicodedata.category(ch) == "Lt"
