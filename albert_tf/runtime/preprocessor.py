"""The preprocessor of the export runners: raw text to packed, bucketed, batched token ids.

    from albert_tf.runtime.preprocessor import Preprocessor
    pre = Preprocessor.from_metadata(meta, export_dir, buckets=[(16, "seq_16"), (32, "seq_32")])
    rows, by_bucket = pre.assign(["a gorgeous film", "dull and lifeless"])
    for key, indices in by_bucket.items():
        for batch, n in pre.batches([rows[i] for i in indices], batch_size=8): ...

This is the middle of keras-hub's Backbone / Preprocessor / Task split for the exported
models: every runner of an id export (LiteRT, ONNX Runtime, OpenVINO:
`albert_tf.runtime.runner.ExportRunner` and its subclasses) and the end-to-end benchmark
(`albert_tf.benchmark.end_to_end`) preprocess through it, and only what runs the model
differs. Each text is tokenized with the export's vocabulary by the Python tokenizer
(SentencePiece or WordPiece: `albert_tf.text.vocabulary.load_tokenizer`), packed as
``[CLS] a [SEP] (b [SEP])`` into the smallest sequence-length bucket that holds it (the
largest one truncates: `albert_tf.text.packing.pack_ids`), and the rows of a bucket are cut
into batches of a static size (the last one padded by repeating its last row).

Pure Python and numpy: no TensorFlow, at import or on use.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Sequence

import numpy as np

from albert_tf.text.packing import pack_ids

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")

Row = dict[str, list[int]]


class Preprocessor:
    """Tokenize, pack into length buckets and batch for one exported model.

    Args:
      tokenizer: a Python tokenizer with ``encode(text) -> ids``.
      special: the special ids, ``{"cls": .., "sep": .., "pad": ..}`` (metadata
        ``tokenizer.special_ids``).
      buckets: ``(seq_length, signature_key)`` pairs, sorted by length.
    """

    def __init__(self, tokenizer: Any, special: dict[str, int],
                 buckets: Sequence[tuple[int, str]]):
        if not buckets:
            raise ValueError("a preprocessor needs at least one (seq_length, key) bucket")
        self.tokenizer = tokenizer
        self.special = special
        self.buckets = list(buckets)

    @classmethod
    def from_metadata(cls, meta: dict[str, Any], directory: str,
                      buckets: Sequence[tuple[int, str]]) -> "Preprocessor":
        """The preprocessor of an export's ``metadata.json`` (its ``tokenizer`` block; the
        vocabulary file next to it in ``directory``)."""
        from albert_tf.text.vocabulary import load_tokenizer
        tok = meta["tokenizer"]
        tokenizer = load_tokenizer(os.path.join(directory, tok["vocab_file"]),
                                   do_lower_case=tok["do_lower_case"])
        return cls(tokenizer, tok["special_ids"], buckets)

    def encode(self, text_a: str, text_b: str | None = None
               ) -> tuple[list[int], list[int] | None]:
        """The token ids of ``text_a`` (and ``text_b``), no special tokens."""
        ids_b = self.tokenizer.encode(text_b) if text_b is not None else None
        return self.tokenizer.encode(text_a), ids_b

    def bucket_for(self, length: int) -> tuple[int, str]:
        """The smallest bucket holding ``length`` ids + special tokens (else the largest)."""
        for seq, key in self.buckets:
            if length <= seq:
                return seq, key
        return self.buckets[-1]

    def pack(self, ids_a, ids_b, seq: int) -> Row:
        """``[CLS] a [SEP] (b [SEP])`` padded to ``seq`` (truncated when longer)."""
        return pack_ids(ids_a, ids_b, seq, self.special["cls"], self.special["sep"],
                        self.special["pad"])

    def assign(self, texts_a: Sequence[str], texts_b: Sequence[str] | None = None
               ) -> tuple[list[Row], dict[str, list[int]]]:
        """Tokenizes every text and packs it into the smallest bucket that holds it.

        Returns the packed rows (input order) and, per signature key, the indices of the
        texts that run in it (input order).
        """
        by_bucket: dict[str, list[int]] = {}
        rows: list[Row] = []
        for i, text in enumerate(texts_a):
            ids_a, ids_b = self.encode(text, texts_b[i] if texts_b is not None else None)
            needed = len(ids_a) + (len(ids_b) + 3 if ids_b is not None else 2)
            seq, key = self.bucket_for(needed)
            rows.append(self.pack(ids_a, ids_b, seq))
            by_bucket.setdefault(key, []).append(i)
        return rows, by_bucket

    @staticmethod
    def batches(rows: Sequence[Row], batch_size: int
                ) -> Iterator[tuple[dict[str, np.ndarray], int]]:
        """``(inputs, n)`` per batch of ``batch_size`` rows: int32 ``[batch_size, seq]``
        arrays of `INPUT_NAMES` (the last batch padded by repeating its last row) and the
        number of real rows in it."""
        for start in range(0, len(rows), batch_size):
            chunk = list(rows[start:start + batch_size])
            padded = chunk + [chunk[-1]] * (batch_size - len(chunk))
            yield ({n: np.array([r[n] for r in padded], np.int32) for n in INPUT_NAMES},
                   len(chunk))
