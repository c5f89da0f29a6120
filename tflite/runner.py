"""Run an exported ALBERT ``.tflite`` on text with LiteRT (``ai_edge_litert``): library + CLI.

    from albert_tflite.runner import TFLiteRunner
    runner = TFLiteRunner("edge/sst2_int8", num_threads=2)
    runner.predict(["a gorgeous film", "dull and lifeless"])
    # [{'label': '1', 'label_id': 1, 'probabilities': [0.03, 0.97]}, ...]

    python -m albert_tflite.runner --model=edge/sst2_int8 --text="a gorgeous film"
    albert-tflite-run --model=edge/sst2_int8 --input_file=dev.tsv --output_file=out.jsonl

The runner reads ``metadata.json`` next to the model (`albert_tf.export.metadata`). For id
models it tokenizes with the Python tokenizer of the export's vocabulary (SentencePiece or
WordPiece: `albert_tf.text.vocabulary.load_tokenizer`), puts each text in the smallest
sequence-length bucket (signature) that holds it (the largest one truncates), groups texts
of a bucket into batches of the signature's static batch size, runs, and decodes the outputs
in input order. For models with the tokenizer inside it passes the strings and registers
tensorflow-text's custom ops. Id models need neither TensorFlow nor tensorflow-text.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Iterable, Sequence

import numpy as np

from albert_tf import cli
from albert_tf import task_heads as heads
from albert_tf.export.metadata import read_metadata
from albert_tf.task_heads import MAX_ANSWER_LENGTH, best_span  # noqa: F401  (public here too)

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def model_file(model: str) -> str:
    """The ``.tflite`` path of a model path or export directory."""
    if os.path.isdir(model):
        return os.path.join(model, read_metadata(model)["model_file"])
    return model


# LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." to stderr the first
# time a process applies the delegate (at an interpreter's first allocation); its logger
# reads no setting, so the first XNNPACK interpreter is made and allocated in
# `albert_tf.cli.quiet_native` (the line shows with --verbose).
_xnnpack_started = False


def make_interpreter(path: str, num_threads: int = 2, xnnpack: bool = True,
                     custom_ops: Sequence[str] = ()):
    """A LiteRT interpreter for ``path``; tf-text custom ops registered when needed.

    ``xnnpack=False`` runs the builtin kernels only (for comparisons).
    """
    global _xnnpack_started
    from ai_edge_litert import interpreter as lit

    kwargs: dict[str, Any] = {"model_path": path, "num_threads": num_threads}
    if not xnnpack:
        kwargs["experimental_op_resolver_type"] = \
            lit.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    if custom_ops:
        from tensorflow_text.core.pybinds import tflite_registrar
        registerers = [getattr(tflite_registrar, name) for name in custom_ops]
        kwargs["custom_op_registerers"] = registerers
    make = lit.InterpreterWithCustomOps if custom_ops else lit.Interpreter
    if not xnnpack or _xnnpack_started:
        return make(**kwargs)
    with cli.quiet_native():
        interpreter = make(**kwargs)
        interpreter.allocate_tensors()     # applies the delegate: the line is printed here
    _xnnpack_started = True
    return interpreter


class TFLiteRunner:
    """Tokenize, bucket by length, batch, run and decode with one exported model.

    Args:
      model: export directory (with ``metadata.json``) or ``.tflite`` path inside one.
      num_threads: CPU threads of the interpreter.
      xnnpack: use LiteRT's default XNNPACK delegate (the fast CPU path).

    Threads: one runner may be shared by any number of threads. A LiteRT interpreter is not
    thread-safe (its input/output tensors and arena are per-interpreter state), so the runner
    keeps one interpreter per calling thread (``threading.local``): the constructing thread's
    is made here, another thread's on its first call, from the same file, and freed when that
    thread ends. Calls never wait on each other; answers equal single-threaded ones
    (``tests/test_concurrency.py``). Each interpreter costs its own memory (arena, XNNPACK's
    packed weights) and ``num_threads`` CPU threads, so use a fixed thread pool, not a new
    thread per request, and keep threads x ``num_threads`` near the core count.
    """

    def __init__(self, model: str, num_threads: int = 2, xnnpack: bool = True):
        self.meta = read_metadata(model)
        self.path = model_file(model)
        self.directory = os.path.dirname(os.path.abspath(self.path))
        self.num_threads, self.xnnpack = num_threads, xnnpack
        self._local = threading.local()   # per thread: .interpreter and its .runners
        _ = self.interpreter   # the constructing thread's, made now: a bad file fails here
        self.buckets: list[tuple[int, str]] = sorted(
            (sig["seq_length"], key) for key, sig in self.meta["signatures"].items()
            if "seq_length" in sig)
        self._init_text()

    def _init_text(self) -> None:
        """Head, labels and the Python tokenizer from ``self.meta`` (``self.buckets``: the
        ``(seq_length, key)`` id signatures, set before). Shared with runners of other
        runtimes that subclass this one (`albert_tf.export.openvino_runner`)."""
        self.head = self.meta["head"]
        self.task_head = heads.get(self.head)   # decoding: `albert_tf.task_heads`
        self.labels = self.meta.get("labels")
        tok = self.meta["tokenizer"]
        self.in_graph = bool(tok["in_graph"])
        self.special = tok["special_ids"]
        self.tokenizer = None
        if not self.in_graph:
            if not self.buckets:
                raise ValueError(f"{self.path}: no [batch, seq] id signature in metadata.json")
            from albert_tf.text.vocabulary import load_tokenizer
            self.tokenizer = load_tokenizer(os.path.join(self.directory, tok["vocab_file"]),
                                            do_lower_case=tok["do_lower_case"])

    @property
    def interpreter(self):
        """The calling thread's interpreter (made on the thread's first use)."""
        local = self._local
        if getattr(local, "interpreter", None) is None:
            local.interpreter = make_interpreter(self.path, self.num_threads, self.xnnpack,
                                                 self.meta.get("custom_op_registerers", ()))
            local.runners = {}
        return local.interpreter

    def runner(self, key: str):
        """The calling thread's signature runner for ``key``."""
        interpreter = self.interpreter
        runners = self._local.runners
        if key not in runners:
            runners[key] = interpreter.get_signature_runner(key)
        return runners[key]

    def batch_size(self, key: str) -> int:
        return int(self.meta["signatures"][key].get("batch_size", 1))

    # -- tokenization and bucketing ----------------------------------------------------

    def encode(self, text_a: str, text_b: str | None = None) -> tuple[list[int], list[int] | None]:
        ids_b = self.tokenizer.encode(text_b) if text_b is not None else None
        return self.tokenizer.encode(text_a), ids_b

    def bucket_for(self, length: int) -> tuple[int, str]:
        """The smallest bucket holding ``length`` ids + special tokens (else the largest)."""
        for seq, key in self.buckets:
            if length <= seq:
                return seq, key
        return self.buckets[-1]

    def pack(self, ids_a, ids_b, seq: int) -> dict[str, list[int]]:
        from albert_tf.text.packing import pack_ids
        return pack_ids(ids_a, ids_b, seq, self.special["cls"], self.special["sep"],
                        self.special["pad"])

    def assign(self, texts_a: Sequence[str], texts_b: Sequence[str] | None = None
               ) -> tuple[list[dict[str, list[int]]], dict[str, list[int]]]:
        """Tokenizes every text and packs it into the smallest bucket that holds it.

        Returns the packed rows (input order) and, per signature key, the indices of the
        texts that run in it (input order). Id models only.
        """
        by_bucket: dict[str, list[int]] = {}
        rows: list[dict[str, list[int]]] = []
        for i, text in enumerate(texts_a):
            ids_a, ids_b = self.encode(text, texts_b[i] if texts_b is not None else None)
            needed = len(ids_a) + (len(ids_b) + 3 if ids_b is not None else 2)
            seq, key = self.bucket_for(needed)
            rows.append(self.pack(ids_a, ids_b, seq))
            by_bucket.setdefault(key, []).append(i)
        return rows, by_bucket

    # -- running -----------------------------------------------------------------------

    def run_ids(self, key: str, rows: list[dict[str, list[int]]]) -> list[dict[str, np.ndarray]]:
        """Runs packed rows through signature ``key`` in batches; one output dict per row."""
        size = self.batch_size(key)
        runner = self.runner(key)
        results = []
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            padded = chunk + [chunk[-1]] * (size - len(chunk))
            inputs = {n: np.array([r[n] for r in padded], np.int32) for n in INPUT_NAMES}
            out = runner(**inputs)
            for i in range(len(chunk)):
                results.append({k: v[i] for k, v in out.items()})
        return results

    def run_text(self, texts_a: Sequence[str], texts_b: Sequence[str] | None,
                 signature: str = "serving_default") -> list[dict[str, np.ndarray]]:
        """In-graph tokenizer models: strings in, one output dict per text."""
        size = self.batch_size(signature)
        names = self.meta.get("text_inputs") or sorted(self.meta["signatures"][signature]["inputs"])
        runner = self.runner(signature)
        results = []
        for start in range(0, len(texts_a), size):
            columns = [list(texts_a[start:start + size])]
            if texts_b is not None:
                columns.append(list(texts_b[start:start + size]))
            n = len(columns[0])
            feed = {}
            for name, column in zip(names, columns):
                column = column + [column[-1]] * (size - n)
                feed[name] = np.array([c.encode("utf-8") if isinstance(c, str) else c
                                       for c in column], dtype=object)
            out = runner(**feed)
            results += [{k: v[i] for k, v in out.items()} for i in range(n)]
        return results

    def predict(self, texts_a: Sequence[str], texts_b: Sequence[Any] | None = None) -> list[dict]:
        """Task predictions for ``texts_a`` (and ``texts_b`` for pair tasks: second texts,
        or for multiple choice a list of candidate texts per example), in input order."""
        texts_a = list(texts_a)
        if texts_b is not None and len(texts_b) != len(texts_a):
            raise ValueError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
        pair = self.task_head.runner_pair(self.meta)
        if (texts_b is not None) != pair:   # else silently dropped, or packed as one text
            raise ValueError(f"{self.path} takes {'text pairs' if pair else 'one text'} per "
                             f"example (task {self.meta.get('task')!r}); "
                             f"{'pass' if pair else 'drop'} the second texts (--text_b).")
        if not texts_a:
            return []
        examples = [(a, texts_b[i] if texts_b is not None else None)
                    for i, a in enumerate(texts_a)]
        if self.in_graph:
            return [self.task_head.decode(self, [o], None, ex)
                    for o, ex in zip(self.run_text(texts_a, texts_b), examples)]
        # Each example is one packed row, or several (multiple choice: one per choice).
        owner, flat_a, flat_b = [], [], []
        for i, (a, b) in enumerate(examples):
            for row_a, row_b in self.task_head.runner_rows(a, b):
                owner.append(i)
                flat_a.append(row_a)
                flat_b.append(row_b)
        rows, by_bucket = self.assign(flat_a, flat_b if any(
            b is not None for b in flat_b) else None)
        outs: list[dict | None] = [None] * len(rows)
        for key, indices in by_bucket.items():
            for i, out in zip(indices, self.run_ids(key, [rows[i] for i in indices])):
                outs[i] = out
        grouped: list[list[int]] = [[] for _ in texts_a]
        for r, i in enumerate(owner):
            grouped[i].append(r)
        return [self.task_head.decode(self, [outs[r] for r in group], [rows[r] for r in group],
                                      example) for group, example in zip(grouped, examples)]

    def tokenize_in_graph(self, texts_a: Sequence[str],
                          texts_b: Sequence[str] | None = None) -> list[dict[str, np.ndarray]]:
        """The ids the in-graph tokenizer produces (``tokenize`` signature)."""
        return self.run_text(list(texts_a), list(texts_b) if texts_b is not None else None,
                             signature="tokenize")


def open_runner(model: str, num_threads: int = 2, xnnpack: bool = True, flag: str = "--model"):
    """The runner of the export at ``model``, raw text in and the same answers out:
    `TFLiteRunner` for a TFLite export, `albert_tf.export.onnx_runner.OnnxClassifier` /
    `albert_tf.export.openvino_runner.OpenVinoClassifier` for an ONNX / OpenVINO export.
    Anything else (a SavedModel, a model directory, a missing path, an export whose runtime
    is not installed) is an `albert_tf.user_inputs.InputError` naming what to do."""
    from albert_tf import user_inputs
    kind = user_inputs.edge_export(model, flag)
    if kind == "tflite":
        return TFLiteRunner(model, num_threads, xnnpack)
    # Through the package's public (lazy) names: the classifiers subclass TFLiteRunner, so
    # this module does not import their modules.
    import albert_tf.export as exports
    try:
        classifier = exports.OnnxClassifier if kind == "onnx" else exports.OpenVinoClassifier
        return classifier(model, threads=num_threads)
    except ImportError as e:          # installed but broken, or shadowed
        raise user_inputs.missing_runtime(model, kind, flag, e) from None


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
        runner = open_runner(args.model, args.threads, not args.no_xnnpack)
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
