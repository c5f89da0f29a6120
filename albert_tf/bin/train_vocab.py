"""albert-tf-train-vocab: trains a WordPiece (BERT) or SentencePiece (ALBERT) vocabulary.

    albert-tf-train-vocab --type=wordpiece --vocab_size=8000 --output=vocab/wp8k \\
        --input="$ALBERT_TF_DATA_DIR/corpus/python-docs/**/*.txt"   # writes vocab/wp8k/vocab.txt
    albert-tf-train-vocab --type=sentencepiece --vocab_size=8000 --output=vocab/spm8k \\
        --input="$ALBERT_TF_DATA_DIR/corpus/imdb-unsup.txt"    # vocab/spm8k/vocab.model, .vocab

--input takes several files or globs, comma-separated (** is recursive).

--output is a directory; the file gets the name a model directory gives it, so the
directory can be passed wherever a vocabulary is. Ids: wordpiece [PAD]=0, [UNK]=1,
[CLS]=2, [SEP]=3, [MASK]=4; sentencepiece <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 (as
the original 30k-clean model; the project's is official_configs/vocab/imdb_pydocs_8k.model).
`albert-tf-train-spm` is this binary with --type=sentencepiece and --model_prefix.
"""

from __future__ import annotations

import json
import os
import time
from typing import Callable

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS
TYPES = ("wordpiece", "sentencepiece")


def define_flags(default_type: str | None = None) -> None:
    """Defines the flags (called by `run`, not at import); ``default_type`` for aliases."""
    flags.DEFINE_enum("type", default_type, list(TYPES), "Vocabulary kind: wordpiece (BERT, "
                      "vocab.txt) or sentencepiece (ALBERT, vocab.model).")
    flags.DEFINE_list("input", None, "Text files or globs (comma-separated; ** is recursive).")
    flags.DEFINE_string("output", None, "Output directory: writes vocab.txt (wordpiece) or "
                        "vocab.model + vocab.vocab (sentencepiece); a new directory.")
    flags.DEFINE_bool("overwrite", False, "Replace an earlier albert-tf vocabulary at --output "
                      "(never a directory albert-tf did not write).")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text (wordpiece: and strip "
                      "accents) before training.")
    flags.DEFINE_integer("input_sentence_size", 10_000_000, "Max lines used for training "
                         "(sentencepiece samples them, wordpiece reads the first ones).")
    flags.DEFINE_integer("num_threads", None, "Trainer threads (default: all cores).")
    flags.DEFINE_float("character_coverage", 0.99995, "sentencepiece: character coverage.")
    flags.DEFINE_integer("limit_alphabet", 1000, "wordpiece: keep at most this many distinct "
                         "characters (the most frequent).")
    flags.DEFINE_integer("min_frequency", 2, "wordpiece: pieces seen fewer times are dropped.")


def _flag(name: str):
    """A flag's value, ``None`` for a flag this binary does not define."""
    return FLAGS[name].value if name in FLAGS else None


def _train_wordpiece(output: str) -> dict:
    if _flag("model_prefix"):
        raise app.UsageError("--model_prefix is for --type=sentencepiece; use --output=DIR")
    if FLAGS.num_threads:                        # the tokenizers library's thread pool
        os.environ["RAYON_NUM_THREADS"] = str(FLAGS.num_threads)
    from albert_tf.text.vocabulary import WORDPIECE_FILE
    from albert_tf.text.wordpiece_training import train_wordpiece
    return train_wordpiece(
        FLAGS.input, os.path.join(output, WORDPIECE_FILE), vocab_size=FLAGS.vocab_size,
        do_lower_case=FLAGS.do_lower_case, limit_alphabet=FLAGS.limit_alphabet,
        min_frequency=FLAGS.min_frequency, max_lines=FLAGS.input_sentence_size)


def _train_sentencepiece(output: str | None) -> dict:
    prefix = _flag("model_prefix")
    if bool(prefix) == bool(output):
        raise app.UsageError("give one of --output=DIR and --model_prefix=PREFIX")
    from albert_tf.text.spm_training import train_sentencepiece
    from albert_tf.text.vocabulary import SENTENCEPIECE_FILE
    prefix = prefix or os.path.join(output, os.path.splitext(SENTENCEPIECE_FILE)[0])
    return train_sentencepiece(
        FLAGS.input, prefix, vocab_size=FLAGS.vocab_size, do_lower_case=FLAGS.do_lower_case,
        input_sentence_size=FLAGS.input_sentence_size,
        character_coverage=FLAGS.character_coverage, num_threads=FLAGS.num_threads)


TRAINERS: dict[str, Callable[[str | None], dict]] = {
    "wordpiece": _train_wordpiece, "sentencepiece": _train_sentencepiece}


def _train(kind: str, output: str | None) -> dict:
    """Trains into a staged ``output`` directory (`albert_tf.outputs`), or to
    ``--model_prefix`` files; the summary names the final paths."""
    from albert_tf import outputs
    if output is None or _flag("model_prefix"):
        return TRAINERS[kind](output)
    inputs = [("--input", path) for path in FLAGS.input]
    with outputs.staged_output(output, kind=f"{kind} vocabulary", inputs=inputs,
                               overwrite=FLAGS.overwrite) as stage:
        summary = TRAINERS[kind](stage)
    final = os.path.abspath(os.path.expanduser(output))
    return {key: value.replace(stage, final) if isinstance(value, str) else value
            for key, value in summary.items()}


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    missing = [f"--{name}" for name in ("type", "input") if FLAGS[name].value is None]
    if FLAGS.output is None and not _flag("model_prefix"):
        missing.append("--output")
    if missing:
        raise app.UsageError(f"required: {', '.join(missing)}")
    for flag in ("vocab_size", "input_sentence_size", "num_threads", "limit_alphabet"):
        if FLAGS[flag].value is not None and FLAGS[flag].value < 1:
            raise app.UsageError(f"--{flag}={FLAGS[flag].value}: must be >= 1.")
    from albert_tf.outputs import OutputError
    from albert_tf.text.spm_training import VocabularyError
    start = time.time()
    try:
        summary = _train(FLAGS.type, FLAGS.output)
    except (VocabularyError, OutputError) as e:
        raise app.UsageError(str(e))
    summary["seconds"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=1))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
