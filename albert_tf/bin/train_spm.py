"""albert-tf-train-spm: trains a SentencePiece unigram vocabulary the way ALBERT did.

    albert-tf-train-spm --input="$ALBERT_TF_DATA_DIR/corpus/imdb-unsup.txt" \\
        --model_prefix=vocab/imdb8k --vocab_size=8000 --do_lower_case   # vocab/imdb8k.model

Ids: <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4 (as the original 30k-clean model).
The same binary as `albert-tf-train-vocab --type=sentencepiece`, with --model_prefix.
"""

from __future__ import annotations

from absl import flags

from albert_tf import cli
from albert_tf.bin import train_vocab


def define_flags() -> None:
    """`albert_tf.bin.train_vocab`'s flags (type sentencepiece) and --model_prefix."""
    train_vocab.define_flags(default_type="sentencepiece")
    flags.DEFINE_string("model_prefix", None, "Output prefix: writes PREFIX.model and "
                        "PREFIX.vocab (or pass --output=DIR: DIR/vocab.model).")


def run() -> None:
    cli.run_app(train_vocab.main, define_flags, __doc__)


if __name__ == "__main__":
    run()
