"""Finetuning inputs: GLUE tasks, custom TSV/CSV tasks, and their tf.data pipelines.

    task = load_task("rte", "/data/glue")   # a GLUE-layout directory
    # (the binaries pass $ALBERT_TF_DATA_DIR/glue; data_dir=None: tensorflow-datasets)
    task.train[0]      # Example(text_a=..., text_b=..., label="entailment")
    tok = load_tokenizer("official_configs/vocab/imdb_pydocs_8k.model")   # or a vocab.txt
    ds = classification_dataset(task.train, tok, max_seq_length=128, batch_size=32,
                                is_training=True, seed=0, label_list=task.label_list)

GLUE directories may be in the standard layout (``CoLA/train.tsv`` without a header,
``MNLI/dev_matched.tsv`` ...) or with a header row (``sentence<TAB>label``): columns are found
by header name first, by the standard positions otherwise. Rows with the wrong number of
fields or an unknown label are skipped and counted in ``TaskData.skipped``; in a custom
task's files (`load_tsv_task`) each is an error naming the file and the line.
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

from albert_tf.lazy import lazy_exports

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


def _custom_heads():
    """The heads trained on a custom file of their own format (`albert_tf.heads.registry.
    custom_heads`)."""
    import albert_tf.heads.registry as heads
    return heads.custom_heads()


def known_tasks(squad: bool = True, custom: bool = True) -> str:
    """Every task name ``--task`` takes, and how to define a custom one (one line)."""
    parts = [f"GLUE (DATA_DIR/glue/<Task>/): {', '.join(task_names())}",
             f"SentEval (DATA_DIR/extra/): {', '.join(sorted(SENTEVAL_TASKS))}"]
    if squad:
        parts.append("SQuAD (its JSON files in DATA_DIR): squad")
    if custom:
        parts += [head.custom_syntax for head in _custom_heads()]   # their file formats
        parts.append(f"a custom TSV/CSV task: {CUSTOM_TASK_SYNTAX} (paths relative to "
                     "--data_dir or absolute; columns by header name or 0-based index; add "
                     "task.text_b_column=... for sentence pairs, task.is_regression=true for "
                     "scores)")
    return "; ".join(parts)


def glue_task_key(name: str) -> str | None:
    """The GLUE task ``name`` stands for (``SST-2`` -> ``sst2``), or None."""
    key = _ALIASES.get(name.lower(), name.lower())
    return key if key in GLUE_TASKS else None


def task_key(name: str) -> str:
    """The task ``name`` stands for: GLUE's key (``SST-2`` -> ``sst2``), else lower case;
    two names of one task have one key (how recorded and given task names compare)."""
    return glue_task_key(name) or name.lower()


# ----------------------------------------------------------------------------------------
# Reading delimited files


def _read_rows(path: str, delimiter: str) -> list[list[str]]:
    return [row for _, row in _read_numbered_rows(path, delimiter)]


def _read_numbered_rows(path: str, delimiter: str) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-blank row (a quoted CSV record spanning lines:
    the number of its last line)."""
    csv.field_size_limit(sys.maxsize)
    # utf-8-sig: a byte-order mark (Excel, Notepad) is not part of the first header name.
    with open(path, encoding="utf-8-sig", errors="strict", newline="") as f:
        try:
            if delimiter == "\t":
                # GLUE TSVs use no quoting at all (quotes are part of the text).
                return [(n, line.rstrip("\r\n").split("\t"))
                        for n, line in enumerate(f, 1) if line.strip()]
            # strict: an unterminated quote is an error, not the rest of the file in one field
            reader = csv.reader(f, delimiter=delimiter, strict=True)
            try:
                return [(reader.line_num, row) for row in reader if row]
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
                  skipped: dict | None = None, unknown_labels: str = "skip",
                  labels_from: str = "") -> list[Example]:
    """Examples from one delimited file. Malformed rows (the wrong number of fields, a score
    that is no finite number) and labels not in ``label_list`` are skipped and counted
    (``unknown_labels="skip"``: GLUE's files), or each is a `TaskDataError` naming the
    file, the line and what is wrong (``"error"``: a custom task's files, where a dropped
    row is a silently wrong score, or a prediction file out of step with its input;
    ``labels_from`` says where the known labels come from)."""
    if not os.path.isfile(path):
        raise TaskDataError(f"task data file not found: {path}")
    numbered = _read_numbered_rows(path, _delimiter_for(path, delimiter))
    rows = [row for _, row in numbered]
    line_of = [n for n, _ in numbered]
    header = None
    if has_header and rows:
        header, rows, line_of = [h.strip() for h in rows[0]], rows[1:], line_of[1:]
    cols = [_column_index(header, c, path) for c in text_columns]
    label_idx = _column_index(header, label_column, path) if label_column is not None else None
    width = len(header) if header is not None else None
    needed = max([abs(c) + (1 if c >= 0 else 0) for c in cols]
                 + ([abs(label_idx) + (1 if label_idx >= 0 else 0)] if label_idx is not None else []))
    labels = set(label_list) if label_list else None
    out, bad = [], 0
    strict = unknown_labels == "error"
    for line, row in zip(line_of, rows):
        if (width is not None and len(row) != width) or len(row) < needed:
            if strict:
                sep = "tab" if _delimiter_for(path, delimiter) == "\t" else repr(
                    _delimiter_for(path, delimiter))
                raise TaskDataError(
                    f"{path}, line {line}: {len(row)} {sep}-separated fields where "
                    + (f"the header has {width} (a {sep} inside a text?)" if width is not None
                       else f"the columns need {needed}")
                    + "; fix the row (a custom task's rows are all read, none is dropped).")
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
                    if strict:
                        raise TaskDataError(
                            f"{path}, line {line}: score {raw!r} is not a finite number "
                            "(task.is_regression); fix the row (a custom task's rows are all "
                            "read, none is dropped).")
                    bad += 1
                    continue
            else:
                if labels is not None and raw not in labels:
                    if unknown_labels == "error":
                        raise TaskDataError(
                            f"{path}, line {line}: label {raw!r} is not one of the task's "
                            f"labels ({', '.join(map(str, label_list))}{labels_from}), so "
                            "no model of this task can answer it: fix the file, or to train "
                            "on every label list them all in task.label_list=[...].")
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


def _folder_key(name: str) -> str:
    """A folder name as compared with a task's directory: ``SST-2``, ``sst2``, ``SST_2``."""
    return name.lower().replace("-", "").replace("_", "")


def _is_task_folder(path: str, spec: _GlueSpec) -> bool:
    return _folder_key(os.path.basename(os.path.normpath(path))) == _folder_key(spec.directory)


def _task_dir_candidates(root: str, spec: _GlueSpec) -> list[str]:
    """Where task ``spec``'s files may be under ``root``: ``root/<Task>/`` (any case), or
    ``root`` itself only when it is named like the task (``.../SST-2``): a folder of
    another task's files (``--data_dir=.../glue/CoLA`` for sst2) is never read as this
    task's."""
    candidates = [os.path.join(root, spec.directory)]
    for name in os.listdir(root) if os.path.isdir(root) else []:
        if _folder_key(name) == _folder_key(spec.directory):
            candidates.append(os.path.join(root, name))
    if _is_task_folder(root, spec):
        candidates.append(root)
    return candidates


def _layout(spec: _GlueSpec) -> str:
    return (f"a GLUE task is read only from its own folder: DATA_DIR/glue/{spec.directory}/ "
            f"or DATA_DIR/{spec.directory}/ ({{train,dev,test}}.tsv)")


def other_task_folder(data_dir: str, name: str) -> str | None:
    """The one-line problem when ``data_dir`` is the folder of another task's files (named
    like another GLUE task, or holding a ``train.tsv`` without being named like task
    ``name``): reading it as ``name``'s data would score or train on the wrong task. None
    otherwise (also for a non-GLUE ``name``)."""
    key = glue_task_key(name)
    if key is None or not os.path.isdir(data_dir):
        return None
    spec = GLUE_TASKS[key]
    if _is_task_folder(data_dir, spec):
        return None
    folder = os.path.basename(os.path.normpath(os.path.abspath(data_dir)))
    other = next((k for k, s in GLUE_TASKS.items() if k != key and _is_task_folder(data_dir, s)),
                 None)
    if other is not None:
        what = f"is the folder of GLUE task {other} ({GLUE_TASKS[other].directory}/)"
    elif os.path.isfile(os.path.join(data_dir, "train.tsv")):
        what = f"is a task folder ({folder}/, holding train.tsv) that is not {spec.directory}'s"
    else:
        return None
    return (f"data directory {data_dir} {what}, not task {name}'s: {_layout(spec)}; pass the "
            f"data root (the directory holding glue/) or the directory holding "
            f"{spec.directory}/.")


def _find_task_dir(data_dir: str, spec: _GlueSpec) -> str:
    """The directory with the task's ``train.tsv``: ``data_dir`` in the GLUE layout
    (``<Task>/train.tsv``), the project's data root (``glue/<Task>/train.tsv``), or the
    task's own folder (named like it). Another task's folder is an error naming the
    layout (`other_task_folder`)."""
    for root in (data_dir, os.path.join(data_dir, "glue")):
        for candidate in _task_dir_candidates(root, spec):
            if os.path.isfile(os.path.join(candidate, "train.tsv")):
                return candidate
    key = next(k for k, s in GLUE_TASKS.items() if s is spec)
    problem = other_task_folder(data_dir, key)
    if problem:
        raise TaskDataError(problem)
    raise TaskDataError(f"no {spec.directory}/train.tsv under {data_dir} (expected the GLUE "
                        "layout: DATA_DIR/<Task>/{train,dev,test}.tsv, or DATA_DIR/glue/<Task>/)")


def find_glue_task_dir(data_dir: str, name: str) -> str | None:
    """Where GLUE task ``name``'s files are under ``data_dir`` (a GLUE directory or the
    project's data root, as `load_task` reads them), or None (also for a non-GLUE name);
    a `TaskDataError` when ``data_dir`` is another task's folder (`other_task_folder`)."""
    key = glue_task_key(name)
    if key is None:
        return None
    try:
        return _find_task_dir(data_dir, GLUE_TASKS[key])
    except TaskDataError:
        if other_task_folder(data_dir, name):
            raise
        return None


def expected_glue_file(data_dir: str, name: str, split: str = "train") -> str:
    """``<data_dir>/glue/<directory>/<split>.tsv``: where the GLUE table puts task ``name``'s
    ``split`` under the data root (also the path an error names when it is missing)."""
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


def split_texts(name: str, split: str = "dev", data_dir: str | None = None
                ) -> tuple[list[str], list[str] | None, list]:
    """``(texts_a, texts_b or None, labels)`` of one split of GLUE task ``name``, read
    from the data root ``data_dir`` (else ``$ALBERT_TF_DATA_DIR``; one clear
    `resources.DataDirError` when neither is set): the benchmarks' one task reader."""
    from albert_tf import resources

    if split not in ("train", "dev", "test"):
        raise TaskDataError(f"unknown split {split!r}: one of train, dev, test")
    root = resources.data_dir(data_dir)
    examples = getattr(load_task(name, root), split)
    if not examples:
        raise TaskDataError(f"task {name!r} has no {split} examples under {root}")
    texts_b = [e.text_b for e in examples] if examples[0].text_b is not None else None
    return [e.text_a for e in examples], texts_b, [e.label for e in examples]


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
                          is_regression, label_list, skipped, unknown_labels="error",
                          labels_from=": task.label_list")
    labels_from = ": task.label_list"
    if not is_regression and label_list is None:
        label_list = sorted({e.label for e in train if e.label is not None})
        labels_from = f": the labels of the train file {train_file}"
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
                                    is_regression, label_list, skipped,
                                    unknown_labels="error", labels_from=labels_from))
    if metric is None:
        metric = "pearson_spearman" if is_regression else "accuracy"
    return TaskData(name, train, splits[0], splits[1],
                    None if is_regression else list(label_list), is_regression, metric, skipped)


# ----------------------------------------------------------------------------------------
# Custom TSV/CSV files with a header: what the heads' readers share (the readers of multiple
# choice and token classification live beside their heads, `albert_tf.heads`)

def _header_rows(path: str) -> tuple[list[str], list[list[str]]]:
    header, numbered = numbered_header_rows(path)
    return header, [row for _, row in numbered]


def numbered_header_rows(path: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header of a custom task file (stripped) and its other rows with their line
    numbers; a `TaskDataError` when the file is missing or empty."""
    if not os.path.isfile(path):
        raise TaskDataError(f"task data file not found: {path}")
    rows = _read_numbered_rows(path, _delimiter_for(path, None))
    if not rows:
        raise TaskDataError(f"{path} is empty (expected a header row)")
    return [h.strip() for h in rows[0][1]], rows[1:]


def bad_row(path: str, line: int, what: str) -> TaskDataError:
    """A custom task's malformed row: an error naming it, never a row dropped in silence
    (a score of fewer examples, predictions out of step with the file)."""
    return TaskDataError(f"{path}, line {line}: {what}; fix the row (a custom task's rows are "
                         "all read, none is dropped).")


def width_problem(path: str, row: list[str], header: list[str]) -> str:
    """What is wrong with a row of another width than the header (for `bad_row`)."""
    sep = "tab" if _delimiter_for(path, None) == "\t" else "','"
    return (f"{len(row)} {sep}-separated fields where the header has {len(header)} (a {sep} "
            "inside a text?)")


def detect_task_type(path: str) -> str | None:
    """The ``task.type`` whose format the header of ``path`` is (a head's ``file_header``:
    ``multiple_choice``, `load_multiple_choice_task`; ``token_classification``,
    `load_token_classification_task`), else None."""
    import albert_tf.heads.registry as heads
    try:
        header, _ = _header_rows(path)
    except (TaskDataError, OSError):
        return None
    head = heads.for_file_header(header)              # the heads' ``file_header``
    return head.task_type if head is not None else None


def batch_slices(ds, num_examples: int, batch_size: int, is_training: bool,
                 seed: int | None, input_context, drop_remainder: bool = False):
    """Fixed-shape examples ``ds`` (``num_examples`` of them) into deterministic batches:
    sharded by ``input_context`` (``batch_size`` is global), shuffled when training (a new
    order each epoch, the same under ``seed``), prefetched."""
    from albert_tf.backend import tf
    per_replica = batch_size
    if input_context is not None:
        per_replica = input_context.get_per_replica_batch_size(batch_size)
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        ds = ds.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    options = tf.data.Options()
    options.deterministic = True
    ds = ds.batch(per_replica, drop_remainder=drop_remainder)
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


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


# The multiple-choice and token-classification readers live beside their heads
# (`albert_tf.heads`); the old names still resolve (PEP 562).
_MOVED = {**{name: "albert_tf.heads.multiple_choice" for name in (
    "MULTIPLE_CHOICE_SYNTAX", "load_multiple_choice_task", "multiple_choice_dataset")},
          **{name: "albert_tf.heads.token_classification" for name in (
              "TOKEN_CLASSIFICATION_SYNTAX", "load_token_classification_task",
              "encode_tagged", "token_classification_dataset")}}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED, globals())
