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
import re
import sys
import unicodedata

SPIECE_UNDERLINE = "\u2581"

# Special pieces, with the ids of the original ALBERT vocabulary (30k-clean.model).
PAD_PIECE, UNK_PIECE, CLS_PIECE, SEP_PIECE, MASK_PIECE = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_IDS = {PAD_PIECE: 0, UNK_PIECE: 1, CLS_PIECE: 2, SEP_PIECE: 3, MASK_PIECE: 4}


_SURROGATES = re.compile("[\ud800-\udfff]")


def to_text(text: str | bytes) -> str:
    """``text`` as a ``str`` that has a UTF-8 form: bytes are decoded as UTF-8 with every
    invalid sequence replaced by U+FFFD (what the in-graph tokenizer's ``unicode_decode``
    does), and lone surrogates in a ``str`` (e.g. from JSON ``"\\ud800"``) become U+FFFD."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", errors="replace")
    if not text.isascii():
        text = _SURROGATES.sub("\ufffd", text)
    return text


def clean_whitespace(text: str) -> str:
    return " ".join(text.strip().split())


def _strip_accents(text: str) -> str:
    if text.isascii():
        return text  # ASCII is NFKD-invariant and has no combining characters
    text = unicodedata.normalize("NFKD", text)
    if text.isascii():
        return text
    return "".join(c for c in text if not unicodedata.combining(c))


def preprocess_text(text: str | bytes, lower: bool = False, remove_space: bool = True,
                    keep_accents: bool = False) -> str:
    """The original ALBERT ``preprocess_text`` (invalid UTF-8 and lone surrogates become
    U+FFFD, see `to_text`)."""
    text = to_text(text)
    outputs = clean_whitespace(text) if remove_space else text
    outputs = outputs.replace("``", '"').replace("''", '"')
    if not keep_accents:
        outputs = _strip_accents(outputs)
    if lower:
        outputs = outputs.lower()
    return outputs


def preprocess_with_alignment(text: str, lower: bool = False
                              ) -> tuple[str, list[tuple[int, int]]]:
    """``preprocess_text(text, lower)`` and, for each of its characters, the ``(start, end)``
    characters of ``text`` it came from."""
    text = to_text(text)  # 1:1 for a str (surrogates -> U+FFFD), so offsets are unchanged
    chars: list[tuple[str, int, int]] = []
    n = len(text)
    i = 0
    while i < n:                                   # " ".join(text.strip().split())
        if text[i].isspace():
            j = i
            while j < n and text[j].isspace():
                j += 1
            if chars and j < n:
                chars.append((" ", i, j))
            i = j
        else:
            chars.append((text[i], i, i + 1))
            i += 1
    for quote in ("`", "'"):                       # `` and '' -> "
        out: list[tuple[str, int, int]] = []
        k = 0
        while k < len(chars):
            if chars[k][0] == quote and k + 1 < len(chars) and chars[k + 1][0] == quote:
                out.append(('"', chars[k][1], chars[k + 1][2]))
                k += 2
            else:
                out.append(chars[k])
                k += 1
        chars = out
    expanded = [(c, a, b) for ch, a, b in chars for c in _strip_accents(ch)]
    result = "".join(c for c, _, _ in expanded)
    if lower:
        result = result.lower()
    source = [(a, b) for _, a, b in expanded]
    if len(result) != len(source) or result != preprocess_text(text, lower=lower):
        # Not expected (lower-casing is 1:1 after accent removal); fall back to a
        # proportional alignment rather than failing.
        result = preprocess_text(text, lower=lower)
        m = max(len(result), 1)
        source = [(k * n // m, max(k * n // m + 1, (k + 1) * n // m)) for k in range(len(result))]
    return result, source


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

