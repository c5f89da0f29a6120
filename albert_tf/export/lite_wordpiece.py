"""The WordPiece tokenizer as a graph that TFLite runs with builtin ops + tf-text custom ops.

The graph is `albert_tf.text.tf_wordpiece.WordPieceGraph` (BERT's normalization compiled
into a ``FastBertNormalize`` model, ``WhitespaceTokenize``, ``FastWordpieceTokenize``,
``ByteSplit`` for the 100-character rule; everything else TFLite builtins), with
`LiteTokenizer`'s truncation and packing over a static ``[batch, seq]`` grid. Ids are those
of ``WordPieceTokenizer`` on every input, ill-formed UTF-8 included (dropped, as the Python
tokenizer drops the U+FFFD it decodes to).

An app registers the four custom ops with tensorflow-text's ``tflite_registrar``
(`CUSTOM_OP_REGISTERERS`)::

    from tensorflow_text.core.pybinds import tflite_registrar
    interpreter = InterpreterWithCustomOps(model_path=..., custom_op_registerers=[
        getattr(tflite_registrar, name) for name in CUSTOM_OP_REGISTERERS.values()])
"""

from __future__ import annotations

from albert_tf.backend import tf
from albert_tf.export.lite_tokenizer import LiteTokenizer
# Custom op (as the TFLite flatbuffer names it) -> tflite_registrar function registering it.
from albert_tf.export.metadata import WORDPIECE_CUSTOM_OPS as CUSTOM_OP_REGISTERERS  # noqa: F401


class LiteWordPieceTokenizer(LiteTokenizer):
    """String ``[B]`` (and optionally a second ``[B]``) -> the three int32 ``[B, S]`` inputs.

    `LiteTokenizer`'s call contract, truncation and packing (inherited); the ids come from
    `WordPieceGraph`. Construction takes a few seconds (the normalizer covers all of
    Unicode); the normalizer model adds 1.1 MB (cased) or 1.35 MB (uncased) to the
    ``.tflite`` file, the WordPiece model about 40 bytes per vocabulary entry.

    Args:
      vocab_file: ``vocab.txt``.
      do_lower_case: as the Python tokenizer (must match the vocabulary).
      max_seq_length: S.
    """

    def __init__(self, vocab_file: str, do_lower_case: bool = True,
                 max_seq_length: int = 128, name: str | None = None):
        # LiteTokenizer.__init__ builds SentencePiece state this class has no use for.
        tf.Module.__init__(self, name=name)  # pylint: disable=non-parent-init-called
        from albert_tf.text.tf_wordpiece import WordPieceGraph
        from albert_tf.text.wordpiece import WordPieceTokenizer

        py = WordPieceTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.do_lower_case = py.do_lower_case
        self.max_seq_length = int(max_seq_length)
        self.cls_id, self.sep_id, self.pad_id = py.cls_id, py.sep_id, py.pad_id
        self._graph = WordPieceGraph(py)

    def tokenize(self, text: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(values [N], row_splits [B + 1])``: the ids of ``WordPieceTokenizer.encode``."""
        return self._graph(text)
