"""Finetuning inputs: GLUE tasks, custom TSV/CSV tasks, and their tf.data pipelines.

    task = load_task("rte", "/data/glue")   # a GLUE-layout directory
    # (the binaries pass $ALBERT_TF_DATA_DIR/glue; data_dir=None: tensorflow-datasets)
    task.train[0]      # Example(text_a=..., text_b=..., label="entailment")
    tok = AlbertTokenizer("official_configs/vocab/imdb_pydocs_8k.model")
    ds = classification_dataset(task.train, tok, max_seq_length=128, batch_size=32,
                                is_training=True, seed=0, label_list=task.label_list)

GLUE directories may be in the standard layout (``CoLA/train.tsv`` without a header,
``MNLI/dev_matched.tsv`` ...) or with a header row (``sentence<TAB>label``): columns are found
by header name first, by the standard positions otherwise. Rows with the wrong number of
fields or an unknown label are skipped and counted in ``TaskData.skipped``.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import math
import os
import socket
import sys
from typing import Any, Sequence

import numpy as np

log = logging.getLogger(__name__)


class TaskDataError(ValueError):
    """Missing or unusable task data."""


@dataclasses.dataclass(frozen=True)
class Example:
    text_a: str
    text_b: str | None = None
    label: Any = None


@dataclasses.dataclass
class TaskData:
    name: str
    train: list[Example]
    dev: list[Example]
    test: list[Example]
    label_list: list[str] | None
    is_regression: bool
    metric: str
    skipped: dict = dataclasses.field(default_factory=dict)
    extra_splits: dict = dataclasses.field(default_factory=dict)

    @property
    def num_classes(self) -> int:
        return 1 if self.is_regression else len(self.label_list)


@dataclasses.dataclass(frozen=True)
class _GlueSpec:
    directory: str
    text_columns: tuple[str, ...]          # header names
    label_column: str | None
    positions: tuple[int, ...]             # (text_a, [text_b,] label) without a header
    label_list: tuple[str, ...] | None
    metric: str
    dev_files: tuple[str, ...] = ("dev.tsv",)
    test_files: tuple[str, ...] = ("test.tsv",)
    tfds_name: str = ""
    tfds_text: tuple[str, ...] = ()
    tfds_dev: str = "validation"
    tfds_test: str = "test"
    header_aliases: tuple[tuple[str, ...], ...] = ()


GLUE_TASKS: dict[str, _GlueSpec] = {
    "cola": _GlueSpec("CoLA", ("sentence",), "label", (3, 1), ("0", "1"), "matthews",
                      tfds_name="glue/cola", tfds_text=("sentence",)),
    "sst2": _GlueSpec("SST-2", ("sentence",), "label", (0, 1), ("0", "1"), "accuracy",
                      tfds_name="glue/sst2", tfds_text=("sentence",)),
    "mrpc": _GlueSpec("MRPC", ("#1 String", "#2 String"), "Quality", (3, 4, 0), ("0", "1"), "f1",
                      tfds_name="glue/mrpc", tfds_text=("sentence1", "sentence2")),
    "stsb": _GlueSpec("STS-B", ("sentence1", "sentence2"), "score", (7, 8, 9), None,
                      "pearson_spearman", tfds_name="glue/stsb",
                      tfds_text=("sentence1", "sentence2")),
    "qqp": _GlueSpec("QQP", ("question1", "question2"), "is_duplicate", (3, 4, 5), ("0", "1"),
                     "f1", tfds_name="glue/qqp", tfds_text=("question1", "question2")),
    "mnli": _GlueSpec("MNLI", ("sentence1", "sentence2"), "gold_label", (8, 9, -1),
                      ("contradiction", "entailment", "neutral"), "accuracy",
                      dev_files=("dev_matched.tsv", "dev.tsv"),
                      test_files=("test_matched.tsv", "test.tsv"),
                      tfds_name="glue/mnli", tfds_text=("premise", "hypothesis"),
                      tfds_dev="validation_matched", tfds_test="test_matched"),
    "qnli": _GlueSpec("QNLI", ("question", "sentence"), "label", (1, 2, 3),
                      ("entailment", "not_entailment"), "accuracy",
                      tfds_name="glue/qnli", tfds_text=("question", "sentence")),
    "rte": _GlueSpec("RTE", ("sentence1", "sentence2"), "label", (1, 2, 3),
                     ("entailment", "not_entailment"), "accuracy",
                     tfds_name="glue/rte", tfds_text=("sentence1", "sentence2")),
    "wnli": _GlueSpec("WNLI", ("sentence1", "sentence2"), "label", (1, 2, 3), ("0", "1"),
                      "accuracy", tfds_name="glue/wnli", tfds_text=("sentence1", "sentence2")),
}
_ALIASES = {"sst-2": "sst2", "sts-b": "stsb", "mnli-m": "mnli", "mnli_matched": "mnli"}


def task_names() -> list[str]:
    return sorted(GLUE_TASKS)


# Besides GLUE, the finetuning binary reads SentEval tasks (<data_dir>/extra/NAME_train.tsv,
# ``label<TAB>sentence``), SQuAD and custom TSV/CSV tasks (`albert_tf.training.tasks`).
SENTEVAL_TASKS = ("mr", "subj", "cr", "mpqa")
SQUAD_TASKS = ("squad", "squad1", "squad2", "squad_v2")
CUSTOM_TASK_SYNTAX = ("--task=NAME --params_override=task.train_file=train.tsv,"
                      "task.dev_file=dev.tsv,task.text_a_column=sentence,task.label_column=label")


def known_tasks(squad: bool = True, custom: bool = True) -> str:
    """Every task name ``--task`` takes, and how to define a custom one (one line)."""
    parts = [f"GLUE (DATA_DIR/glue/<Task>/): {', '.join(task_names())}",
             f"SentEval (DATA_DIR/extra/): {', '.join(sorted(SENTEVAL_TASKS))}"]
    if squad:
        parts.append("SQuAD (its JSON files in DATA_DIR): squad")
    if custom:
        parts.append(f"a custom TSV/CSV task: {CUSTOM_TASK_SYNTAX} (paths relative to "
                     "--data_dir or absolute; columns by header name or 0-based index; add "
                     "task.text_b_column=... for sentence pairs, task.is_regression=true for "
                     "scores)")
    return "; ".join(parts)


def glue_task_key(name: str) -> str | None:
    """The GLUE task ``name`` stands for (``SST-2`` -> ``sst2``), or None."""
    key = _ALIASES.get(name.lower(), name.lower())
    return key if key in GLUE_TASKS else None


# ----------------------------------------------------------------------------------------
# Reading delimited files


def _read_rows(path: str, delimiter: str) -> list[list[str]]:
    csv.field_size_limit(sys.maxsize)
    # utf-8-sig: a byte-order mark (Excel, Notepad) is not part of the first header name.
    with open(path, encoding="utf-8-sig", errors="strict", newline="") as f:
        try:
            if delimiter == "\t":
                # GLUE TSVs use no quoting at all (quotes are part of the text).
                return [line.rstrip("\r\n").split("\t") for line in f if line.strip()]
            # strict: an unterminated quote is an error, not the rest of the file in one field
            reader = csv.reader(f, delimiter=delimiter, strict=True)
            try:
                return [row for row in reader if row]
            except csv.Error as e:
                raise TaskDataError(f"{path}:{reader.line_num}: malformed CSV ({e}); quote "
                                    "fields with the delimiter, quotes or newlines as "
                                    "\"...\" and double inner quotes") from None
        except UnicodeDecodeError as e:
            raise TaskDataError(f"{path} is not UTF-8 text: {e}") from None


def _delimiter_for(path: str, delimiter: str | None) -> str:
    if delimiter:
        return delimiter
    return "," if path.lower().endswith(".csv") else "\t"


def _column_index(header: list[str] | None, column: str | int, path: str) -> int:
    if isinstance(column, int):
        return column
    if header is None:
        raise TaskDataError(f"{path}: column {column!r} given by name but the file has no header")
    if column not in header:
        raise TaskDataError(f"{path}: no column {column!r} in header {header}")
    return header.index(column)


def read_examples(path: str, text_columns: Sequence[str | int], label_column: str | int | None,
                  has_header: bool, delimiter: str | None = None, is_regression: bool = False,
                  label_list: Sequence[str] | None = None,
                  skipped: dict | None = None) -> list[Example]:
    """Examples from one delimited file; malformed rows are skipped and counted."""
    if not os.path.isfile(path):
        raise TaskDataError(f"task data file not found: {path}")
    rows = _read_rows(path, _delimiter_for(path, delimiter))
    header = None
    if has_header and rows:
        header, rows = [h.strip() for h in rows[0]], rows[1:]
    cols = [_column_index(header, c, path) for c in text_columns]
    label_idx = _column_index(header, label_column, path) if label_column is not None else None
    width = len(header) if header is not None else None
    needed = max([abs(c) + (1 if c >= 0 else 0) for c in cols]
                 + ([abs(label_idx) + (1 if label_idx >= 0 else 0)] if label_idx is not None else []))
    labels = set(label_list) if label_list else None
    out, bad = [], 0
    for row in rows:
        if (width is not None and len(row) != width) or len(row) < needed:
            bad += 1
            continue
        texts = [row[c].strip() for c in cols]
        label = None
        if label_idx is not None:
            raw = row[label_idx].strip()
            if is_regression:
                try:
                    label = float(raw)
                except ValueError:
                    label = math.nan
                if not math.isfinite(label):   # "nan"/"inf" scores are malformed too
                    bad += 1
                    continue
            else:
                if labels is not None and raw not in labels:
                    bad += 1
                    continue
                label = raw
        out.append(Example(texts[0], texts[1] if len(texts) > 1 else None, label))
    if bad:
        log.warning("%s: skipped %d malformed rows", path, bad)
    if skipped is not None:
        skipped[os.path.basename(path)] = skipped.get(os.path.basename(path), 0) + bad
    return out


def _glue_file(spec: _GlueSpec, path: str, skipped: dict, labeled: bool | None = None):
    """Reads one GLUE split by header names, else by the standard positions."""
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        first = f.readline().rstrip("\r\n").split("\t")
    names = [c.strip() for c in first]
    if all(c in names for c in spec.text_columns):
        label = spec.label_column if spec.label_column in names else None
        return read_examples(path, spec.text_columns, label, True,
                             is_regression=spec.label_list is None,
                             label_list=spec.label_list, skipped=skipped)
    # Standard headerless layout (CoLA train/dev) or an index header (test files).
    has_header = names[:1] in (["index"], ["id"])
    if has_header:
        text_cols = ["sentence"] if "sentence" in names else [1]
        return read_examples(path, text_cols, None, True, skipped=skipped)
    *text_pos, label_pos = spec.positions
    return read_examples(path, text_pos, label_pos if labeled is not False else None, False,
                         is_regression=spec.label_list is None, label_list=spec.label_list,
                         skipped=skipped)


def _first_existing(directory: str, names: Sequence[str]) -> str | None:
    for n in names:
        p = os.path.join(directory, n)
        if os.path.isfile(p):
            return p
    return None


def _task_dir_candidates(root: str, spec: _GlueSpec) -> list[str]:
    candidates = [os.path.join(root, spec.directory), root]
    for name in os.listdir(root) if os.path.isdir(root) else []:
        if name.lower().replace("-", "") == spec.directory.lower().replace("-", ""):
            candidates.insert(1, os.path.join(root, name))
    return candidates


def _find_task_dir(data_dir: str, spec: _GlueSpec) -> str:
    """The directory with the task's ``train.tsv``: ``data_dir`` in the GLUE layout
    (``<Task>/train.tsv``), or the project's data root (``glue/<Task>/train.tsv``)."""
    for root in (data_dir, os.path.join(data_dir, "glue")):
        for candidate in _task_dir_candidates(root, spec):
            if os.path.isfile(os.path.join(candidate, "train.tsv")):
                return candidate
    raise TaskDataError(f"no {spec.directory}/train.tsv under {data_dir} (expected the GLUE "
                        "layout: DATA_DIR/<Task>/{train,dev,test}.tsv, or DATA_DIR/glue/<Task>/)")


def find_glue_task_dir(data_dir: str, name: str) -> str | None:
    """Where GLUE task ``name``'s files are under ``data_dir`` (a GLUE directory or the
    project's data root, as `load_task` reads them), or None (also for a non-GLUE name)."""
    key = glue_task_key(name)
    if key is None:
        return None
    try:
        return _find_task_dir(data_dir, GLUE_TASKS[key])
    except TaskDataError:
        return None


def expected_glue_file(data_dir: str, name: str, split: str = "train") -> str:
    """The path an error names when GLUE task ``name`` is missing from the data root."""
    return os.path.join(data_dir, "glue", GLUE_TASKS[glue_task_key(name)].directory,
                        f"{split}.tsv")


def load_task(name: str, data_dir: str | None = None) -> TaskData:
    """A GLUE task from ``data_dir`` (a GLUE-layout directory, or the project's data root
    with ``glue/`` in it), or from tensorflow-datasets if None."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in GLUE_TASKS:
        raise TaskDataError(f"unknown task {name!r}; known: {', '.join(task_names())} "
                            "(use load_tsv_task for custom TSV/CSV data)")
    spec = GLUE_TASKS[key]
    if data_dir is None:
        return _load_tfds(key, spec)
    if not os.path.isdir(data_dir):
        raise TaskDataError(f"GLUE data directory not found: {data_dir}")
    task_dir = _find_task_dir(data_dir, spec)
    skipped: dict = {}
    train = _glue_file(spec, os.path.join(task_dir, "train.tsv"), skipped)
    dev_path = _first_existing(task_dir, spec.dev_files)
    dev = _glue_file(spec, dev_path, skipped) if dev_path else []
    test_path = _first_existing(task_dir, spec.test_files)
    test = _glue_file(spec, test_path, skipped) if test_path else []
    extra = {}
    if key == "mnli":
        mm = _first_existing(task_dir, ("dev_mismatched.tsv",))
        if mm:
            extra["dev_mismatched"] = _glue_file(spec, mm, skipped)
    return TaskData(key, train, dev, test, list(spec.label_list) if spec.label_list else None,
                    spec.label_list is None, spec.metric, skipped, extra)


def load_tsv_task(train_file: str, dev_file: str | None = None, test_file: str | None = None,
                  text_a_column: str | int = "sentence", text_b_column: str | int | None = None,
                  label_column: str | int | None = "label", has_header: bool = True,
                  delimiter: str | None = None, is_regression: bool = False,
                  label_list: Sequence[str] | None = None, metric: str | None = None,
                  name: str = "custom") -> TaskData:
    """Any single-sentence or sentence-pair classification/regression task in TSV/CSV files.

    Columns are header names (``has_header=True``) or 0-based indices. ``label_list``
    defaults to the sorted labels found in the train file. A test file without the label
    column yields unlabeled examples."""
    text_cols = [text_a_column] + ([text_b_column] if text_b_column is not None else [])
    skipped: dict = {}
    train = read_examples(train_file, text_cols, label_column, has_header, delimiter,
                          is_regression, label_list, skipped)
    if not is_regression and label_list is None:
        label_list = sorted({e.label for e in train if e.label is not None})
    splits = []
    for path in (dev_file, test_file):
        if path is None:
            splits.append([])
            continue
        label = label_column
        if path is test_file and has_header and isinstance(label_column, str):
            with open(path, encoding="utf-8-sig", errors="replace") as f:
                header = next(csv.reader([f.readline()], delimiter=_delimiter_for(path, delimiter)), [])
            if label_column not in [h.strip() for h in header]:
                label = None
        splits.append(read_examples(path, text_cols, label, has_header, delimiter,
                                    is_regression, label_list, skipped))
    if metric is None:
        metric = "pearson_spearman" if is_regression else "accuracy"
    return TaskData(name, train, splits[0], splits[1],
                    None if is_regression else list(label_list), is_regression, metric, skipped)


# ----------------------------------------------------------------------------------------
# tensorflow-datasets


_DOWNLOAD_HOSTS = ("dl.fbaipublicfiles.com", "firebasestorage.googleapis.com")


def _online(timeout: float = 3.0) -> bool:
    for host in _DOWNLOAD_HOSTS:
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                return True
        except OSError:
            continue
    return False


def _load_tfds(key: str, spec: _GlueSpec) -> TaskData:
    try:
        import tensorflow_datasets as tfds
    except ImportError as e:  # pragma: no cover
        raise TaskDataError("tensorflow-datasets is not installed; pass data_dir") from e
    builder = tfds.builder(spec.tfds_name)
    if not builder.is_prepared():
        if not _online():
            raise TaskDataError(
                f"GLUE task {key!r}: no data_dir given and tensorflow-datasets has no prepared "
                f"copy of {spec.tfds_name} in {builder.data_dir} and cannot download it "
                "(offline). Pass data_dir=<directory in the GLUE layout>, e.g. "
                "$ALBERT_TF_DATA_DIR/glue.")
        builder.download_and_prepare()
    names = None
    label_feature = builder.info.features["label"]
    if hasattr(label_feature, "names"):
        names = label_feature.names
    text_a, *rest = spec.tfds_text
    text_b = rest[0] if rest else None

    def convert(split: str) -> list[Example]:
        out = []
        for row in tfds.as_numpy(builder.as_dataset(split=split)):
            label = row["label"]
            if spec.label_list is None:
                lab = float(label)
            elif int(label) < 0:
                lab = None
            elif spec.label_list == ("0", "1"):
                lab = str(int(label))
            else:
                lab = names[int(label)]
            out.append(Example(row[text_a].decode("utf-8"),
                               row[text_b].decode("utf-8") if text_b else None, lab))
        return out

    extra = {}
    if key == "mnli":
        extra["dev_mismatched"] = convert("validation_mismatched")
    return TaskData(key, convert("train"), convert(spec.tfds_dev), convert(spec.tfds_test),
                    list(spec.label_list) if spec.label_list else None,
                    spec.label_list is None, spec.metric, {}, extra)


# ----------------------------------------------------------------------------------------
# tf.data


def encode_examples(examples: Sequence[Example], tokenizer, max_seq_length: int,
                    label_list: Sequence[str] | None = None, is_regression: bool = False):
    """(word_ids, type_ids, labels): unpadded packed ids per example (Python tokenizer)."""
    index = {str(l): i for i, l in enumerate(label_list)} if label_list else None
    words, types, labels = [], [], []
    for ex in examples:
        packed = tokenizer.pack(ex.text_a, ex.text_b, max_seq_length, pad=False)
        words.append(packed["input_word_ids"])
        types.append(packed["input_type_ids"])
        if is_regression:
            labels.append(float("nan") if ex.label is None else float(ex.label))
        elif ex.label is None:
            labels.append(-1)
        else:
            key = str(ex.label)
            if index is None:
                raise TaskDataError("label_list is required for classification labels")
            if key not in index:
                raise TaskDataError(f"label {ex.label!r} is not in label_list {list(label_list)}")
            labels.append(index[key])
    return words, types, labels


def classification_dataset(examples: Sequence[Example], tokenizer, max_seq_length: int,
                           batch_size: int, is_training: bool, seed: int | None = None,
                           input_context=None, label_list: Sequence[str] | None = None,
                           is_regression: bool = False, bucket_window: int = 50,
                           drop_remainder: bool | None = None):
    """(features, labels) batches; features: int32 ``[B, S_batch]`` with ``S_batch`` the
    longest example of the batch (dynamic padding, at most ``max_seq_length``).

    Training: examples are shuffled (deterministic under ``seed``, a new order each epoch),
    taken in windows of ``bucket_window * batch_size``, sorted by length inside the window,
    cut into batches, and the batches shuffled: batches of similar length. Evaluation keeps
    the input order. ``batch_size`` is global: with ``input_context`` each pipeline reads
    every n-th example and makes per-replica batches. Labels: int32 index into
    ``label_list`` (-1 when missing) or float32 for regression (NaN when missing)."""
    from albert_tf.backend import tf
    if not examples:
        raise TaskDataError("no examples")
    words, types, labels = encode_examples(examples, tokenizer, max_seq_length, label_list,
                                           is_regression)
    lengths = np.array([len(w) for w in words], np.int64)
    word_ids = tf.RaggedTensor.from_row_lengths(
        np.concatenate([np.asarray(w, np.int32) for w in words]), lengths)
    type_ids = tf.RaggedTensor.from_row_lengths(
        np.concatenate([np.asarray(t, np.int32) for t in types]), lengths)
    label_t = tf.constant(labels, tf.float32 if is_regression else tf.int32)
    ds = tf.data.Dataset.from_tensor_slices((word_ids, type_ids, label_t))
    per_replica = batch_size
    if input_context is not None:
        per_replica = input_context.get_per_replica_batch_size(batch_size)
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if drop_remainder is None:
        drop_remainder = False

    ds = ds.map(lambda w, t, y: (w, t, tf.ones_like(w), y))

    def pad_batch(d):
        return d.padded_batch(per_replica, padded_shapes=([None], [None], [None], []),
                              padding_values=(np.int32(tokenizer.pad_id), np.int32(0),
                                              np.int32(0), tf.constant(0, label_t.dtype)),
                              drop_remainder=drop_remainder)

    if is_training:
        ds = ds.shuffle(len(words), seed=seed, reshuffle_each_iteration=True)
        window = per_replica * max(1, bucket_window)

        def sort_window(w, t, m, y):
            order = tf.argsort(w.row_lengths(), stable=True)
            return (tf.gather(w, order), tf.gather(t, order), tf.gather(m, order),
                    tf.gather(y, order))

        def dense(*xs):
            return tuple(x.flat_values if isinstance(x, tf.RaggedTensor) else x for x in xs)

        ds = ds.ragged_batch(window).map(sort_window).unbatch().map(dense)
        ds = pad_batch(ds)
        ds = ds.shuffle(max(1, bucket_window), seed=None if seed is None else seed + 1,
                        reshuffle_each_iteration=True)
    else:
        ds = pad_batch(ds)
    ds = ds.map(lambda w, t, m, y: ({"input_word_ids": w, "input_mask": m,
                                     "input_type_ids": t}, y))
    options = tf.data.Options()
    options.deterministic = True
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)

