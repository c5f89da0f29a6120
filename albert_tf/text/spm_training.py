"""Training a SentencePiece unigram vocabulary the way ALBERT did.

The original 30k-clean model was trained with::

    spm_train --input all.txt --model_prefix=30k-clean --vocab_size=30000 --pad_id=0 --unk_id=1
      --eos_id=-1 --bos_id=-1 --control_symbols=[CLS],[SEP],[MASK]
      --user_defined_symbols="(,),\\",-,.,–,£,€" --shuffle_input_sentence=true
      --input_sentence_size=10000000 --character_coverage=0.99995 --model_type=unigram

so ``<pad>``=0, ``<unk>``=1, ``[CLS]``=2, ``[SEP]``=3, ``[MASK]``=4. Here the input lines are
first run through the ALBERT preprocessing (``preprocess_text``) so that the pieces match
what the tokenizer sees; non-UTF-8 lines are skipped and counted.
"""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Iterable, Iterator

from albert_tf.text.preprocessing import preprocess_text

USER_DEFINED_SYMBOLS = ["(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"]
CONTROL_SYMBOLS = ["[CLS]", "[SEP]", "[MASK]"]


class VocabularyError(ValueError):
    """Bad input to vocabulary training or a missing/invalid vocabulary file."""


def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Files matching comma-separated paths or globs (``**`` recursive), in a stable order."""
    files: list[str] = []
    for pattern in patterns:
        for part in str(pattern).split(","):
            part = part.strip()
            if not part:
                continue
            matches = sorted(glob.glob(part, recursive=True))
            matches = [m for m in matches if os.path.isfile(m)]
            if not matches and os.path.isdir(part):
                raise VocabularyError(f"{part!r} is a directory; pass text files or a glob "
                                      f"(e.g. {os.path.join(part, '**', '*.txt')}).")
            if not matches:
                raise VocabularyError(f"no input file matches {part!r}")
            files.extend(m for m in matches if m not in files)
    if not files:
        raise VocabularyError("no input files given")
    return files


@dataclasses.dataclass
class LineStats:
    files: int = 0
    lines: int = 0
    skipped_non_utf8: int = 0
    bytes: int = 0


def iter_text_lines(files: list[str], stats: LineStats | None = None,
                    max_line_bytes: int | None = None) -> Iterator[str]:
    """Non-empty raw lines of ``files`` (decoded as UTF-8; undecodable lines are counted)."""
    stats = stats if stats is not None else LineStats()
    for path in files:
        stats.files += 1
        with open(path, "rb") as f:
            for raw in f:
                stats.bytes += len(raw)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    stats.skipped_non_utf8 += 1
                    continue
                if not line.strip():
                    continue
                if max_line_bytes is not None and len(raw) > max_line_bytes:
                    # Split very long paragraphs at whitespace so the trainer keeps them.
                    yield from _split_long(line, max_line_bytes)
                else:
                    yield line
                stats.lines += 1


def _split_long(line: str, max_bytes: int) -> Iterator[str]:
    chunk: list[str] = []
    size = 0
    for word in line.split():
        n = len(word.encode("utf-8")) + 1
        if chunk and size + n > max_bytes:
            yield " ".join(chunk)
            chunk, size = [], 0
        chunk.append(word)
        size += n
    if chunk:
        yield " ".join(chunk)


def train_sentencepiece(inputs: Iterable[str], model_prefix: str, vocab_size: int = 30000,
                        do_lower_case: bool = True, input_sentence_size: int = 10_000_000,
                        character_coverage: float = 0.99995, num_threads: int | None = None,
                        seed_sentencepiece_size: int = 1_000_000, max_sentence_length: int = 8192,
                        extra_args: dict | None = None) -> dict:
    """Trains ``<model_prefix>.model`` / ``.vocab``; returns a summary dict."""
    import sentencepiece as spm

    files = expand_inputs(inputs)
    if not any(preprocess_text(line, lower=do_lower_case) for line in iter_text_lines(
            files, LineStats(), max_line_bytes=max_sentence_length // 2)):
        # (SentencePiece's own answer: "INTERNAL: src/trainer_interface.cc(467) ...")
        raise VocabularyError(f"no text to train on: {files} hold no non-empty UTF-8 line")
    out_dir = os.path.dirname(os.path.abspath(model_prefix))
    created = not os.path.exists(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    stats = LineStats()

    def sentences() -> Iterator[str]:
        for line in iter_text_lines(files, stats, max_line_bytes=max_sentence_length // 2):
            text = preprocess_text(line, lower=do_lower_case)
            if text:
                yield text

    kwargs = dict(
        sentence_iterator=sentences(),
        model_prefix=model_prefix,
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=",".join(CONTROL_SYMBOLS),
        # SentencePiece splits list flags as CSV: a double quote is written as """".
        user_defined_symbols=",".join('""""' if s == '"' else s for s in USER_DEFINED_SYMBOLS),
        shuffle_input_sentence=True,
        input_sentence_size=input_sentence_size,
        character_coverage=character_coverage,
        seed_sentencepiece_size=seed_sentencepiece_size,
        max_sentence_length=max_sentence_length,
        num_threads=num_threads or max(1, os.cpu_count() or 1),
        minloglevel=2,
    )
    kwargs.update(extra_args or {})
    try:
        spm.SentencePieceTrainer.train(**kwargs)
    except RuntimeError as e:
        if created and not os.listdir(out_dir):   # a failed run leaves no directory behind
            os.rmdir(out_dir)
        raise VocabularyError(f"SentencePiece training failed: {e}") from e
    processor = spm.SentencePieceProcessor(model_file=model_prefix + ".model")
    expected = [("<pad>", 0), ("<unk>", 1), ("[CLS]", 2), ("[SEP]", 3), ("[MASK]", 4)]
    expected += [(s, 5 + i) for i, s in enumerate(USER_DEFINED_SYMBOLS)]
    for piece, want in expected:
        got = processor.piece_to_id(piece)
        if got != want:
            raise VocabularyError(f"{piece} got id {got}, expected {want}")
    return {"model": model_prefix + ".model", "vocab": model_prefix + ".vocab",
            "vocab_size": processor.get_piece_size(), "files": stats.files,
            "lines": stats.lines, "skipped_non_utf8": stats.skipped_non_utf8,
            "input_mb": stats.bytes / 1e6, "do_lower_case": do_lower_case}
