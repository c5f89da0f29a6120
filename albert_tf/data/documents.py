"""Streaming documents out of plain-text corpora.

A corpus file holds documents separated by blank lines (the original BERT/ALBERT format), or
one document per file. Each line is a paragraph or a sentence; ``split_sentences`` cuts
paragraphs into sentences so that sentence-order prediction has segments to reorder (the
IMDB corpus, for example, has whole reviews on one line). Reading is lazy: one document at a
time, so memory does not depend on corpus size.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Iterable, Iterator

from albert_tf.text.spm_training import expand_inputs

# A sentence ends at . ! ? (plus closing quotes/brackets) followed by whitespace and the start
# of a new sentence, or glued to it ("film.So", left over from removed <br /> tags).
_SENTENCE_END = re.compile(
    r"""(?<=[.!?])["'\u201d\u2019)\]]*\s+(?=["'\u201c\u2018(\[]?[A-Z0-9])"""
    r"""|(?<=[a-z)][.!?])(?=[A-Z][a-z])""")


def split_sentences(paragraph: str) -> list[str]:
    """Rule-based English sentence split; never loses characters other than whitespace."""
    out = []
    start = 0
    for m in _SENTENCE_END.finditer(paragraph):
        piece = paragraph[start:m.start()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = paragraph[start:].strip()
    if tail:
        out.append(tail)
    return out


@dataclasses.dataclass
class ReadStats:
    files: int = 0
    bytes_read: int = 0
    lines: int = 0
    non_utf8_lines: int = 0
    documents: int = 0
    empty_documents: int = 0

    def merge(self, other: "ReadStats") -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def iter_documents(input_files: Iterable[str], stats: ReadStats | None = None,
                   document_per_file: bool = False) -> Iterator[list[str]]:
    """Yields each non-empty document as a list of stripped lines (UTF-8; undecodable lines
    are skipped and counted). ``k`` blank lines in a row enclose ``k - 1`` empty documents."""
    stats = stats if stats is not None else ReadStats()
    for path in input_files:
        stats.files += 1
        lines: list[str] = []
        blank_run = 0
        with open(path, "rb") as f:
            for raw in f:
                stats.bytes_read += len(raw)
                stats.lines += 1
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError:
                    stats.non_utf8_lines += 1
                    continue
                if line:
                    if blank_run > 1:
                        stats.empty_documents += blank_run - 1
                    blank_run = 0
                    lines.append(line)
                    continue
                blank_run += 1
                if lines and not document_per_file:
                    stats.documents += 1
                    yield lines
                    lines = []
        if lines:
            stats.documents += 1
            yield lines
        elif document_per_file:
            stats.empty_documents += 1


def total_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files)


def resolve_inputs(patterns) -> list[str]:
    if isinstance(patterns, str):
        patterns = [patterns]
    return expand_inputs(patterns)
