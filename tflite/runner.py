"""Run an exported ALBERT model on text: the ``albert-tflite-run`` CLI, and the runner names.

    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner("edge/sst2_int8", num_threads=2)
    runner.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

    python -m albert_tflite.runner --model=edge/sst2_int8 --text="a gorgeous film"
    albert-tflite-run --model=edge/sst2_int8 --input_file=dev.tsv --output_file=out.jsonl

The runners live in the library (``albert_tflite`` depends on ``albert_tf``, never the
reverse): `albert_tf.export.tflite_runner.TFLiteRunner` (LiteRT; `make_interpreter`,
`model_file`, re-exported here), the ONNX and OpenVINO ones
(`albert_tf.export.onnx_runner`, `albert_tf.export.openvino_runner`), all on
`albert_tf.export.runner.ExportRunner` and its preprocessor
(`albert_tf.text.preprocessor.Preprocessor`: tokenize, pack into the smallest
sequence-length bucket that holds the text, batch). `open_runner` picks the runner of an
export; `main` is the CLI. Id models need neither TensorFlow nor tensorflow-text.
"""

from __future__ import annotations

import json
import sys
from typing import Iterable

from albert_tf import cli
from albert_tf.export.metadata import read_metadata  # noqa: F401  (public here too)
from albert_tf.export.runner import open_runner  # noqa: F401  (public here too)
from albert_tf.export.tflite_runner import (INPUT_NAMES, TFLiteRunner,  # noqa: F401
                                            make_interpreter, model_file)
from albert_tf.task_heads import MAX_ANSWER_LENGTH, best_span  # noqa: F401  (public here too)

__all__ = ["INPUT_NAMES", "MAX_ANSWER_LENGTH", "TFLiteRunner", "best_span", "main",
           "make_interpreter", "model_file", "open_runner", "read_metadata"]


def _read_inputs(path: str) -> tuple[list[str], list[str] | None]:
    """The texts of an ``--input_file``; an `albert_tf.user_inputs.InputError` names the
    line of an empty text or a short row (never a silently skipped or shifted one)."""
    import csv

    from albert_tf.user_inputs import InputError, input_file
    input_file(path, "--input_file", "texts (a TSV with a sentence header, or one text per "
               "line)")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    while rows and not "".join(rows[-1]).strip():    # blank lines at the end
        rows.pop()
    header = [h.lower() for h in rows[0]] if rows else []
    columns, pair, start = [0], None, 0
    choices = [i for i, h in enumerate(header) if h.startswith("choice_")]
    if "context" in header and choices:     # multiple choice (albert_tf.data.task_data format)
        columns, pair, start = [header.index("context")] + choices, "choices", 1
    else:
        for a, b in (("sentence", None), ("sentence1", "sentence2"), ("question", "context"),
                     ("text_a", "text_b"), ("text", None), ("tokens", None)):
            if a in header:
                columns, start = [header.index(a)], 1
                if b and b in header:
                    columns, pair = columns + [header.index(b)], "pair"
                break
    if len(rows) <= start:
        raise InputError(f"--input_file={path} has a header ({', '.join(rows[0])}) but no "
                         "texts under it.")
    for line, row in enumerate(rows[start:], start + 1):
        if not "".join(row).strip():
            raise InputError(f"--input_file={path}: line {line} is empty; remove it or give "
                             "it a text.")
        if len(row) <= max(columns):
            raise InputError(f"--input_file={path}: line {line} has {len(row)} column(s); the "
                             f"header has {len(header) or 1}.")
        blank = [i for i in columns if not row[i].strip()]
        if blank:
            raise InputError(f"--input_file={path}: line {line} has an empty text"
                             + (f" ({rows[0][blank[0]]})" if start else "")
                             + "; remove the line or give it a text.")
    body = rows[start:]
    texts_a = [r[columns[0]] for r in body]
    if pair == "choices":
        return texts_a, [[r[i] for i in columns[1:]] for r in body]
    return texts_a, [r[columns[1]] for r in body] if pair else None


def main(argv: Iterable[str] | None = None) -> int:
    from albert_tf import user_inputs
    parser = user_inputs.ArgumentParser(description="Run an exported ALBERT model on text: a "
                                        "TFLite export (LiteRT), or an ONNX or OpenVINO one "
                                        "(their runtimes).")
    parser.add_argument("--model", required=True, help="export directory (TFLite, ONNX, "
                        "OpenVINO) or its model file (.tflite)")
    parser.add_argument("--text", action="append", help="input text (repeatable)")
    parser.add_argument("--text_b", action="append", help="second text for pair tasks")
    parser.add_argument("--choice", action="append", help="multiple choice: a candidate "
                        "second text (repeatable; the same candidates for every --text)")
    parser.add_argument("--input_file", help="TSV with a sentence (or sentence1/sentence2, "
                        "context/choice_0/choice_1/..., tokens) header, or one text per line")
    parser.add_argument("--output_file", help="JSON lines (default: stdout)")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    parser.add_argument("--no_xnnpack", action="store_true", help="builtin kernels only")
    cli.add_verbose_argument(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    try:
        user_inputs.at_least(args.threads, "--threads")
        if args.input_file and args.text is not None:
            parser.error("pass --text or --input_file, not both")
        if args.input_file:
            texts_a, texts_b = _read_inputs(args.input_file)
        elif args.text is not None:
            for flag, values in (("--text", args.text), ("--text_b", args.text_b or ()),
                                 ("--choice", args.choice or ())):
                for value in values:
                    user_inputs.text(value, flag)
            texts_a, texts_b = args.text, args.text_b
            if args.choice:
                texts_b = [list(args.choice)] * len(texts_a)
        else:
            parser.error("pass --text or --input_file")
        runner = open_runner(args.model, args.threads, False if args.no_xnnpack else None)
        results = runner.predict(texts_a, texts_b)
    except (ValueError, OSError) as e:   # no export there, wrong texts for the head, ...
        parser.exit(2, f"{parser.prog}: error: {user_inputs.one_line(e)}\n")
    out = open(args.output_file, "w", encoding="utf-8") if args.output_file else sys.stdout
    try:
        for text, result in zip(texts_a, results):
            out.write(json.dumps(dict(text=text, **result), ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
