"""Checks of pretraining inputs that need no TensorFlow: the binaries run them before it
loads (`albert_tf.training.preflight`), the tf.data readers again with TensorFlow's file
system (`albert_tf.data.dynamic_masking`, `albert_tf.data.pretraining`), with the same
one-line messages.

* TFRecord framing: ``crc32c`` / ``masked_crc32c`` of the record headers;
* raw text (``source=text``): a pattern that matches no file or names a directory, a file
  that is a TFRecord (the creator's output passed as text) or binary (NUL bytes in its
  first 64 KiB);
* the vocabulary of ``source=text`` against the model: the file exists and is a vocabulary,
  and it has no more tokens than the model's embedding has rows.
"""

from __future__ import annotations

import struct

TEXT_FORMAT = ("source=text reads raw text: one sentence per line, a blank line between "
               "documents")
HEAD_BYTES = 1 << 16       # the part of a text file looked at for binary content
HEAD_FILES = 16            # text files looked at (the first, in sorted order)
VOCAB_FILE_HINT = "<SentencePiece .model or WordPiece vocab.txt>"


# -- TFRecord framing --------------------------------------------------------------------------

def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def is_tfrecord(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts with a valid TFRecord header."""
    return len(head) >= 12 and \
        masked_crc32c(head[:8]) == struct.unpack("<I", head[8:12])[0]


# -- raw text ------------------------------------------------------------------------------------

def no_text_match(pattern: str, is_directory: bool) -> str:
    what = "is a directory; pass text files or a glob" if is_directory else "matches no file"
    return f"pretraining text {pattern!r} {what} ({TEXT_FORMAT})"


def text_head_problem(path: str, head: bytes) -> str | None:
    """The one-line problem of a text file whose first bytes are ``head``, or None."""
    if is_tfrecord(head):
        return (f"pretraining text {path!r} is a TFRecord file, not raw text: TFRecords "
                "(albert-tf-create-pretraining-data's output) are source=records "
                "(--train_source=records / --eval_source=records)")
    if b"\0" in head:
        return f"pretraining text {path!r} is binary (NUL bytes), not UTF-8 text ({TEXT_FORMAT})"
    return None


def creation_input_problem(path: str, head: bytes) -> str | None:
    """The one-line problem of an ``albert-tf-create-pretraining-data --input_file`` whose
    first bytes are ``head`` (`text_head_problem`'s checks, the creator's words), or None:
    records made from a TFRecord or binary file are noise, and a failed rerun would remove
    the earlier output."""
    if is_tfrecord(head):
        return (f"--input_file: {path!r} is a TFRecord file, not raw text: it is pretraining "
                "records already (albert-tf-pretrain --train_files reads them); pass the raw "
                "text corpus (one sentence per line, a blank line between documents)")
    if b"\0" in head:
        return (f"--input_file: {path!r} is binary (NUL bytes), not UTF-8 text; pass the raw "
                "text corpus (one sentence per line, a blank line between documents)")
    return None


# -- the vocabulary of source=text ---------------------------------------------------------------

def missing_vocabulary(vocab: str) -> str:
    return (f"vocab_file {vocab!r} does not exist; source=text needs "
            f"--params_override=task.vocab_file={VOCAB_FILE_HINT}.")


def vocabulary_too_large(vocab: str, tokens: int, rows: int) -> str:
    return (f"task.vocab_file={vocab} has {tokens} tokens but the model's embedding has "
            f"{rows} rows (model.vocab_size): source=text would feed ids past it; use the "
            f"model's vocabulary or model.vocab_size={tokens}.")


def not_a_vocabulary(error: Exception) -> str:
    return f"task.vocab_file (source=text tokenizes with it): {error}"


__all__ = ["HEAD_BYTES", "HEAD_FILES", "TEXT_FORMAT", "VOCAB_FILE_HINT", "crc32c",
           "creation_input_problem",
           "is_tfrecord", "masked_crc32c", "missing_vocabulary", "no_text_match",
           "not_a_vocabulary", "text_head_problem", "vocabulary_too_large"]
