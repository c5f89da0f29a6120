"""The in-graph tokenizer of each vocabulary kind (`albert_tf.text.vocabulary`), for the
SavedModel (`saved_model_tokenizer`) and for TFLite (`lite_tokenizer`).

Both take string ``[B]`` (and a second ``[B]``) to the three int32 ``[B, S]`` inputs, as
the Python tokenizer of the same vocabulary packs them. Here, not beside the SentencePiece
classes, because the WordPiece ones subclass those (a factory there would import its own
subclass).
"""

from __future__ import annotations

from albert_tf.export.lite_tokenizer import LiteTokenizer
from albert_tf.export.lite_wordpiece import LiteWordPieceTokenizer
from albert_tf.text import vocabulary
from albert_tf.text.tf_tokenizer import AlbertTFTokenizer
from albert_tf.text.tf_wordpiece import WordPieceTFTokenizer


def saved_model_tokenizer(vocab_file: str, do_lower_case: bool = True,
                          max_seq_length: int = 128, fast: bool = True) -> AlbertTFTokenizer:
    """`AlbertTFTokenizer` for SentencePiece (``fast`` as there), `WordPieceTFTokenizer` for
    WordPiece."""
    if vocabulary.vocabulary_kind(vocab_file) == vocabulary.WORDPIECE:
        return WordPieceTFTokenizer(vocab_file, do_lower_case, max_seq_length=max_seq_length)
    return AlbertTFTokenizer(vocab_file, do_lower_case, fast=fast,
                             max_seq_length=max_seq_length)


def lite_tokenizer(vocab_file: str, do_lower_case: bool = True,
                   max_seq_length: int = 128) -> LiteTokenizer:
    """`LiteTokenizer` for SentencePiece, `LiteWordPieceTokenizer` for WordPiece (builtins
    plus tf-text custom ops only)."""
    if vocabulary.vocabulary_kind(vocab_file) == vocabulary.WORDPIECE:
        return LiteWordPieceTokenizer(vocab_file, do_lower_case, max_seq_length)
    return LiteTokenizer(vocab_file, do_lower_case, max_seq_length)
