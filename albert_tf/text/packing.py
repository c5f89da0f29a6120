"""Packing token ids into ``[CLS] a [SEP] b [SEP]`` model inputs (pure Python).

Truncation follows the original ``_truncate_seq_pair``: one token at a time is removed from
the end of the longer segment (``b`` on ties) until the pair fits. ``truncated_lengths`` is
the closed form of that loop, used by the in-graph tokenizer and checked against it.
"""

from __future__ import annotations


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """The original loop, in place."""
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def truncated_lengths(len_a: int, len_b: int, max_length: int) -> tuple[int, int]:
    """The lengths ``truncate_seq_pair`` leaves, without the loop."""
    if len_a + len_b <= max_length:
        return len_a, len_b
    if len_a > len_b and 2 * len_b <= max_length:
        return max_length - len_b, len_b
    if len_a <= len_b and 2 * len_a <= max_length:
        return len_a, max_length - len_a
    return (max_length + 1) // 2, max_length // 2


def pack_ids(ids_a: list[int], ids_b: list[int] | None, max_seq_length: int, cls_id: int,
             sep_id: int, pad_id: int = 0, pad: bool = True) -> dict[str, list[int]]:
    """``input_word_ids``, ``input_mask``, ``input_type_ids`` (padded to ``max_seq_length``)."""
    special = 3 if ids_b is not None else 2
    if max_seq_length < special:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for [CLS]/[SEP]")
    ids_a = list(ids_a)
    if ids_b is not None:
        ids_b = list(ids_b)
        truncate_seq_pair(ids_a, ids_b, max_seq_length - 3)
    else:
        ids_a = ids_a[: max_seq_length - 2]
    word_ids = [cls_id] + ids_a + [sep_id]
    type_ids = [0] * len(word_ids)
    if ids_b is not None:
        word_ids += ids_b + [sep_id]
        type_ids += [1] * (len(ids_b) + 1)
    mask = [1] * len(word_ids)
    if pad:
        n = max_seq_length - len(word_ids)
        word_ids += [pad_id] * n
        mask += [0] * n
        type_ids += [0] * n
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}


class PacksText:
    """``pack`` for a tokenizer (`AlbertTokenizer`, `WordPieceTokenizer`) that has
    ``encode`` and ``cls_id`` / ``sep_id`` / ``pad_id``."""

    def pack(self, text_a: str, text_b: str | None = None, max_seq_length: int = 128,
             pad: bool = True) -> dict[str, list[int]]:
        """``input_word_ids``, ``input_mask``, ``input_type_ids`` of one (pair of) text(s)."""
        ids_a = self.encode(text_a)
        ids_b = self.encode(text_b) if text_b is not None else None
        return pack_ids(ids_a, ids_b, max_seq_length, self.cls_id, self.sep_id, self.pad_id,
                        pad=pad)
