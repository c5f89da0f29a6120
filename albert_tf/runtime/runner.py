"""The runtime-agnostic part of the export runners: raw text in, task answers out.

`ExportRunner` reads an export's ``metadata.json`` (head, labels, tokenizer), preprocesses
with `albert_tf.runtime.preprocessor.Preprocessor` (tokenize, pack into length buckets,
batch), runs each bucket and decodes the outputs in input order with the export's task head
(`albert_tf.heads`). A subclass supplies only what runs the model: ``runner(key)`` (a
call of signature / bucket ``key``: named input arrays in, named output arrays out) and
``batch_size(key)``. The subclasses:

- `albert_tf.runtime.tflite.TFLiteRunner`: LiteRT (``.tflite``), id or in-graph
  tokenizer models; the ``albert-tflite-run`` CLI (`albert_tflite.runner`) runs it.
- `IdExportRunner` (here): the server exports (token ids in, any ``[batch, seq]``) with
  their bucket and batch-size choices; `albert_tf.runtime.openvino.OpenVinoClassifier`
  and `albert_tf.runtime.onnx.OnnxClassifier` subclass it.

Nothing here imports TensorFlow or a runtime.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

import albert_tf.heads.registry as heads
from albert_tf.export.metadata import check_vocabulary, read_metadata
from albert_tf.export.signatures import bucket_lengths, signature_key
from albert_tf.runtime.preprocessor import INPUT_NAMES, Preprocessor  # noqa: F401  (public)

SIGNATURE = "serving_default"
# Buckets of a dynamic server export (those up to the model's max_seq_length, then it): few
# shapes, as a runtime may plan or compile each one once.
BUCKETS = (16, 32, 64, 128, 256, 512)


def default_buckets(max_seq_length: int) -> list[int]:
    """`BUCKETS` below ``max_seq_length``, then ``max_seq_length``."""
    return [b for b in BUCKETS if b < max_seq_length] + [int(max_seq_length)]


def is_blank(text: Any) -> bool:
    """Whether ``text`` (str, UTF-8 bytes or None) is empty or only whitespace (`str.strip`'s
    whitespace: what ``--text`` refuses, `albert_tf.user_inputs.text`, and the SavedModel's
    signatures, `albert_tf.export.saved_model.BLANK_TEXT`)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return text is None or not str(text).strip()


def refuse_blank(texts_a: Sequence[Any], texts_b: Sequence[Any] | None = None) -> None:
    """A ValueError naming the first empty or whitespace-only text (``texts_a[i]``,
    ``texts_b[i]`` or, for multiple choice, ``texts_b[i][j]``): a blank text has no answer."""
    for name, texts in (("texts_a", texts_a), ("texts_b", texts_b or ())):
        for i, text in enumerate(texts):
            items = list(enumerate(text)) if isinstance(text, (list, tuple)) else [(None, text)]
            for j, item in items:
                if is_blank(item):
                    where = f"{name}[{i}]" + (f"[{j}]" if j is not None else "")
                    what = "empty" if item is None or not len(item) else "only whitespace"
                    raise ValueError(f"{where} is {what}: a blank text has no answer; remove "
                                     "it or give it a text.")


def refuse_plain_strings(texts_a: Any, texts_b: Any = None) -> None:
    """A TypeError when ``texts_a`` or ``texts_b`` is one string (or bytes) rather than a
    list of texts: iterated, it would be one text per character."""
    for name, texts in (("texts_a", texts_a), ("texts_b", texts_b)):
        if isinstance(texts, (str, bytes)):
            shown = repr(texts[:40])
            raise TypeError(f"{name} is one string ({shown}), not a list of texts: pass "
                            f"[{shown}] (a string would be read as one text per character).")


class ExportRunner:
    """Preprocess, run per bucket and decode with one exported model (see the module
    docstring). Subclasses set ``meta``, ``path``, ``directory``, ``buckets`` (the
    ``(seq_length, key)`` id signatures) and ``_local`` (a ``threading.local``), then call
    `_init_text`; they define `runner` and `batch_size`."""

    meta: dict[str, Any]
    path: str
    directory: str
    buckets: list[tuple[int, str]]

    def _init_text(self) -> None:
        """Head, labels and the preprocessor from ``self.meta`` (``self.buckets`` set
        before). In-graph tokenizer models have no preprocessor (strings go in)."""
        self.head = self.meta["head"]
        self.task_head = heads.get(self.head)   # decoding: `albert_tf.heads`
        self.labels = self.meta.get("labels")
        tok = self.meta["tokenizer"]
        self.in_graph = bool(tok["in_graph"])
        self.special = tok["special_ids"]
        self.preprocessor: Preprocessor | None = None
        if not self.in_graph:
            if not self.buckets:
                raise ValueError(f"{self.path}: no [batch, seq] id signature in metadata.json")
            check_vocabulary(self.meta, self.directory)   # the file the export was made with
            self.preprocessor = Preprocessor.from_metadata(self.meta, self.directory,
                                                           self.buckets)

    @property
    def tokenizer(self):
        """The Python tokenizer of an id model (None for an in-graph tokenizer model)."""
        return self.preprocessor.tokenizer if self.preprocessor is not None else None

    # -- what a runtime supplies -------------------------------------------------------

    def runner(self, key: str) -> Callable[..., dict[str, np.ndarray]]:
        """The calling thread's call of signature / bucket ``key``."""
        raise NotImplementedError

    def batch_size(self, key: str) -> int:
        raise NotImplementedError

    # -- preprocessing (`albert_tf.runtime.preprocessor.Preprocessor`) ---------------------

    def _text_preprocessor(self) -> Preprocessor:
        if self.preprocessor is None:
            raise ValueError(f"{self.path} tokenizes in the graph: no Python preprocessing")
        return self.preprocessor

    def encode(self, text_a: str, text_b: str | None = None) -> tuple[list[int], list[int] | None]:
        return self._text_preprocessor().encode(text_a, text_b)

    def bucket_for(self, length: int) -> tuple[int, str]:
        """The smallest bucket holding ``length`` ids + special tokens (else the largest)."""
        return self._text_preprocessor().bucket_for(length)

    def pack(self, ids_a, ids_b, seq: int) -> dict[str, list[int]]:
        return self._text_preprocessor().pack(ids_a, ids_b, seq)

    def assign(self, texts_a: Sequence[str], texts_b: Sequence[str] | None = None
               ) -> tuple[list[dict[str, list[int]]], dict[str, list[int]]]:
        """Tokenizes every text and packs it into the smallest bucket that holds it
        (`Preprocessor.assign`). Id models only."""
        return self._text_preprocessor().assign(texts_a, texts_b)

    # -- running -----------------------------------------------------------------------

    def run_ids(self, key: str, rows: list[dict[str, list[int]]]) -> list[dict[str, np.ndarray]]:
        """Runs packed rows through signature ``key`` in batches; one output dict per row."""
        runner = self.runner(key)
        results = []
        for inputs, n in Preprocessor.batches(rows, self.batch_size(key)):
            out = runner(**inputs)
            for i in range(n):
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
        or for multiple choice a list of candidate texts per example), in input order. An
        empty or whitespace-only text is a ValueError naming its index (`refuse_blank`);
        a plain string instead of a list of texts is a TypeError (it would be read as a list
        of characters)."""
        refuse_plain_strings(texts_a, texts_b)
        texts_a = list(texts_a)
        if texts_b is not None and len(texts_b) != len(texts_a):
            raise ValueError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
        pair = self.task_head.runner_pair(self.meta)
        if (texts_b is not None) != pair:   # else silently dropped, or packed as one text
            raise ValueError(f"{self.path} takes {'text pairs' if pair else 'one text'} per "
                             f"example (task {self.meta.get('task')!r}); "
                             f"{'pass' if pair else 'drop'} the second texts (--text_b).")
        refuse_blank(texts_a, texts_b)
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
        refuse_plain_strings(texts_a, texts_b)
        return self.run_text(list(texts_a), list(texts_b) if texts_b is not None else None,
                             signature="tokenize")


class IdExportRunner(ExportRunner):
    """The shared part of the server-export runners (OpenVINO IR, ONNX): reads the export's
    metadata, fixes the buckets and the batch size, and leaves `runner` to the subclass.

    A static export has its one ``[batch, seq]``; a dynamic one runs ``buckets`` (default
    `default_buckets` of the export's ``max_seq_length``) at ``batch_size`` rows (default 8).
    """

    export_format = ""          # metadata ``format`` of the export the subclass runs

    def __init__(self, export_dir: str, threads: int, buckets: Sequence[int] | None,
                 batch_size: int | None):
        directory = export_dir if os.path.isdir(export_dir) else os.path.dirname(
            os.path.abspath(export_dir))
        self.meta = read_metadata(directory, self.export_format)
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, self.meta["model_file"])
        self.num_threads, self.xnnpack = threads, False
        signature = self.meta["signatures"][SIGNATURE]
        self.input_names = list(signature["inputs"])
        self.output_names = list(signature["outputs"])
        static_seq, static_batch = signature.get("seq_length"), signature.get("batch_size")
        if static_seq:
            if buckets and list(buckets) != [static_seq]:
                raise ValueError(f"{self.path} has static sequence length {static_seq}; "
                                 f"buckets {list(buckets)} need a dynamic export.")
            lengths = [static_seq]
        else:
            lengths = bucket_lengths(buckets or default_buckets(self.meta["max_seq_length"]))
            if lengths[0] < 3:
                raise ValueError(f"buckets {lengths}: each must be >= 3 ([CLS] x [SEP]).")
        if static_batch and batch_size and batch_size != static_batch:
            raise ValueError(f"{self.path} has static batch size {static_batch}; "
                             f"batch_size={batch_size} needs a dynamic export.")
        self._batch = int(static_batch or batch_size or 8)
        self.buckets = [(seq, signature_key(seq)) for seq in lengths]
        self._local = threading.local()   # per thread: .requests / .sessions
        self._init_text()

    @property
    def interpreter(self):
        raise AttributeError(f"a {self.export_format} export has no LiteRT interpreter")

    def batch_size(self, key: str) -> int:
        return self._batch

    def bucket_length(self, key: str) -> int:
        return dict((k, s) for s, k in self.buckets)[key]


def open_runner(model: str, num_threads: int = 2, xnnpack: bool | None = None,
                flag: str = "--model"):
    """The runner of the export at ``model``, raw text in and the same answers out: its
    format's runner (`albert_tf.export.formats`: ``TFLiteRunner``, ``OnnxClassifier``,
    ``OpenVinoClassifier``). Anything else (a SavedModel, a model directory, a missing
    path, an export whose runtime is not installed) is an `albert_tf.user_inputs.InputError`
    naming what to do. ``xnnpack``: TFLite's delegate (the other runtimes have none; None: the
    export's choice, `albert_tf.runtime.tflite.uses_xnnpack`)."""
    import importlib

    from albert_tf import user_inputs
    from albert_tf.export import formats
    kind = user_inputs.edge_export(model, flag)     # a format name
    export_format = formats.get(kind)
    module, name = export_format.runner.split(":")
    if not export_format.runtime:     # the base install's runtime (LiteRT)
        return getattr(importlib.import_module(module), name)(model, num_threads, xnnpack)
    try:
        return getattr(importlib.import_module(module), name)(model, threads=num_threads)
    except ImportError as e:          # installed but broken, or shadowed
        raise user_inputs.missing_runtime(model, kind, flag, e) from None
