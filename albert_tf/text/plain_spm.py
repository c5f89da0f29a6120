"""ALBERT's preprocessing carried by a SentencePiece model, for tokenizers that run
SentencePiece alone.

The mobile SDKs (`albert_tf.export.sdk_metadata`) and keras-hub's ``AlbertTokenizer``
(`albert_tf.interop.keras_hub`) tokenize with plain SentencePiece: no lower-casing, no
```` / ``''`` quotes, no accent stripping, no digit-comma split. `carrying_proto` returns a
copy of a vocabulary that does the first three itself (`deployment_spm_proto`: in its
normalizer, which the TFLite tokenizer `albert_tf.export.lite_tokenizer` uses too) and
never produces the digit-comma pieces (``"1,"``) that ALBERT splits; `first_difference`
checks on probe text that a tokenizer then gives our ids.

What no SentencePiece model can carry (measured with ``official_configs/vocab/
imdb_pydocs_8k.model`` by ``tests/test_interop_keras_hub_export.py``):

* ALBERT's digit-comma split re-encodes the digits of a ``"0,"`` piece on their own, which
  depends on how SentencePiece first segmented the text; with those pieces unused
  SentencePiece may segment the digits otherwise (``pre-2000,``: ours ``200 0 ,``, plain
  ``2 000 ,``): 3 of 20,000 IMDB lines (3 of their 742 with a digit before a comma);
* the Greek final-sigma rule of ``str.lower`` (a final ``Σ`` is ``ς`` in ours, ``σ`` in
  the normalizer), and NFKC compositions across two input characters (a Hangul LV
  syllable followed by a trailing jamo); invalid UTF-8 bytes are ``<unk>`` pieces.
"""

from __future__ import annotations

import functools
import sys
from typing import Callable, Sequence

from albert_tf.text.spm_training import VocabularyError

# Text on which plain SentencePiece over `carrying_proto` must give our ids (quotes,
# accents, upper case, digits with commas, odd whitespace, compatibility characters).
PROBE_TEXTS = (
    "Hello World", "A GREAT MOVIE, REALLY!", "Café, naïve résumé; ÉLAN and Ångström",
    "``quoted'' and \u201ccurly\u201d \u2018quotes\u2019", "It's 1,000,000 or 2,5 -- 3.14",
    "tabs\tand\nnew lines  and   spaces", "Fullwidth \uff21\uff22\uff23 and \u2163 numerals",
    "ÜBER straße ﬁne", "it 's a 10, a 9, 1,2,3", "",
)
# The normalizer name prefix of a `deployment_spm_proto` (set once, however often applied).
NORMALIZER_PREFIX = "albert_preprocess_"


def _is_surrogate(c: int) -> bool:
    return 0xD800 <= c <= 0xDFFF


@functools.lru_cache(maxsize=8)
def deployment_spm_proto(spm_model: bytes, do_lower_case: bool = True) -> bytes:
    """A copy of ``spm_model`` whose normalizer also does ALBERT's ``preprocess_text``.

    For every code point ``c`` the new character map holds
    ``N(P(c))`` where ``P`` is the per-character part of ``preprocess_text`` (NFKD without
    combining marks, then lower-casing; Python whitespace -> space) and ``N`` the
    vocabulary's own character map; plus the two-character rules ````` -> ``"`` and
    ``''`` -> ``"`` and the vocabulary's multi-character rules whose characters ``P``
    leaves alone. SentencePiece's own whitespace collapsing then does the rest of
    ``" ".join(text.split())``. The pieces and their scores are unchanged. Takes a few
    seconds (the character map covers all of Unicode).
    """
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from albert_tf.text.preprocessing import codepoint_table, whitespace_codepoints

    raw = spm.SentencePieceNormalizer(model_proto=spm_model, add_dummy_prefix=False,
                                      escape_whitespaces=False, remove_extra_whitespaces=False)
    original = dict(raw.decompile())
    _, per_char = codepoint_table(bool(do_lower_case))
    spaces = set(whitespace_codepoints())

    def normalize(s: str) -> str:
        if len(s) == 1:
            return original.get(s, s)
        return raw.normalize(s) if s else s

    rules: dict[str, str] = {}
    for c in range(sys.maxunicode + 1):
        if _is_surrogate(c):
            continue
        ch = chr(c)
        if c in spaces:
            target = normalize(" ")
        elif c in per_char:
            target = normalize("".join(chr(x) for x in per_char[c]))
        else:
            target = normalize(ch)
        if target != ch:
            rules[ch] = target
    for key, target in original.items():
        if len(key) > 1 and all(ord(x) not in per_char and ord(x) not in spaces for x in key):
            rules[key] = target
    quote = normalize('"')
    rules["``"] = quote
    rules["''"] = quote

    spm.set_min_log_level(1)     # the normalizer builder logs its sizes at INFO level
    compiled = spm.SentencePieceNormalizer(norm_map=sorted(rules.items()))
    spec = model_pb2.NormalizerSpec()
    spec.ParseFromString(compiled.serialized_normalizer_spec())
    model = model_pb2.ModelProto()
    model.ParseFromString(spm_model)
    name = model.normalizer_spec.name or "identity"
    if not name.startswith(NORMALIZER_PREFIX):
        model.normalizer_spec.name = NORMALIZER_PREFIX + name
    model.normalizer_spec.precompiled_charsmap = spec.precompiled_charsmap
    model.normalizer_spec.ClearField("normalization_rule_tsv")
    return model.SerializeToString()


def carrying_proto(py) -> bytes:
    """``py``'s vocabulary (an `albert_tf.text.tokenizer.AlbertTokenizer`) with ALBERT's
    preprocessing in its normalizer (`deployment_spm_proto`, ``py.do_lower_case``) and the
    digit-comma pieces unused, so that SentencePiece does not produce them.

    Raises `VocabularyError` when SentencePiece refuses the character map.
    """
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from albert_tf.text.tokenizer import is_digit_comma_piece

    model = model_pb2.ModelProto()
    try:
        model.ParseFromString(deployment_spm_proto(py.model_proto, bool(py.do_lower_case)))
    except Exception as e:  # noqa: BLE001  (SentencePiece refuses the character map)
        raise VocabularyError(f"its normalizer cannot carry ALBERT's preprocessing ({e})") \
            from None
    for piece in model.pieces:
        if piece.type == piece.NORMAL and is_digit_comma_piece(piece.piece):
            piece.type = piece.UNUSED
    return model.SerializeToString()


def first_difference(py, encode: Callable[[str], list[int]],
                     texts: Sequence[str] = PROBE_TEXTS) -> str | None:
    """None when ``encode(text) == py.encode(text)`` for every text; else the first
    difference, as ``'text' is [our pieces] in albert-tf but [their pieces]``."""
    for text in texts:
        want, got = py.encode(text), [int(i) for i in encode(text)]
        if want != got:
            return (f"{text!r} is {py.convert_ids_to_tokens(want)} in albert-tf but "
                    f"{py.convert_ids_to_tokens(got)}")
    return None
