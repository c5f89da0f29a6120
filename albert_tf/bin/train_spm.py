"""albert-tf-train-spm: trains a SentencePiece unigram vocabulary the way ALBERT did.

    albert-tf-train-spm --input="$ALBERT_TF_DATA_DIR/corpus/imdb-unsup.txt,$ALBERT_TF_DATA_DIR/corpus/python-docs/**/*.txt" \
        --model_prefix=out/vocab/30k --vocab_size=30000 --do_lower_case

Ids: <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 (as the original 30k-clean model).
"""

from __future__ import annotations

import json
import time

from absl import app, flags

from albert_tf import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags (called by `run`, not at import)."""
    flags.DEFINE_list("input", None, "Text files or globs (comma-separated; ** is recursive).")
    flags.DEFINE_string("model_prefix", None, "Output prefix: writes PREFIX.model and PREFIX.vocab.")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the text before training.")
    flags.DEFINE_integer("input_sentence_size", 10_000_000, "Max sentences sampled for training.")
    flags.DEFINE_float("character_coverage", 0.99995, "SentencePiece character coverage.")
    flags.DEFINE_integer("num_threads", None, "Trainer threads (default: all cores).")


_REQUIRED = ["input", "model_prefix"]


def main(argv: list[str]) -> None:
    del argv
    missing = [f"--{name}" for name in _REQUIRED if FLAGS[name].value is None]
    if missing:
        raise app.UsageError(f"required: {', '.join(missing)}")
    from albert_tf.text.spm_training import VocabularyError, train_sentencepiece
    start = time.time()
    try:
        summary = train_sentencepiece(
            FLAGS.input, FLAGS.model_prefix, vocab_size=FLAGS.vocab_size,
            do_lower_case=FLAGS.do_lower_case, input_sentence_size=FLAGS.input_sentence_size,
            character_coverage=FLAGS.character_coverage, num_threads=FLAGS.num_threads)
    except VocabularyError as e:
        raise app.UsageError(str(e))
    summary["seconds"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=1))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
