"""Write (or show) the metadata a mobile app needs next to a ``.tflite`` model.

    python -m albert_tflite.metadata --model=qat/model_qat.tflite --model_dir=runs/sst2 \\
        --quantization=qat        # writes metadata.json, the vocabulary, labels.txt beside it
    python -m albert_tflite.metadata --model=edge/sst2_int8 --show

``albert-tf-export --format=tflite`` already writes these files; this tool is for models
converted elsewhere (e.g. by the compression tools). It reads the signatures and op types
from the flatbuffer and the task, labels and vocabulary from the model directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Iterable

from albert_tf import cli
from albert_tf.export.metadata import read_metadata, write_metadata
from albert_tf.text.vocabulary import VocabularyError, find_vocabulary


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="TFLite model metadata for mobile apps.")
    parser.add_argument("--model", required=True, help=".tflite path (or export dir with --show)")
    parser.add_argument("--model_dir", help="the albert-tf model directory it was exported from")
    parser.add_argument("--vocab_file", help="default: the model directory's vocab.model "
                        "(SentencePiece) or vocab.txt (WordPiece)")
    parser.add_argument("--quantization", default="unknown",
                        help="quantization recorded in the metadata")
    parser.add_argument("--show", action="store_true", help="print metadata.json and exit")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    if args.show:
        print(json.dumps(read_metadata(args.model), indent=2))
        return 0
    if not args.model_dir:
        parser.error("--model_dir is required to write metadata")
    with open(os.path.join(args.model_dir, "task.json"), encoding="utf-8") as f:
        task_info = json.load(f)
    if args.vocab_file and not os.path.isfile(args.vocab_file):
        parser.error(f"no vocabulary at {args.vocab_file}")
    try:
        vocab = args.vocab_file or find_vocabulary(args.model_dir)[1]
    except VocabularyError as e:
        parser.error(f"{e} Or pass --vocab_file.")
    directory = os.path.dirname(os.path.abspath(args.model))
    meta = write_metadata(directory, os.path.basename(args.model), task_info, vocab,
                          args.quantization)
    print(f"wrote {os.path.join(directory, 'metadata.json')} "
          f"(signatures: {', '.join(meta['signatures'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
