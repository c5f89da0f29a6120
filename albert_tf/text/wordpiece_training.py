"""Training a WordPiece (BERT) vocabulary with the `tokenizers` library's trainer.

The text goes through what BERT's tokenizer does before WordPiece (``BertNormalizer``:
control characters removed, CJK characters split off, and, when uncased, lower-casing and
accent stripping; then ``BertPreTokenizer``: whitespace and punctuation split), so the
pieces learned are the ones `WordPieceTokenizer` and Hugging Face's ``BertTokenizer`` look
up. The result is a ``vocab.txt`` (one token per line, id = line number) with

    [PAD]=0  [UNK]=1  [CLS]=2  [SEP]=3  [MASK]=4

then the characters (and their ``##`` continuations) and the learned pieces. These are the
ids of our SentencePiece models (``<pad>``, ``<unk>``, ``[CLS]``, ``[SEP]``, ``[MASK]``), so
padding is id 0 and the special ids are the same for both vocabularies. Google's BERT
vocabularies put ``[PAD]`` at 0, 99 ``[unusedN]`` slots, then ``[UNK]``=100, ``[CLS]``=101,
``[SEP]``=102, ``[MASK]``=103; the slots only reserve room for tokens added after training,
and every tokenizer (ours, Hugging Face's, tensorflow-text's) finds the specials by name.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from albert_tf.text.spm_training import LineStats, VocabularyError, expand_inputs, iter_text_lines
from albert_tf.text.vocabulary import WORDPIECE_SPECIAL_TOKENS, write_vocab_txt
from albert_tf.text.wordpiece import SUFFIX_INDICATOR, bert_pipeline


def _check_size(tokens: list[str], vocab_size: int, limit_alphabet: int) -> None:
    if len(tokens) > vocab_size:   # the trainer keeps the whole alphabet, whatever the size
        raise VocabularyError(
            f"vocab_size={vocab_size} is too small for this corpus: its alphabet (characters "
            f"and ## continuations, limit_alphabet={limit_alphabet}) and the "
            f"{len(WORDPIECE_SPECIAL_TOKENS)} special tokens already take {len(tokens)} "
            f"entries; use a vocab_size above {len(tokens)} (or a smaller limit_alphabet).")
    if tuple(tokens[:len(WORDPIECE_SPECIAL_TOKENS)]) != WORDPIECE_SPECIAL_TOKENS:
        raise VocabularyError(f"the trained vocabulary starts {tokens[:5]}, expected "
                              f"{list(WORDPIECE_SPECIAL_TOKENS)}")


def train_wordpiece(inputs: Iterable[str], vocab_file: str, vocab_size: int = 30000,
                    do_lower_case: bool = True, limit_alphabet: int = 1000,
                    min_frequency: int = 2, max_lines: int | None = None) -> dict:
    """Trains a WordPiece vocabulary on the text files ``inputs`` (paths or globs, as
    `albert-tf-train-spm` takes) and writes it to ``vocab_file`` atomically.

    Args:
      limit_alphabet: at most this many distinct characters (the most frequent) are kept.
      min_frequency: pieces seen fewer times are not added.
      max_lines: read at most this many non-empty lines (the first ones), ``None``: all.

    Returns a summary dict; raises `VocabularyError` (one line) on a missing or empty
    corpus and on a ``vocab_size`` too small for the alphabet.
    """
    from tokenizers import trainers
    files = expand_inputs(inputs)
    stats = LineStats()

    def lines() -> Iterator[str]:
        for n, line in enumerate(iter_text_lines(files, stats)):
            if max_lines is not None and n >= max_lines:
                return
            yield line

    tokenizer = bert_pipeline(do_lower_case)       # untrained: an empty vocabulary
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
        special_tokens=list(WORDPIECE_SPECIAL_TOKENS), limit_alphabet=limit_alphabet,
        continuing_subword_prefix=SUFFIX_INDICATOR)
    tokenizer.train_from_iterator(lines(), trainer=trainer)
    if stats.lines == 0:
        raise VocabularyError(f"no text to train on: {files} hold no non-empty UTF-8 line")
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__)
    _check_size(tokens, vocab_size, limit_alphabet)
    write_vocab_txt(tokens, vocab_file)
    return {"vocab": vocab_file, "type": "wordpiece", "vocab_size": len(tokens),
            "files": stats.files, "lines": stats.lines,
            "skipped_non_utf8": stats.skipped_non_utf8, "input_mb": stats.bytes / 1e6,
            "do_lower_case": do_lower_case,
            "special_ids": {t: i for i, t in enumerate(WORDPIECE_SPECIAL_TOKENS)}}
