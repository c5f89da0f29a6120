"""The WordPiece tokenizer as TensorFlow ops (tensorflow-text), identical to
``WordPieceTokenizer``.

    tok = WordPieceTFTokenizer("bert/vocab.txt", do_lower_case=True, max_seq_length=128)
    features = tok(tf.constant(["a premise"]), tf.constant(["a hypothesis"]))
    # {"input_word_ids", "input_mask", "input_type_ids"}: int32 [B, 128]

tensorflow-text's own BERT tokenizers differ from BERT's basic tokenizer:
``FastBertTokenizer`` and ``BertTokenizer`` case-fold with NFKC ("ß" -> "ss", "ﬁ" -> "fi",
"Ａ" -> "a") and keep private-use characters, ``FastBertTokenizer`` turns control characters
into spaces where BERT deletes them, and ICU's punctuation is a newer Unicode's than the
`tokenizers` library's. So `WordPieceGraph` gives ``FastBertNormalize`` a normalizer model
built here: a darts-clone trie (the format its kernel reads) mapping every code point to
what the Python tokenizer makes of it (`albert_tf.text.wordpiece.codepoint_mapping`: cleanup,
CJK and punctuation set off by spaces, lower-casing and accent stripping when uncased), and
every ill-formed UTF-8 sequence to nothing (as the U+FFFD it decodes to is dropped). Then
``WhitespaceTokenize`` splits the words, ``FastWordpieceTokenize`` (no pre-tokenization)
makes the pieces, and ``ByteSplit`` counts the characters of each word for the
100-character rule. These four are custom ops that TFLite apps can register
(tensorflow-text's ``tflite_registrar``), the rest are TFLite builtins:
``albert_tf/export/lite_wordpiece.py`` runs the same graph on a phone.
`WordPieceTFTokenizer` adds ``AlbertTFTokenizer``'s truncation and packing.

Known difference from the Python tokenizer (uncased only, not in NFC or NFD text): two
adjacent combining marks that both survive accent stripping and are out of canonical order
keep their order here; NFD swaps them in Python (see `codepoint_mapping`).
"""

from __future__ import annotations

import collections
import functools

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.text.tf_tokenizer import AlbertTFTokenizer
from albert_tf.text.wordpiece import (MAX_CHARS_PER_WORD, SUFFIX_INDICATOR, UNK_TOKEN,
                                      WordPieceTokenizer, codepoint_mapping)

# ----------------------------------------------------------------------------------------
# darts-clone double array (tensorflow_text/core/kernels/darts_clone_trie_wrapper.h): unit
# = label (bits 0-7) | has-leaf (bit 8) | offset to the children (bits 10-30, shifted by 8
# when bit 9 is set); a child labelled c of the unit at i is at i ^ offset ^ c; a key's
# value is the unit at i ^ offset (label 0) with bit 31 set.

_HAS_LEAF, _VALUE_FLAG, _OFFSET_LIMIT = 1 << 8, 1 << 31, 1 << 21
_SEARCH_WINDOW = 16 * 256   # bases are looked for among the last units only (as darts-clone)


class _Node:
    __slots__ = ("value", "children", "signature")

    def __init__(self):
        self.value: int | None = None
        self.children: dict[int, _Node] = {}
        self.signature = -1


def _trie(entries: dict[bytes, int]) -> _Node:
    """The trie of ``entries``, each node signed with an id shared by identical subtrees."""
    root = _Node()
    for key, value in entries.items():
        node = root
        for byte in key:
            child = node.children.get(byte)
            if child is None:
                child = node.children[byte] = _Node()
            node = child
        node.value = value
    signatures: dict[tuple, int] = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children.values())
            continue
        key = (node.value, tuple((c, n.signature) for c, n in sorted(node.children.items())))
        node.signature = signatures.setdefault(key, len(signatures))
    return root


class _DoubleArray:
    """A darts-clone double array built first-fit. Identical subtrees share their units
    (as darts-clone's DAWG does): a lookup only checks each unit's label."""

    def __init__(self):
        self.units = np.zeros(1 << 16, np.uint32)
        self.used = np.zeros(1 << 16, bool)     # unit taken
        self.is_base = np.zeros(1 << 16, bool)  # some node's children start here
        self.used[0] = True                     # the root
        self.size = 1                           # one past the last unit taken
        self.placed: dict[int, int] = {}        # subtree signature -> base
        self.hole = 0                           # no free unit before it

    def _reserve(self, size: int) -> None:
        if size > self.units.size:
            grow = max(size, 2 * self.units.size) - self.units.size
            self.units = np.concatenate([self.units, np.zeros(grow, np.uint32)])
            self.used = np.concatenate([self.used, np.zeros(grow, bool)])
            self.is_base = np.concatenate([self.is_base, np.zeros(grow, bool)])

    def _take(self, positions: list[int]) -> None:
        self.used[positions] = True
        self.size = max(self.size, max(positions) + 1)

    def _find_base(self, labels: list[int]) -> int:
        """The first new base, among the last units, whose ``base ^ label`` slots are all
        free (they are then taken)."""
        end = self.size + 256
        self._reserve((end | 0xFF) + 1)
        free = np.arange(max(0, self.size - _SEARCH_WINDOW), end)
        free = free[~self.used[free]]
        bases = free ^ labels[0]
        ok = ~self.is_base[bases]
        for c in labels[1:]:
            ok &= ~self.used[bases ^ c]
        base = int(bases[np.argmax(ok)]) if ok.any() else (end | 0xFF) + 1
        self._reserve((base | 0xFF) + 1)
        self.is_base[base] = True
        self._take([base ^ c for c in labels])
        return base

    def _value_unit(self, value: int) -> int:
        while self.used[self.hole]:
            self.hole += 1
        self._reserve(self.hole + 2)
        self._take([self.hole])
        self.units[self.hole] = value | _VALUE_FLAG
        return self.hole

    def place(self, pos: int, node: _Node) -> list[tuple[int, _Node]]:
        """Links the unit at ``pos`` to ``node``'s children (and value), placing them unless
        an identical subtree already was; returns the children to place next."""
        todo: list[tuple[int, _Node]] = []
        base = self.placed.get(node.signature)
        if base is None:
            if node.children:
                labels = sorted(node.children)
                base = self._find_base(([0] if node.value is not None else []) + labels)
                if node.value is not None:
                    self.units[base] = node.value | _VALUE_FLAG
                for c in labels:
                    self.units[base ^ c] = c
                    todo.append((base ^ c, node.children[c]))
            else:
                base = self._value_unit(node.value)
            self.placed[node.signature] = base
        offset = pos ^ base
        if offset >= _OFFSET_LIMIT:
            raise ValueError("trie too large for darts-clone offsets")
        self.units[pos] |= (offset << 10) | (_HAS_LEAF if node.value is not None else 0)
        return todo

    def array(self) -> np.ndarray:
        return self.units[:self.size].copy()


def darts_clone_trie(entries: dict[bytes, int]) -> np.ndarray:
    """uint32 ``[units]``: a darts-clone trie mapping each non-empty key to its value
    (``0 <= value < 2**31``)."""
    array = _DoubleArray()
    queue = collections.deque([(0, _trie(entries))])
    while queue:
        queue.extend(array.place(*queue.popleft()))
    return array.array()


# ----------------------------------------------------------------------------------------
# The FastBertNormalize model (tensorflow_text/core/kernels/fast_bert_normalizer_model.fbs;
# values as in fast_bert_normalizer.h: bit 30 = changed, bits 6-29 = offset into the string
# pool, bits 0-5 = UTF-8 length).

_CHANGED, _LENGTH_BITS = 1 << 30, 6


def ill_formed_utf8() -> list[bytes]:
    """The maximal ill-formed subparts ICU's ``U8_FWD_1`` steps over: every byte that is
    not ASCII alone, and every proper prefix of a well-formed multi-byte sequence."""
    out = [bytes([b]) for b in range(0x80, 0x100)]
    for lead in range(0xE0, 0xF5):
        for second in range(0x80, 0xC0):
            prefix = bytes([lead, second])
            try:
                (prefix + b"\x80" * (2 if lead >= 0xF0 else 1)).decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(prefix)
            if lead >= 0xF0:
                out.extend(prefix + bytes([third]) for third in range(0x80, 0xC0))
    return out


def _flatbuffer(trie: np.ndarray, data_for_zero: int, pool: bytes) -> bytes:
    import flatbuffers
    builder = flatbuffers.Builder(4 * trie.size + len(pool) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool, np.uint8))
    trie_vector = builder.CreateNumpyVector(trie)
    builder.StartObject(4)
    builder.PrependBoolSlot(0, False, False)          # lower_case_nfd_strip_accents (unused)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, data_for_zero, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())


@functools.lru_cache(maxsize=2)
def normalizer_model(do_lower_case: bool) -> bytes:
    """The ``FastBertNormalize`` model (flatbuffer) of `codepoint_mapping`, ill-formed UTF-8
    dropped: 1.1 MB (cased) or 1.35 MB (uncased), built in a few seconds."""
    pool = bytearray()
    offsets: dict[bytes, int] = {}

    def encode(target: bytes) -> int:
        if target not in offsets:
            offsets[target] = len(pool)
            pool.extend(target)
        if len(target) >= 1 << _LENGTH_BITS:
            raise ValueError(f"normalized string too long: {target!r}")
        return _CHANGED | (offsets[target] << _LENGTH_BITS) | len(target)

    entries = {chr(c).encode(): encode(s.encode()) for c, s in
               codepoint_mapping(bool(do_lower_case)).items()}
    removed = encode(b"")
    entries.update((key, removed) for key in ill_formed_utf8())
    data_for_zero = entries.pop(b"\x00", 0)
    return _flatbuffer(darts_clone_trie(entries), data_for_zero, bytes(pool) or b" ")


# ----------------------------------------------------------------------------------------
# The graph.


class WordPieceGraph(tf.Module):
    """String ``[B]`` -> the ids of ``WordPieceTokenizer.encode``, as ``(values int32 [N],
    row_splits int32 [B + 1])``; TFLite builtins and four tf-text custom ops only.

    Args:
      tokenizer: the Python tokenizer (vocabulary, casing).
    """

    def __init__(self, tokenizer: WordPieceTokenizer, name: str | None = None):
        super().__init__(name=name)
        import tensorflow_text as tf_text

        model = normalizer_model(tokenizer.do_lower_case)
        self._normalizer = tf_text.FastBertNormalizer(
            model_buffer=tf.constant(np.frombuffer(model, np.uint8)))
        self._words = tf_text.WhitespaceTokenizer()
        self._pieces = tf_text.FastWordpieceTokenizer(
            vocab=tokenizer.vocab, suffix_indicator=SUFFIX_INDICATOR,
            max_bytes_per_word=4 * MAX_CHARS_PER_WORD, token_out_type=tf.int32,
            unknown_token=UNK_TOKEN, no_pretokenization=True)
        self._bytes = tf_text.ByteSplitter()
        self.unk_id = tokenizer.unk_id

    def normalize(self, text: tf.Tensor) -> tf.Tensor:
        """String ``[B]``: the text WordPiece sees, words separated by spaces."""
        return self._normalizer.normalize(tf.reshape(text, [-1]))

    def _word_lengths(self, words: tf.Tensor) -> tf.Tensor:
        """int32 ``[W]``: the number of characters of each word ``[W]``."""
        split = self._bytes.split(words)
        values = tf.cast(split.flat_values, tf.int32)
        starts = tf.cast(tf.logical_or(values < 0x80, values >= 0xC0), tf.int32)
        ends = tf.concat([tf.zeros([1], tf.int32), tf.cumsum(starts)], 0)
        row_splits = tf.cast(split.row_splits, tf.int32)
        return tf.gather(ends, row_splits[1:]) - tf.gather(ends, row_splits[:-1])

    def __call__(self, text: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        words = self._words.tokenize(self.normalize(text))             # [B, (W)]
        pieces = self._pieces.tokenize(words.flat_values)               # [W, (T)]
        too_long = self._word_lengths(words.flat_values) > MAX_CHARS_PER_WORD
        values, word_splits = self._unknown_words(
            pieces.flat_values, tf.cast(pieces.row_splits, tf.int32), too_long)
        return values, tf.gather(word_splits, tf.cast(words.row_splits, tf.int32))

    def _unknown_words(self, values: tf.Tensor, splits: tf.Tensor, unknown: tf.Tensor):
        """Pieces ``values [T]`` of words ``splits [W + 1]`` with each ``unknown [W]`` word
        replaced by one [UNK]: ``(values [T'], splits [W + 1])``. Every word has a piece."""
        starts = splits[:-1]
        first = tf.scatter_nd(starts[:, tf.newaxis], tf.ones_like(starts), tf.shape(values))
        unknown_piece = tf.gather(unknown, tf.cumsum(first) - 1)      # [T]
        keep = tf.logical_or(tf.logical_not(unknown_piece), first > 0)
        values = tf.where(unknown_piece, self.unk_id, values)
        values = tf.gather(values, tf.reshape(tf.where(keep), [-1]))
        counts = tf.where(unknown, 1, splits[1:] - starts)
        return values, tf.concat([tf.zeros([1], tf.int32), tf.cumsum(counts)], 0)


class WordPieceTFTokenizer(AlbertTFTokenizer):
    """In-graph WordPiece tokenizer + packer (string ``[B]`` -> three int32 ``[B, S]``).

    `AlbertTFTokenizer`'s call contract, truncation and packing (inherited); only the
    tokenization differs (`WordPieceGraph`). Nothing runs in Python at call time.

    Args:
      vocab_file: ``vocab.txt``.
      do_lower_case: as the Python tokenizer (must match the vocabulary).
      max_seq_length: length S of the packed outputs.
    """

    def __init__(self, vocab_file: str, do_lower_case: bool = True, max_seq_length: int = 128,
                 **kwargs):
        kwargs.setdefault("trainable", False)
        kwargs.setdefault("dtype", "int32")
        # AlbertTFTokenizer.__init__ builds SentencePiece state this class has no use for.
        keras.layers.Layer.__init__(self, **kwargs)  # pylint: disable=non-parent-init-called
        self._py = WordPieceTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.do_lower_case = self._py.do_lower_case
        self.max_seq_length = int(max_seq_length)
        self.vocab_size = self._py.vocab_size
        self.cls_id, self.sep_id, self.pad_id = self._py.cls_id, self._py.sep_id, self._py.pad_id
        self.mask_id, self.unk_id = self._py.mask_id, self._py.unk_id
        self._graph = WordPieceGraph(self._py)

    def preprocess(self, text: tf.Tensor) -> tf.Tensor:
        """String ``[B]``: the normalized text, words separated by spaces."""
        return self._graph.normalize(text)

    def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Token ids ``[B, (tokens)]`` of a string tensor ``[B]``, as
        ``WordPieceTokenizer.encode``."""
        values, row_splits = self._graph(text)
        return tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)

    def detokenize(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """String ``[B]``: ``WordPieceTokenizer.decode`` of each row of ``ids [B, (n)]``:
        tokens joined by spaces, ``##`` continuations joined to the token before, [PAD],
        [CLS], [SEP] and [MASK] dropped."""
        control = tf.constant([self.pad_id, self.cls_id, self.sep_id, self.mask_id])
        keep = tf.ragged.map_flat_values(
            lambda v: tf.reduce_all(tf.not_equal(v[:, tf.newaxis], control), axis=1), ids)
        tokens = self.id_to_token(tf.ragged.boolean_mask(ids, keep))          # [B, (n')]
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " " + SUFFIX_INDICATOR, "")

    def get_config(self):
        config = keras.layers.Layer.get_config(self)
        config.update(do_lower_case=self.do_lower_case, max_seq_length=self.max_seq_length)
        return config
