"""Run an exported ALBERT model on text: the ``albert-tflite-run`` CLI, and the runner names.

    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner("edge/sst2_int8", num_threads=2)
    runner.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

    albert-tflite-run --model=edge/sst2_int8 --text="a gorgeous film" --text="dull and lifeless"
    albert-tflite-run --model=server/sst2_ort --input_file=$ALBERT_TF_DATA_DIR/glue/SST-2/dev.tsv \\
        --output_file=predictions.jsonl     # ONNX and OpenVINO exports too; one line per row
    albert-tflite-run --model=runs/sst2_qat/tflite_int8 --text="a gorgeous film"   # compressed

The runners live in the library (``albert_tflite`` depends on ``albert_tf``, never the
reverse): `albert_tf.runtime.tflite.TFLiteRunner` (LiteRT; `make_interpreter`,
`model_file`, re-exported here), the ONNX and OpenVINO ones
(`albert_tf.runtime.onnx`, `albert_tf.runtime.openvino`), all on
`albert_tf.runtime.runner.ExportRunner` and its preprocessor
(`albert_tf.runtime.preprocessor.Preprocessor`: tokenize, pack into the smallest
sequence-length bucket that holds the text, batch). `open_runner` picks the runner of an
export; `main` is the CLI. Id models need neither TensorFlow nor tensorflow-text.

``--input_file`` is read by `read_inputs`, one output per row and never a guessed column:
``--input_format=text`` (each whole line), ``tsv`` or ``csv`` (default by extension:
`input_format`), columns by ``--text_column`` / ``--text_b_column`` (a header name, or a
0-based index for a headerless file such as SentEval's ``label<TAB>sentence``) or by a known
header (`known_headers`); anything ambiguous is refused in one line naming those flags.
The JSON lines (`output_records`) carry each input (``text``, ``text_b`` or ``choices``)
with its answer.
"""

from __future__ import annotations

import json
import sys
from typing import Iterable, Sequence

from albert_tf import cli, outputs
from albert_tf.export.metadata import read_metadata  # noqa: F401  (public here too)
from albert_tf.runtime.runner import open_runner  # noqa: F401  (public here too)
from albert_tf.runtime.tflite import (INPUT_NAMES, TFLiteRunner,  # noqa: F401
                                            make_interpreter, model_file)
from albert_tf.heads.span import MAX_ANSWER_LENGTH, best_span  # noqa: F401  (public here too)
from albert_tf.user_inputs import InputError

__all__ = ["INPUT_FORMATS", "INPUT_NAMES", "MAX_ANSWER_LENGTH", "TFLiteRunner", "best_span",
           "input_format", "known_headers", "main", "make_interpreter", "model_file",
           "open_runner", "output_records", "read_inputs", "read_metadata"]


# --input_file: how a file is read (tflite/README.md, "Input files").
INPUT_FORMATS = ("text", "tsv", "csv")
SEPARATORS = {"tsv": "tab", "csv": "comma"}      # in messages: "tab-separated"
# The header names read without --text_column: multiple choice (context + choice_N), then the
# pairs (text, second text), then the single texts; GLUE's own pair headers are known too.
SINGLE_HEADERS = ("sentence", "text", "tokens")
PAIR_HEADERS = (("sentence1", "sentence2"), ("question", "context"), ("text_a", "text_b"))


def pair_headers() -> tuple[tuple[str, str], ...]:
    """`PAIR_HEADERS` and the GLUE tasks' pair headers (`albert_tf.data.task_data`): the
    header layouts whose rows are (text, second text); names match in any case."""
    from albert_tf.data.task_data import GLUE_TASKS
    glue = [tuple(spec.text_columns) for spec in GLUE_TASKS.values()
            if len(spec.text_columns) == 2]
    return tuple(dict.fromkeys(PAIR_HEADERS + tuple(glue)))


def known_headers() -> str:
    """The known header layouts, for messages and --help."""
    pairs = ", ".join("/".join(p) for p in pair_headers())
    return f"{', '.join(SINGLE_HEADERS)}; {pairs}; context + choice_0, choice_1, ..."


def input_format(path: str, given: str | None = None) -> str:
    """``given``, else by extension: ``csv`` for a ``.csv`` file, ``tsv`` for any other."""
    return given or ("csv" if path.lower().endswith(".csv") else "tsv")


def column_flag(value: str | None, flag: str) -> str | int | None:
    """``--text_column`` / ``--text_b_column``: a 0-based index (digits) or a header name."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        raise InputError(f"{flag} is empty: pass a header name or a 0-based column index.")
    return int(value) if value.isdigit() else value


def _rows(path: str, fmt: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each row of ``path``, blank rows at the end dropped. TSV is
    split on every tab (no quoting: quotes are text, as in GLUE); CSV is Python's ``csv``
    (quoted fields may hold commas and newlines); text is one field per line."""
    import csv
    try:
        with open(path, encoding="utf-8-sig", newline="" if fmt == "csv" else None) as f:
            if fmt != "csv":
                rows = [(n, line.rstrip("\n").split("\t") if fmt == "tsv" else
                         [line.rstrip("\n")]) for n, line in enumerate(f, 1)]
            else:
                csv.field_size_limit(sys.maxsize)
                reader, rows, line = csv.reader(f, strict=True), [], 1
                for row in reader:
                    rows.append((line, row))
                    line = reader.line_num + 1
    except UnicodeDecodeError as e:
        raise InputError(f"--input_file={path} is not UTF-8 text ({e.reason} at byte "
                           f"{e.start}): save it as UTF-8.") from None
    except csv.Error as e:
        raise InputError(f"--input_file={path}: malformed CSV ({e}); quote a text holding "
                           "commas, quotes or line breaks as \"...\" (inner quotes doubled), "
                           "or pass --input_format=text or tsv.") from None
    while rows and not "".join(rows[-1][1]).strip():
        rows.pop()
    return rows


def _header_layout(path: str, header: list[str]) -> tuple[list[int], str | None] | None:
    """(columns, kind) of a known header (kind: None, ``pair`` or ``choices``), or None."""
    names = [h.strip().lower() for h in header]
    choices = [i for i, h in enumerate(names) if h.startswith("choice_")]
    if "context" in names and len(choices) >= 2:
        return [names.index("context")] + choices, "choices"
    pairs = [p for p in pair_headers() if all(n.lower() in names for n in p)]
    for layouts, kind in ((pairs, "pair"), ([(n,) for n in SINGLE_HEADERS if n in names], None)):
        if len(layouts) > 1:
            raise InputError(f"--input_file={path}: line 1, the header ({', '.join(header)}), "
                               f"has {' and '.join('/'.join(x) for x in layouts)}: pass "
                               "--text_column (and --text_b_column) to say which.")
        if layouts:
            return [names.index(n.lower()) for n in layouts[0]], kind
    return None


def _flag_columns(path: str, header: list[str], flags: list[tuple[str, str | int]]
                  ) -> tuple[list[int], bool]:
    """(columns, whether line 1 is a header) of --text_column / --text_b_column: a name is
    looked up in line 1, the header; indices only mean a file without one."""
    named = any(isinstance(value, str) for _, value in flags)
    names = [h.strip().lower() for h in header]
    if not named and _header_layout(path, header) is not None:
        raise InputError(f"--input_file={path}: line 1 is a header ({', '.join(header)}): "
                           "name the columns instead (e.g. --text_column="
                           f"{header[min(flags[0][1], len(header) - 1)].strip()}).")
    columns = []
    for flag, value in flags:
        if isinstance(value, str):
            if value.lower() not in names:
                raise InputError(f"--input_file={path}: {flag}={value} is not in line 1, the "
                                   f"header ({', '.join(header)}); pass one of its names or "
                                   "a 0-based column index.")
            value = names.index(value.lower())
        elif value >= len(header):
            raise InputError(f"--input_file={path}: {flag}={value} but line 1 has "
                               f"{len(header)} column(s) (0-based: 0 to {len(header) - 1}).")
        columns.append(value)
    return columns, named


def _layout(path: str, fmt: str, rows, flags) -> tuple[list[int], str | None, int]:
    """(columns, kind, rows of header) of a file: by the flags, else its known header, else
    one column per line; a multi-column file without a known header is refused."""
    header = rows[0][1]
    if fmt == "text":
        if flags:
            raise InputError(f"{flags[0][0]} picks a column of a TSV or CSV; "
                               "--input_format=text takes each whole line: drop one of them.")
        return [0], None, 0
    if flags and flags[0][0] != "--text_column":
        raise InputError("--text_b_column needs --text_column (the first text's column).")
    if flags:
        columns, named = _flag_columns(path, header, flags)
        return columns, "pair" if len(columns) > 1 else None, int(named)
    known = _header_layout(path, header)
    if known:
        return known[0], known[1], 1
    if len(header) > 1:
        longest = max(range(len(header)), key=lambda i: len(header[i]))
        raise InputError(f"--input_file={path}: line 1 has {len(header)} "
                           f"{SEPARATORS[fmt]}-separated columns and no known header "
                           f"({known_headers()}): pass --text_column=N (0-based, or a header "
                           f"name; e.g. --text_column={longest}, its longest) and "
                           "--text_b_column=... for pairs, or --input_format=text to take "
                           "each whole line.")
    return [0], None, 0


def _check_rows(path: str, fmt: str, rows, columns: list[int], start: int) -> None:
    """Every row has line 1's number of columns and a text in each column read."""
    width = len(rows[0][1])
    for line, row in rows[start:]:
        if not "".join(row).strip():
            raise InputError(f"--input_file={path}: line {line} is empty; remove it or "
                               "give it a text.")
        if len(row) != width:
            fix = ("pass --input_format=text to take each whole line" if width == 1 and
                   not start else f"fix the line (a {SEPARATORS[fmt]} inside a text?)")
            raise InputError(f"--input_file={path}: line {line} has {len(row)} "
                               f"{SEPARATORS[fmt]}-separated columns where line 1 has "
                               f"{width}: {fix}.")
        blank = [i for i in columns if not row[i].strip()]
        if blank:
            raise InputError(f"--input_file={path}: line {line} has an empty text"
                               + (f" ({rows[0][1][blank[0]]})" if start else "")
                               + "; remove the line or give it a text.")


def read_inputs(path: str, fmt: str | None = None, text_column: str | int | None = None,
                text_b_column: str | int | None = None
                ) -> tuple[list[str], list[str] | list[list[str]] | None]:
    """(texts, second texts or None) of an ``--input_file``: one per row, never guessed.

    ``fmt`` (`INPUT_FORMATS`; default `input_format`): ``text`` takes each whole line;
    ``tsv`` / ``csv`` read columns: ``text_column`` (and ``text_b_column``; a header name,
    or a 0-based index for a file without a header), else a known header (`known_headers`;
    multiple choice gives a list of choices per row), else, for a file of one column, each
    line. A multi-column file without a known header, a row of another width (a tab in a
    text), an empty line or text is an `albert_tf.user_inputs.InputError` naming the line
    and the flags that read it."""
    from albert_tf.user_inputs import input_file
    input_file(path, "--input_file", "texts (one per line, or a TSV/CSV)")
    fmt = input_format(path, fmt)
    flags = [(f, v) for f, v in (("--text_column", text_column),
                                 ("--text_b_column", text_b_column)) if v is not None]
    rows = _rows(path, fmt)
    if not rows:
        raise InputError(f"--input_file={path} has no text: pass a file of texts.")
    columns, kind, start = _layout(path, fmt, rows, flags)
    if len(rows) <= start:
        raise InputError(f"--input_file={path} has a header ({', '.join(rows[0][1])}) but "
                           "no texts under it.")
    _check_rows(path, fmt, rows, columns, start)
    body = [row for _, row in rows[start:]]
    texts_a = [r[columns[0]] for r in body]
    if kind == "choices":
        return texts_a, [[r[i] for i in columns[1:]] for r in body]
    return texts_a, [r[columns[1]] for r in body] if kind else None


def output_records(texts_a: Sequence[str], texts_b: Sequence | None,
                   results: Sequence[dict]) -> list[dict]:
    """The JSON lines: each input (``text``, and ``text_b`` or, for multiple choice,
    ``choices``) with its answer."""
    records = []
    for i, (text, result) in enumerate(zip(texts_a, results)):
        record = {"text": text}
        if texts_b is not None:
            second = texts_b[i]
            record["choices" if isinstance(second, (list, tuple)) else "text_b"] = second
        records.append(dict(record, **result))
    return records


def _parser():
    """The flags of ``albert-tflite-run``."""
    from albert_tf import user_inputs
    parser = user_inputs.ArgumentParser(doc=__doc__)
    parser.add_argument("--model", required=True, help="export directory (TFLite, ONNX, "
                        "OpenVINO) or its model file (.tflite)")
    parser.add_argument("--text", action="append", help="input text (repeatable)")
    parser.add_argument("--text_b", action="append", help="second text for pair tasks")
    parser.add_argument("--choice", action="append", help="multiple choice: a candidate "
                        "second text (repeatable; the same candidates for every --text)")
    parser.add_argument("--input_file", help="texts, one output per row: one text per line, "
                        "or a TSV/CSV read by --text_column, else by a known header ("
                        f"{known_headers()}); a multi-column file without one is refused")
    parser.add_argument("--input_format", choices=INPUT_FORMATS, default=None,
                        help="text: each whole line is a text (tabs and commas included); "
                        "tsv: tab-separated, no quoting; csv: comma-separated, quoted fields "
                        "(default: csv for a .csv file, tsv for any other; a TSV/CSV of one "
                        "column without a known header is one text per line)")
    parser.add_argument("--text_column", help="--input_file's text column: a header name "
                        "(line 1 is the header) or a 0-based index (the file has no header, "
                        "e.g. 1 for SentEval's label<TAB>sentence)")
    parser.add_argument("--text_b_column", help="--input_file's second-text column for pair "
                        "tasks (with --text_column; a name or a 0-based index)")
    parser.add_argument("--output_file", help="JSON lines (default: stdout): text (and text_b, "
                        "or choices) with the answer")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing "
                        "--output_file (refused without it: albert-tf does not write over a "
                        "file it cannot tell it wrote)")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    parser.add_argument("--no_xnnpack", action="store_true", help="builtin kernels only")
    cli.add_verbose_argument(parser)
    return parser


def _inputs(parser, args) -> tuple[list[str], list | None]:
    """(texts, second texts or None) of --text/--text_b/--choice or of --input_file."""
    from albert_tf import user_inputs
    file_flags = [f"--{n}" for n in ("input_format", "text_column", "text_b_column")
                  if getattr(args, n) is not None]
    if args.input_file and args.text is not None:
        parser.error("pass --text or --input_file, not both")
    if args.input_file and (args.text_b or args.choice):
        parser.error(f"{'--text_b' if args.text_b else '--choice'} goes with --text; an "
                     "--input_file carries its second texts in a column (--text_b_column)")
    if args.input_file:
        return read_inputs(args.input_file, args.input_format,
                           column_flag(args.text_column, "--text_column"),
                           column_flag(args.text_b_column, "--text_b_column"))
    if args.text is None:
        parser.error("pass --text or --input_file")
    if file_flags:
        parser.error(f"{file_flags[0]} reads --input_file; drop it with --text")
    for flag, values in (("--text", args.text), ("--text_b", args.text_b or ()),
                         ("--choice", args.choice or ())):
        for value in values:
            user_inputs.text(value, flag)
    if args.choice:
        return args.text, [list(args.choice)] * len(args.text)
    return args.text, args.text_b


@cli.guarded
def main(argv: Iterable[str] | None = None) -> int:
    """``albert-tflite-run``: the answers as JSON lines, or one line on stderr and exit 2."""
    from albert_tf import user_inputs
    parser = _parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    cli.quiet_logs([] if not args.verbose else ["--verbose"])
    try:
        user_inputs.at_least(args.threads, "--threads")
        if args.output_file:
            outputs.check_output_file(args.output_file, overwrite=args.overwrite,
                                      inputs=[("--model", args.model),
                                              ("--input_file", args.input_file)])
        texts_a, texts_b = _inputs(parser, args)
        runner = open_runner(args.model, args.threads, False if args.no_xnnpack else None)
        results = runner.predict(texts_a, texts_b)
    except (ValueError, OSError) as e:   # no export there, wrong texts for the head, ...
        parser.exit(2, f"{parser.prog}: error: {user_inputs.one_line(e)}\n")
    lines = [json.dumps(r, ensure_ascii=False) + "\n"
             for r in output_records(texts_a, texts_b, results)]
    if args.output_file:
        outputs.write_text(args.output_file, "".join(lines))
        print(f"wrote {len(lines)} answer{'' if len(lines) == 1 else 's'} to {args.output_file}")
    else:
        sys.stdout.writelines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
