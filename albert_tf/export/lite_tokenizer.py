"""The ALBERT tokenizer as a graph that TFLite runs with builtin ops + tf-text custom ops.

The SavedModel tokenizer (`albert_tf.text.tf_tokenizer.AlbertTFTokenizer`) reproduces the
Python preprocessing with string/Unicode ops (``UnicodeDecode``, ``SearchSorted``, ...) that
TFLite has no kernels for. On a phone the graph may only use TFLite builtins and custom ops an
app can register (tensorflow-text's ``FastSentencepieceTokenize``), so this module moves the
preprocessing *into the SentencePiece normalizer*:

* `deployment_spm_proto` (in `albert_tf.text.plain_spm`, shared with the mobile SDK and
  keras-hub exports) returns a copy of the vocabulary whose normalizer (a character map
  compiled by SentencePiece itself, applied by ``FastSentencepieceTokenizer`` before
  segmentation) is the composition of ALBERT's ``preprocess_text`` (whitespace cleanup,
  ````/``''`` -> ``"``, NFKD + accent removal, lower-casing) and the vocabulary's own
  normalizer (``nmt_nfkc``). The pieces and their scores are unchanged.
* `LiteTokenizer` applies it, then the digit-comma split (``"1,"`` -> ``"1" ","``) as an
  id -> ids table ``[V, K]`` (``GATHER`` + ``WHERE``), then truncation and packing with
  ``GATHER``/``SELECT`` over a static ``[batch, seq]`` grid.

Known differences from the Python tokenizer (none occurs in the GLUE/SentEval data; see
``tests/test_tflite_tokenizer.py``): the Greek final-sigma rule of ``str.lower`` (a final
``Σ`` becomes ``σ`` rather than ``ς``), and NFKC compositions *across* two input characters
whose decomposition the Python path would recompose (a precomposed Hangul LV syllable
followed by a trailing jamo). Invalid UTF-8 bytes become ``<unk>`` pieces rather than U+FFFD.
"""

from __future__ import annotations

import numpy as np

from albert_tf.backend import tf
from albert_tf.text.plain_spm import deployment_spm_proto


def digit_comma_table(py_tokenizer) -> np.ndarray:
    """``[V, K]`` int32: row ``i`` is what id ``i`` becomes after the digit-comma split
    (``[i, -1, ...]`` for most ids), padded with -1."""
    replacements = py_tokenizer.id_replacements()
    width = max([1] + [len(v) for v in replacements.values()])
    table = np.full((py_tokenizer.vocab_size, width), -1, np.int32)
    table[:, 0] = np.arange(py_tokenizer.vocab_size, dtype=np.int32)
    for i, ids in replacements.items():
        table[i] = -1
        table[i, :len(ids)] = ids
    return table


class LiteTokenizer(tf.Module):
    """String ``[B]`` (and optionally a second ``[B]``) -> the three int32 ``[B, S]`` inputs.

    Only ``FastSentencepieceTokenize`` (a tf-text custom op) and TFLite builtins appear in
    its graph. Construction takes a few seconds (the character map covers all of Unicode).

    Args:
      spm_model: path or bytes of the SentencePiece model the ids come from.
      do_lower_case: as the Python tokenizer (must match the vocabulary).
      max_seq_length: S.
    """

    def __init__(self, spm_model: str | bytes, do_lower_case: bool = True,
                 max_seq_length: int = 128, name: str | None = None):
        super().__init__(name=name)
        import tensorflow_text as tf_text

        from albert_tf.text.tokenizer import AlbertTokenizer

        py = AlbertTokenizer(spm_model, do_lower_case=do_lower_case)
        self.do_lower_case = do_lower_case
        self.max_seq_length = int(max_seq_length)
        self.cls_id, self.sep_id, self.pad_id = py.cls_id, py.sep_id, py.pad_id
        self.proto = deployment_spm_proto(py.model_proto, bool(do_lower_case))
        self._sp = tf_text.FastSentencepieceTokenizer(self.proto)
        self._table = tf.constant(digit_comma_table(py))

    def tokenize(self, text: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(values [N], row_splits [B + 1])``: the ids of ``AlbertTokenizer.encode``."""
        pieces = self._sp.tokenize(tf.reshape(text, [-1]))
        values = tf.cast(pieces.flat_values, tf.int32)
        splits = tf.cast(pieces.row_splits, tf.int32)
        expanded = tf.gather(self._table, values)                        # [N, K]
        valid = expanded >= 0
        counts = tf.reduce_sum(tf.cast(valid, tf.int32), axis=1)          # [N]
        flat = tf.reshape(expanded, [-1])
        kept = tf.gather(flat, tf.reshape(tf.where(tf.reshape(valid, [-1])), [-1]))
        ends = tf.concat([tf.zeros([1], tf.int32), tf.cumsum(counts)], 0)  # [N + 1]
        return kept, tf.gather(ends, splits)

    def _truncate(self, len_a: tf.Tensor, len_b: tf.Tensor | None, seq: int):
        if len_b is None:
            return tf.minimum(len_a, seq - 2), None
        budget = seq - 3
        fits = len_a + len_b <= budget
        a_long = (len_a > len_b) & (2 * len_b <= budget)
        b_long = (len_a <= len_b) & (2 * len_a <= budget)
        new_a = tf.where(fits | b_long, len_a,
                         tf.where(a_long, budget - len_b, tf.fill(tf.shape(len_a), (budget + 1) // 2)))
        new_b = tf.where(fits | a_long, len_b,
                         tf.where(b_long, budget - len_a, tf.fill(tf.shape(len_b), budget // 2)))
        return new_a, new_b

    def __call__(self, text_a: tf.Tensor, text_b: tf.Tensor | None = None,
                 max_seq_length: int | None = None) -> dict[str, tf.Tensor]:
        seq = int(max_seq_length or self.max_seq_length)
        values_a, splits_a = self.tokenize(text_a)
        start_a, len_a = splits_a[:-1], splits_a[1:] - splits_a[:-1]
        len_b = start_b = values_b = None
        if text_b is not None:
            values_b, splits_b = self.tokenize(text_b)
            start_b, len_b = splits_b[:-1], splits_b[1:] - splits_b[:-1]
        len_a, len_b = self._truncate(len_a, len_b, seq)

        j = tf.range(seq)[tf.newaxis, :]                                   # [1, S]
        la = len_a[:, tf.newaxis]                                          # [B, 1]

        def take(values, first, inside):
            """values[first[b] + j] where ``inside``, else padding (``first``: [B, 1])."""
            padded = tf.concat([values, tf.zeros([1], tf.int32)], 0)       # never empty
            index = tf.clip_by_value(first + j, 0, tf.size(padded) - 1)
            return tf.where(inside, tf.gather(padded, index), self.pad_id)

        words = take(values_a, start_a[:, tf.newaxis] - 1, (j >= 1) & (j <= la))
        words = tf.where(tf.equal(j, 0), self.cls_id, words)
        words = tf.where(tf.equal(j, la + 1), self.sep_id, words)
        end = la + 1
        types = tf.zeros_like(words)
        if text_b is not None:
            lb = len_b[:, tf.newaxis]
            in_b = (j >= la + 2) & (j <= la + lb + 1)
            words = tf.where(in_b, take(values_b, start_b[:, tf.newaxis] - la - 2, in_b), words)
            end = la + lb + 2
            words = tf.where(tf.equal(j, end), self.sep_id, words)
            types = tf.cast((j >= la + 2) & (j <= end), tf.int32)
        mask = tf.cast(j <= end, tf.int32)
        return {"input_word_ids": words, "input_mask": mask, "input_type_ids": types}

