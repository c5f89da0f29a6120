"""The ALBERT tokenizer as TensorFlow ops (tensorflow-text), identical to ``AlbertTokenizer``.

    tok = AlbertTFTokenizer("official_configs/vocab/imdb_pydocs_8k.model", max_seq_length=128)
    features = tok(tf.constant(["a premise"]), tf.constant(["a hypothesis"]))
    # {"input_word_ids", "input_mask", "input_type_ids"}: int32 [B, 128]

Everything happens on Unicode code points with small constant tables built from Python's own
``unicodedata`` / ``str`` at construction time, so the graph reproduces ``preprocess_text``
exactly (whitespace cleanup, quote replacement, NFKD + accent removal, lower-casing with the
Greek final-sigma rule), then SentencePiece (``FastSentencepieceTokenizer`` by default,
``SentencepieceTokenizer`` with ``fast=False``), then the digit-comma split as an id -> ids
table, then truncation and packing. No Python runs at call time: the layer can be saved in a
SavedModel. Converted to TFLite the graph needs Select TF ops (``UnicodeDecode``,
``LowerBound``, ...) plus tensorflow-text's custom ops; for builtin-only TFLite see
``albert_tf/export/lite_tokenizer.py``.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.text.preprocessing import SPIECE_UNDERLINE  # noqa: F401  (documented)
from albert_tf.text.preprocessing import _strip_accents, whitespace_codepoints
from albert_tf.text.tokenizer import AlbertTokenizer

_IGNORABLE, _CASED, _OTHER = 2, 1, 0
_SIGMA, _FINAL_SIGMA = 0x3A3, 0x3C2
_MAX_EXPANSION_BITS = 6  # expansion lengths < 64


# ----------------------------------------------------------------------------------------
# Tables (numpy, built once per process from Python's Unicode database).


def _all_codepoints():
    return (c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)


@functools.lru_cache(maxsize=None)
def _strip_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """keys (sorted code points that change under NFKD + accent removal), codes
    (offset << bits | length into values), values (flat replacement code points)."""
    keys, codes, values = [], [], []
    for c in _all_codepoints():
        ch = chr(c)
        out = _strip_accents(ch)
        if out != ch:
            keys.append(c)
            codes.append((len(values) << _MAX_EXPANSION_BITS) | len(out))
            values.extend(ord(x) for x in out)
    return (np.array(keys, np.int32), np.array(codes, np.int32),
            np.array(values or [0], np.int32))


@functools.lru_cache(maxsize=None)
def _lower_table() -> tuple[np.ndarray, np.ndarray]:
    """keys/values of the 1:1 lower-casing of every code point that can follow accent removal
    (the only multi-character lower-casing, U+0130, never survives NFKD)."""
    keys, values = [], []
    for c in _all_codepoints():
        low = chr(c).lower()
        if low != chr(c):
            if len(low) != 1:
                if _strip_accents(chr(c)) != chr(c):
                    continue  # decomposed before lower-casing
                raise AssertionError(f"U+{c:04X} lower-cases to {len(low)} characters")
            keys.append(c)
            values.append(ord(low))
    return np.array(keys, np.int32), np.array(values, np.int32)


@functools.lru_cache(maxsize=None)
def _sigma_classes() -> tuple[np.ndarray, np.ndarray]:
    """Range starts and classes (case-ignorable / cased / other) as CPython's final-sigma
    rule of ``str.lower`` sees them, measured through ``str.lower`` itself."""
    starts, classes = [], []
    prev = None
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            cls = _OTHER
        else:
            ch = chr(c)
            cased = (ch + "\u03a3").lower()[-1] == "\u03c2"
            ignorable = not cased and ("A" + ch + "\u03a3").lower()[-1] == "\u03c2"
            cls = _CASED if cased else _IGNORABLE if ignorable else _OTHER
        if cls != prev:
            starts.append(c)
            classes.append(cls)
            prev = cls
    return np.array(starts, np.int32), np.array(classes, np.int32)


def _ranges_of(codepoints) -> np.ndarray:
    """Sorted membership keys."""
    return np.array(sorted(codepoints), np.int32)


# ----------------------------------------------------------------------------------------
# Graph helpers on flat values + row ids.


def _lookup_sorted(keys: tf.Tensor, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(found, index) of each ``x`` in the sorted 1-D ``keys``."""
    n = tf.shape(keys)[0]
    idx = tf.searchsorted(keys, x, side="left")
    idx = tf.minimum(idx, n - 1)
    return tf.equal(tf.gather(keys, idx), x), idx


def _expand(values: tf.Tensor, row_ids: tf.Tensor, found: tf.Tensor, codes: tf.Tensor,
            table_values: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Replaces each value with ``found`` by its table sequence (others kept)."""
    mask = (1 << _MAX_EXPANSION_BITS) - 1
    lengths = tf.where(found, tf.bitwise.bitwise_and(codes, mask), 1)
    offsets = tf.bitwise.right_shift(codes, _MAX_EXPANSION_BITS)
    src = tf.repeat(tf.range(tf.size(values)), lengths)
    starts = tf.cumsum(lengths, exclusive=True)
    k = tf.range(tf.size(src)) - tf.gather(starts, src)
    replaced = tf.gather(table_values, tf.gather(offsets, src) + k)
    new_values = tf.where(tf.gather(found, src), replaced, tf.gather(values, src))
    return new_values, tf.gather(row_ids, src)


def _shift_prev(x: tf.Tensor, fill) -> tf.Tensor:
    return tf.concat([tf.fill([tf.minimum(tf.size(x), 1)], fill), x[:-1]], 0)


def _shift_next(x: tf.Tensor, fill) -> tf.Tensor:
    return tf.concat([x[1:], tf.fill([tf.minimum(tf.size(x), 1)], fill)], 0)


def _replace_pairs(values: tf.Tensor, row_ids: tf.Tensor, char: int, replacement: int):
    """``str.replace(char * 2, replacement)``: left to right, non-overlapping."""
    pos = tf.range(tf.size(values))
    same_prev = tf.equal(_shift_prev(row_ids, -1), row_ids)
    same_next = tf.equal(_shift_next(row_ids, -1), row_ids)
    is_c = tf.equal(values, char)
    run_start = is_c & ~(_shift_prev(is_c, False) & same_prev)
    start_pos = tf.concat([tf.boolean_mask(pos, run_start), [0]], 0)  # never empty
    run_index = tf.cumsum(tf.cast(run_start, tf.int32)) - 1
    j = pos - tf.gather(start_pos, tf.maximum(run_index, 0))
    even = tf.equal(tf.math.floormod(j, 2), 0)
    replace = is_c & even & _shift_next(is_c, False) & same_next
    drop = is_c & ~even
    values = tf.where(replace, replacement, values)
    keep = ~drop
    return tf.boolean_mask(values, keep), tf.boolean_mask(row_ids, keep)


class AlbertTFTokenizer(keras.layers.Layer):
    """In-graph ALBERT tokenizer + packer (string ``[B]`` -> three int32 ``[B, S]``).

    Args:
      spm_model: path of a SentencePiece ``.model`` or its bytes.
      do_lower_case: as the Python tokenizer.
      fast: ``FastSentencepieceTokenizer`` (default; TFLite-compatible, identical to the
        Python tokenizer) or ``SentencepieceTokenizer`` (``False``; needed for sampling).
        The latter runs the older SentencePiece core bundled in tensorflow-text, which breaks
        exact score ties between orderings of the same pieces differently ("?" + "???" vs
        "???" + "?"): about 1% of long corpus paragraphs get such an equally-scored
        alternative segmentation.
      max_seq_length: length S of the packed outputs.
    """

    def __init__(self, spm_model: str | bytes, do_lower_case: bool = True, fast: bool = True,
                 max_seq_length: int = 128, **kwargs):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        import tensorflow_text as tf_text

        self._py = AlbertTokenizer(spm_model, do_lower_case=do_lower_case)
        self.do_lower_case = do_lower_case
        self.fast = fast
        self.max_seq_length = int(max_seq_length)
        self.vocab_size = self._py.vocab_size
        self.cls_id, self.sep_id, self.pad_id = self._py.cls_id, self._py.sep_id, self._py.pad_id
        self.mask_id, self.unk_id = self._py.mask_id, self._py.unk_id
        proto = self._py.model_proto
        if fast:
            self._sp = tf_text.FastSentencepieceTokenizer(proto)
        else:
            self._sp = tf_text.SentencepieceTokenizer(proto, out_type=tf.int32)

        c = tf.constant
        self._ws_keys = c(_ranges_of(whitespace_codepoints()))
        keys, codes, values = _strip_table()
        self._strip_keys, self._strip_codes, self._strip_values = c(keys), c(codes), c(values)
        if do_lower_case:
            keys, values = _lower_table()
            self._lower_keys, self._lower_values = c(keys), c(values)
            starts, classes = _sigma_classes()
            self._class_starts, self._classes = c(starts), c(classes)
        repl = self._py.id_replacements()
        keys = sorted(repl)
        flat, codes = [], []
        for k in keys:
            codes.append((len(flat) << _MAX_EXPANSION_BITS) | len(repl[k]))
            flat.extend(repl[k])
        self._repl_keys = c(np.array(keys or [-1], np.int32))
        self._repl_codes = c(np.array(codes or [0], np.int32))
        self._repl_values = c(np.array(flat or [0], np.int32))

    # -- preprocessing -----------------------------------------------------------------

    def preprocess(self, text: tf.Tensor) -> tf.Tensor:
        """``preprocess_text`` on a string tensor ``[B]`` (invalid UTF-8 becomes U+FFFD)."""
        text = tf.convert_to_tensor(text, tf.string)
        cps = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
        nrows = cps.nrows(out_type=tf.int32)
        values = cps.flat_values
        rows = tf.cast(cps.value_rowids(), tf.int32)

        # 1. " ".join(text.strip().split())
        is_ws, _ = _lookup_sorted(self._ws_keys, values)
        pos = tf.range(tf.size(values))
        last_non_ws = tf.math.unsorted_segment_max(tf.where(is_ws, -1, pos), rows, nrows)
        same_prev = tf.equal(_shift_prev(rows, -1), rows)
        keep = ~is_ws | (same_prev & ~_shift_prev(is_ws, True)
                         & (pos < tf.gather(last_non_ws, rows)))
        values = tf.boolean_mask(tf.where(is_ws, 32, values), keep)
        rows = tf.boolean_mask(rows, keep)
        # 2. `` and '' -> "
        values, rows = _replace_pairs(values, rows, ord("`"), ord('"'))
        values, rows = _replace_pairs(values, rows, ord("'"), ord('"'))
        # 3. NFKD without combining characters
        found, idx = _lookup_sorted(self._strip_keys, values)
        values, rows = _expand(values, rows, found, tf.gather(self._strip_codes, idx),
                               self._strip_values)
        # 4. lower-casing, with the final-sigma rule of str.lower
        if self.do_lower_case:
            values = self._lower(values, rows)
        ragged = tf.RaggedTensor.from_value_rowids(values, rows, nrows=nrows, validate=False)
        return tf.strings.unicode_encode(ragged, "UTF-8")

    def _lower(self, values: tf.Tensor, rows: tf.Tensor) -> tf.Tensor:
        found, idx = _lookup_sorted(self._lower_keys, values)
        lowered = tf.where(found, tf.gather(self._lower_values, idx), values)
        is_sigma = tf.equal(values, _SIGMA)

        def final_sigma():
            n = tf.size(values)
            pos = tf.range(n)
            cls = tf.gather(self._classes,
                            tf.searchsorted(self._class_starts, values, side="right") - 1)
            significant = tf.not_equal(cls, _IGNORABLE)
            sig_pos = tf.boolean_mask(pos, significant)
            num_sig = tf.size(sig_pos)
            before = tf.cumsum(tf.cast(significant, tf.int32), exclusive=True)
            prev_pos = tf.gather(sig_pos, tf.maximum(before - 1, 0))
            prev_cased = ((before > 0) & tf.equal(tf.gather(rows, prev_pos), rows)
                          & tf.equal(tf.gather(cls, prev_pos), _CASED))
            after = before + tf.cast(significant, tf.int32)   # first significant after i
            next_pos = tf.gather(sig_pos, tf.minimum(after, tf.maximum(num_sig - 1, 0)))
            next_cased = ((after < num_sig) & tf.equal(tf.gather(rows, next_pos), rows)
                          & tf.equal(tf.gather(cls, next_pos), _CASED))
            return tf.where(is_sigma & prev_cased & ~next_cased, _FINAL_SIGMA, lowered)

        return tf.cond(tf.reduce_any(is_sigma), final_sigma, lambda: lowered)

    # -- tokenization ------------------------------------------------------------------

    def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Token ids ``[B, (tokens)]`` of a string tensor ``[B]``, as ``AlbertTokenizer.encode``."""
        text = self.preprocess(text)
        ids = self._sp.tokenize(text)
        ids = tf.cast(ids, tf.int32) if ids.dtype != tf.int32 else ids
        ids = ids.with_row_splits_dtype(tf.int32)
        values = ids.flat_values
        rows = tf.cast(ids.value_rowids(), tf.int32)
        found, idx = _lookup_sorted(self._repl_keys, values)
        values, rows = _expand(values, rows, found, tf.gather(self._repl_codes, idx),
                               self._repl_values)
        return tf.RaggedTensor.from_value_rowids(values, rows, nrows=ids.nrows(tf.int32),
                                                 validate=False)

    # -- packing -----------------------------------------------------------------------

    @staticmethod
    def _truncate(ids: tf.RaggedTensor, lengths: tf.Tensor) -> tf.RaggedTensor:
        rows = tf.cast(ids.value_rowids(), tf.int32)
        pos = tf.range(tf.size(ids.flat_values)) - tf.gather(
            tf.cast(ids.row_starts(), tf.int32), rows)
        keep = pos < tf.gather(lengths, rows)
        return tf.RaggedTensor.from_row_lengths(tf.boolean_mask(ids.flat_values, keep),
                                                lengths, validate=False)

    def pack(self, ids_a: tf.RaggedTensor, ids_b: tf.RaggedTensor | None = None,
             max_seq_length: int | None = None) -> dict[str, tf.Tensor]:
        """``[CLS] a [SEP] (b [SEP])`` with the original truncation, padded to S."""
        seq = int(max_seq_length or self.max_seq_length)
        if seq < (3 if ids_b is not None else 2):  # as pack_ids
            raise ValueError(f"max_seq_length={seq} leaves no room for [CLS]/[SEP]")
        len_a = tf.cast(ids_a.row_lengths(), tf.int32)
        batch = tf.shape(len_a)[:1]
        if ids_b is None:
            new_a = tf.minimum(len_a, seq - 2)
        else:
            budget = seq - 3
            len_b = tf.cast(ids_b.row_lengths(), tf.int32)
            fits = len_a + len_b <= budget
            a_long = (len_a > len_b) & (2 * len_b <= budget)
            b_long = (len_a <= len_b) & (2 * len_a <= budget)
            new_a = tf.where(fits | b_long, len_a,
                             tf.where(a_long, budget - len_b, (budget + 1) // 2))
            new_b = tf.where(fits | a_long, len_b,
                             tf.where(b_long, budget - len_a, budget // 2))
            ids_b = self._truncate(ids_b.with_row_splits_dtype(tf.int32), new_b)
        ids_a = self._truncate(ids_a.with_row_splits_dtype(tf.int32), new_a)

        def column(value):
            return tf.RaggedTensor.from_row_lengths(tf.fill(batch, value), tf.ones(batch, tf.int32),
                                                    validate=False)

        cls, sep = column(self.cls_id), column(self.sep_id)
        parts = [cls, ids_a, sep]
        types = [tf.zeros_like(cls), tf.zeros_like(ids_a), tf.zeros_like(sep)]
        if ids_b is not None:
            parts += [ids_b, sep]
            types += [tf.ones_like(ids_b), tf.ones_like(sep)]
        word_ids = tf.concat(parts, axis=1)
        type_ids = tf.concat(types, axis=1)
        shape = tf.concat([batch, [seq]], 0)
        return {
            "input_word_ids": word_ids.to_tensor(self.pad_id, shape=shape),
            "input_mask": tf.ones_like(word_ids).to_tensor(0, shape=shape),
            "input_type_ids": type_ids.to_tensor(0, shape=shape),
        }

    # -- ids back to text --------------------------------------------------------------

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """The vocabulary's token string of each id (string, the shape of ``ids``)."""
        tokens = self._py.convert_ids_to_tokens(range(self.vocab_size))
        return tf.gather(tf.constant(tokens), ids)

    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """String ``[B]``: the Python tokenizer's ``decode`` of each row of ``ids [B, (n)]``."""
        return self._sp.detokenize(ids)

    def call(self, text_a, text_b=None, max_seq_length: int | None = None):
        if text_b is None and isinstance(text_a, (tuple, list)):
            text_a, text_b = (tuple(text_a) + (None,))[:2]
        ids_a = self.tokenize(tf.reshape(text_a, [-1]))
        ids_b = self.tokenize(tf.reshape(text_b, [-1])) if text_b is not None else None
        return self.pack(ids_a, ids_b, max_seq_length)

    def get_config(self):
        config = super().get_config()
        config.update(do_lower_case=self.do_lower_case, fast=self.fast,
                      max_seq_length=self.max_seq_length)
        return config

