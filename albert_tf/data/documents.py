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

from albert_tf.text.spm_training import VocabularyError, expand_inputs

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
        with open_input(path) as f:
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


def is_remote(path: str) -> bool:
    """An object-store path (``gs://``, ``s3://``, ...): read through Apache Beam's
    ``FileSystems`` (`open_input`, `input_size`, `resolve_inputs`)."""
    return bool(_SCHEME.match(str(path)))


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+://")


def _filesystems():
    try:
        from apache_beam.io.filesystems import FileSystems
    except ImportError:
        raise VocabularyError("object-store input paths (gs://, s3://) are read through "
                              "Apache Beam: pip install 'albert-tf[beam]'") from None
    return FileSystems


def open_input(path: str):
    """A binary, seekable file of ``path``: ``open(path, "rb")`` for a local path."""
    if not is_remote(path):
        return open(path, "rb")
    from apache_beam.io.filesystem import CompressionTypes
    return _filesystems().open(path, mime_type="application/octet-stream",
                               compression_type=CompressionTypes.UNCOMPRESSED)


def input_size(path: str) -> int:
    if not is_remote(path):
        return os.path.getsize(path)
    return _filesystems().match([path])[0].metadata_list[0].size_in_bytes


def input_path(path: str) -> str:
    """``path`` as a completion record names it: absolute, or the object-store URL."""
    return path if is_remote(path) else os.path.abspath(path)


def total_bytes(files: list[str]) -> int:
    return sum(input_size(f) for f in files)


def resolve_inputs(patterns) -> list[str]:
    """Local paths and globs (`expand_inputs`); object-store ones (``gs://``) matched by
    Beam's ``FileSystems``, in a stable order."""
    if isinstance(patterns, str):
        patterns = [patterns]
    parts = [part.strip() for pattern in patterns for part in str(pattern).split(",")
             if part.strip()]
    if not any(is_remote(p) for p in parts):
        return expand_inputs(parts)
    files: list[str] = []
    for part in parts:
        if not is_remote(part):
            matches = expand_inputs([part])
        else:
            try:
                found = _filesystems().match([part])[0].metadata_list
            except Exception as e:      # BeamIOError: no access, no such bucket
                raise VocabularyError(f"cannot list {part!r}: "
                                      f"{str(e).strip().splitlines()[0]}") from None
            matches = sorted(m.path for m in found)
            if not matches:
                raise VocabularyError(f"no input file matches {part!r}")
        files.extend(m for m in matches if m not in files)
    return files
