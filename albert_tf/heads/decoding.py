"""NumPy helpers of the edge runner's decoding (the heads' ``decode``, `albert_tf.heads`)."""

from __future__ import annotations

import bisect
import re
from typing import Sequence

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def word_labels(text: str, spans: Sequence[tuple[int, int]],
                label_ids: Sequence[int]) -> tuple[list[str], list[int]]:
    """The whitespace-separated words of ``text`` that the pieces of ``spans`` (the
    ``(start, end)`` characters of each piece, in order: ``encode_with_offsets``) fall in,
    and the label id of each word's first piece: the words and tags of training
    (`albert_tf.heads.token_classification.encode_tagged`), for either vocabulary."""
    bounds = [m.span() for m in re.finditer(r"\S+", text)]
    ends = [end for _, end in bounds]
    words: list[str] = []
    labels: list[int] = []
    last = -1
    for (start, end), label in zip(spans, label_ids):
        piece = text[start:end]
        first = start + len(piece) - len(piece.lstrip())   # SentencePiece: a leading space
        word = bisect.bisect_right(ends, first)              # the word at or after ``first``
        if word < len(bounds) and word != last:
            words.append(text[bounds[word][0]:bounds[word][1]])
            labels.append(int(label))
            last = word
    return words, labels
