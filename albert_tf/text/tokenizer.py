"""The ALBERT SentencePiece tokenizer in Python (the reference for the in-graph one).

    tok = AlbertTokenizer("official_configs/vocab/imdb_pydocs_8k.model")
    tok.tokenize("It's 1,000 times better.")   # ['▁it', "'", 's', '▁1', ',', '000', ...]
    tok.pack("a premise", "a hypothesis", max_seq_length=128)

``tokenize`` = ``preprocess_text`` (whitespace cleanup, ```` / '' quotes, NFKD without
accents, optional lower-casing) + SentencePiece + the original digit-comma split: a piece such
as ``▁1,`` (digits followed by a comma) is re-encoded without the comma, then the comma added
as its own piece.
"""

from __future__ import annotations

import functools
import os
import string

from albert_tf.text.packing import PacksText
from albert_tf.text.preprocessing import (CLS_PIECE, MASK_PIECE, PAD_PIECE, SEP_PIECE,
                                          SPIECE_UNDERLINE, UNK_PIECE, preprocess_text,
                                          preprocess_with_alignment)
from albert_tf.text.spm_training import VocabularyError


def _load_processor(spm_model: str | bytes):
    import sentencepiece as spm
    if isinstance(spm_model, (bytes, bytearray)):
        try:
            return spm.SentencePieceProcessor(model_proto=bytes(spm_model)), None
        except (RuntimeError, OSError) as e:
            raise VocabularyError(f"invalid SentencePiece model bytes: {e}") from e
    path = os.fspath(spm_model)
    if not os.path.isfile(path):
        raise VocabularyError(f"SentencePiece vocabulary file not found: {path}")
    try:
        return spm.SentencePieceProcessor(model_file=path), path
    except (RuntimeError, OSError) as e:
        raise VocabularyError(f"not a valid SentencePiece model: {path} ({e})") from e


def is_digit_comma_piece(piece: str) -> bool:
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


_PUNCTUATION_PIECES = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~') | {"\u20ac", "\u00a3"}
_WORD_CHARS = frozenset(string.ascii_lowercase + string.digits)


def is_word_start_piece(piece: str) -> bool:
    """The original whole-word-masking rule of ALBERT's pretraining data: pieces
    starting with '▁' or '<', punctuation pieces, and pieces with a character outside
    [a-z0-9] start a word."""
    return (piece.startswith(SPIECE_UNDERLINE) or piece.startswith("<")
            or piece in _PUNCTUATION_PIECES or not all(c.lower() in _WORD_CHARS for c in piece))


class AlbertTokenizer(PacksText):
    """SentencePiece tokenizer with the original ALBERT preprocessing."""

    def __init__(self, spm_model_file: str | bytes, do_lower_case: bool = True):
        self.sp_model, self.spm_model_file = _load_processor(spm_model_file)
        self.do_lower_case = do_lower_case
        self.vocab_size = self.sp_model.get_piece_size()
        ids = {}
        for piece in (PAD_PIECE, UNK_PIECE, CLS_PIECE, SEP_PIECE, MASK_PIECE):
            i = self.sp_model.piece_to_id(piece)
            if self.sp_model.id_to_piece(i) != piece:
                raise VocabularyError(f"vocabulary has no {piece} piece")
            ids[piece] = i
        self.pad_id, self.unk_id = ids[PAD_PIECE], ids[UNK_PIECE]
        self.cls_id, self.sep_id, self.mask_id = ids[CLS_PIECE], ids[SEP_PIECE], ids[MASK_PIECE]

    @property
    def model_proto(self) -> bytes:
        return self.sp_model.serialized_model_proto()

    # -- tokenization ----------------------------------------------------------------

    def preprocess(self, text: str | bytes) -> str:
        return preprocess_text(text, lower=self.do_lower_case)

    def encode_pieces(self, text: str) -> list[str]:
        """SentencePiece pieces of already preprocessed text, with the digit-comma split."""
        pieces = self.sp_model.encode_as_pieces(text)
        out: list[str] = []
        for piece in pieces:
            if is_digit_comma_piece(piece):
                out.extend(self._split_digit_comma(piece))
            else:
                out.append(piece)
        return out

    @functools.lru_cache(maxsize=4096)
    def _split_digit_comma(self, piece: str) -> tuple[str, ...]:
        cur = self.sp_model.encode_as_pieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
        if piece[0] != SPIECE_UNDERLINE and cur and cur[0][0] == SPIECE_UNDERLINE:
            if len(cur[0]) == 1:
                cur = cur[1:]
            else:
                cur[0] = cur[0][1:]
        return tuple(cur) + (piece[-1],)

    def tokenize(self, text: str | bytes) -> list[str]:
        return self.encode_pieces(self.preprocess(text))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """``encode(text)`` and, for each id, the ``(start, end)`` characters of ``text`` it
        came from (a leading space included; empty for pieces the normalizer inserted)."""
        pre, source = preprocess_with_alignment(text, lower=self.do_lower_case)
        proto = self.sp_model.encode(pre, return_type="proto")
        byte_to_char = []
        for i, ch in enumerate(pre):
            byte_to_char.extend([i] * len(ch.encode("utf-8")))
        byte_to_char.append(len(pre))
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        table = self._replacements
        for p in proto.pieces:
            cb, ce = byte_to_char[p.begin], byte_to_char[p.end]
            if ce > cb:
                start, end = source[cb][0], source[ce - 1][1]
            else:
                start = end = source[cb][0] if cb < len(source) else len(text)
            if p.id in table:
                sub = table[p.id]
                lengths = [len(self.sp_model.id_to_piece(i).lstrip(SPIECE_UNDERLINE)) for i in sub]
                pos = end
                sub_spans = []
                for n in reversed(lengths):
                    sub_spans.append((max(start, pos - n), pos))
                    pos = max(start, pos - n)
                sub_spans.reverse()
                sub_spans[0] = (start, sub_spans[0][1])
                ids.extend(sub)
                spans.extend(sub_spans)
            else:
                ids.append(p.id)
                spans.append((start, end))
        return ids, spans

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        return [self.sp_model.piece_to_id(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.sp_model.id_to_piece(int(i)) for i in ids]

    def encode(self, text: str | bytes) -> list[int]:
        """Ids of ``tokenize(text)`` (computed as SentencePiece ids + ``id_replacements``)."""
        ids = self.sp_model.encode_as_ids(self.preprocess(text))
        table = self._replacements
        if table and not table.keys().isdisjoint(ids):
            ids = [j for i in ids for j in table.get(i, (i,))]
        return ids

    @functools.cached_property
    def _replacements(self) -> dict[int, list[int]]:
        return self.id_replacements()

    def decode(self, ids: list[int]) -> str:
        return self.sp_model.decode([int(i) for i in ids])

    @staticmethod
    def is_word_start(token: str) -> bool:
        """Whether piece ``token`` starts a word (whole-word masking): `is_word_start_piece`."""
        return is_word_start_piece(token)

    def id_replacements(self) -> dict[int, list[int]]:
        """The digit-comma split as an id -> ids table over the whole vocabulary (every id
        not listed maps to itself); ``encode`` == the ids of SentencePiece, then this table."""
        table = {}
        for i in range(self.vocab_size):
            piece = self.sp_model.id_to_piece(i)
            if is_digit_comma_piece(piece) and not (self.sp_model.is_control(i)
                                                    or self.sp_model.is_unknown(i)):
                table[i] = self.convert_tokens_to_ids(list(self._split_digit_comma(piece)))
        return table
