"""Finetuned heads between albert-tf and Hugging Face (``AlbertFor...`` / ``BertFor...``).

Every head of `albert_tf.heads` with an ``hf_task`` has a Hugging Face class that
computes it exactly from the same encoder outputs: its ``nn.Linear`` (``hf_linear``) is our
Dense layer ``hf_dense`` (kernel transposed), the dropout before it is inactive at inference.

====================  ===============================  ======================================
head                  Hugging Face class               computed from
====================  ===============================  ======================================
classification        ``ForSequenceClassification``    the pooler (dense + tanh on [CLS])
regression            ``ForSequenceClassification``,   the pooler
                      ``num_labels=1``, regression
span                  ``ForQuestionAnswering``         every token (no pooler on either
                      (``qa_outputs``)                 side); ours adds -1e9 at padding
multiple_choice       ``ForMultipleChoice``            the pooler, one row per choice
token_classification  ``ForTokenClassification``       every token (no pooler)
====================  ===============================  ======================================

Export (`export_head`, `config_fields`) writes ``num_labels``, ``id2label``/``label2id``
(``task.json``'s labels), ``problem_type`` and ``finetuning_task``, and keeps our whole
``task.json`` under ``albert_tf/`` (`write_task_record`: what Hugging Face has no key for,
``text_pair`` and ``vocab_type``; transformers ignores the directory); import (`read_head`)
turns those back into a ``task.json`` and maps the head's weights. A directory from
elsewhere (no ``albert_tf/task.json``) gives ``text_pair`` by its head, else by its
``finetuning_task`` when that is a task albert-tf knows (GLUE RTE: pairs), else the report
says it is unknown.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

import albert_tf.heads.registry as heads
from albert_tf.heads.base import Head
from albert_tf.checkpoints import TASK_FILE, TaskInfo, load_task_info
from albert_tf.config import AlbertConfig
from albert_tf.interop import name_map
from albert_tf.interop.conversion_report import ConversionError
from albert_tf.text import vocabulary as vocab_lib

POOLER = "pooler/"
# Where an exported directory keeps our task.json (as a keras-hub preset does:
# `albert_tf.interop.keras_hub.EXTRAS_DIR`): what config.json has no key for.
EXTRAS_DIR = "albert_tf"
# Hugging Face classes whose weights are the name map's own (encoder, mlm/, sop/).
BASE_CLASSES = ("Model", "ForPreTraining", "ForMaskedLM", "ForNextSentencePrediction")


# ------------------------------------------------------------------------------ export
def export_head(model_dir: str) -> tuple[Head | None, TaskInfo | None]:
    """The head and `TaskInfo` of a finetuned model directory (``None, None`` without a
    ``task.json``); a one-line `ConversionError` for a head no Hugging Face class computes."""
    if not os.path.isfile(os.path.join(model_dir, TASK_FILE)):
        return None, None
    info = load_task_info(model_dir)
    return check_head(heads.get(info.head), model_dir), info


def check_head(head: Head, where: str) -> Head:
    """``head``; a one-line `ConversionError` naming the heads that export when no Hugging
    Face class computes it."""
    if not head.hf_task:
        raise ConversionError(
            f"{where}: the {head.name} head has no Hugging Face class; heads that export "
            f"with --to=hf: {', '.join(heads.hf_heads())}.")
    return head


def config_fields(head: Head, info: TaskInfo, num_labels: int) -> dict[str, Any]:
    """The task keys of a Hugging Face ``config.json`` for ``head`` with ``num_labels``
    outputs: ``task.json``'s labels when there is one per output, else ``LABEL_i``."""
    labels = list(info.label_list or ())
    if len(labels) != num_labels:
        labels = [f"LABEL_{i}" for i in range(num_labels)]
    fields = {"num_labels": num_labels,
              "id2label": {str(i): name for i, name in enumerate(labels)},
              "label2id": {name: i for i, name in enumerate(labels)}, "finetuning_task": info.task}
    if head.hf_problem_type:
        fields["problem_type"] = head.hf_problem_type
    return fields


def write_task_record(directory: str, info: TaskInfo) -> None:
    """Keeps ``info`` (the exported model's ``task.json``) in the Hugging Face directory
    (``albert_tf/task.json``) for `read_head`: ``text_pair`` and ``vocab_type`` have no
    Hugging Face key."""
    os.makedirs(os.path.join(directory, EXTRAS_DIR), exist_ok=True)
    info.to_json(os.path.join(directory, EXTRAS_DIR, TASK_FILE))


def task_rules(head: Head, config: AlbertConfig, table: name_map.NameTable,
               weights) -> dict[str, name_map.Rule]:
    """``{Hugging Face name: Rule}`` of a task model with ``weights`` (our names): the
    table's encoder rows (the pooler only when the head uses it) and the head's Linear."""
    rules = {src: rule for src, rule in table.expand(config).items()
             if not rule.target.startswith(name_map.HEAD_PREFIXES)
             and (not rule.target.startswith(POOLER) or rule.target in weights)}
    rules.update((r.source, r) for r in name_map.hf_head_rules(head.hf_linear, head.hf_dense))
    return rules


# ------------------------------------------------------------------------------ import
def _hf_values(directory: str) -> dict[str, Any]:
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        return json.load(f)                  # readable: `readers.hf_config` read it first


def _architecture(values: dict[str, Any], path: str, model_type: str) -> str | None:
    """The class suffix (``ForSequenceClassification``) of ``architectures``, if any."""
    names = values.get("architectures")
    if names is None:
        return None
    if not (isinstance(names, list) and len(names) == 1 and isinstance(names[0], str)):
        raise ConversionError(f"{path}: architectures: expected a list of one class name, got "
                              f"{names!r}.")
    family = model_type.capitalize()         # Albert / Bert
    return names[0][len(family):] if names[0].startswith(family) else None


def _labels(values: dict[str, Any], path: str) -> list[str]:
    """The label names of ``id2label`` in id order (``num_labels`` ``LABEL_i`` without)."""
    id2label = values.get("id2label")
    if id2label is None:
        n = values.get("num_labels", 2)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ConversionError(f"{path}: num_labels: expected a positive integer, got {n!r}.")
        return [f"LABEL_{i}" for i in range(n)]
    try:
        by_id = {int(k): v for k, v in id2label.items()}
    except (AttributeError, TypeError, ValueError):
        by_id = {}
    if sorted(by_id) != list(range(max(len(by_id), 1))) or not all(
            isinstance(v, str) for v in by_id.values()):
        raise ConversionError(f"{path}: id2label: expected {{\"0\": name, \"1\": name, ...}}, "
                              f"got {id2label!r}.")
    return [by_id[i] for i in range(len(by_id))]


def _max_seq_length(directory: str, config: AlbertConfig, kept: TaskInfo | None = None) -> int:
    """``model_max_length`` of the tokenizer when it fits the positions, else the kept
    ``task.json``'s, else all of them."""
    try:
        with open(os.path.join(directory, vocab_lib.CASING_FILE), encoding="utf-8") as f:
            value = json.load(f).get("model_max_length")
    except (OSError, ValueError, AttributeError):
        value = None
    for length in (value, kept.max_seq_length if kept else None):
        if isinstance(length, int) and 3 <= length <= config.max_position_embeddings:
            return length
    return config.max_position_embeddings


def _kept_task_info(directory: str, head: Head, labels: list[str],
                    notes: list[str]) -> TaskInfo | None:
    """The ``task.json`` albert-tf kept in the directory (`write_task_record`) when it still
    describes the model (the same head and number of labels), else None."""
    path = os.path.join(directory, EXTRAS_DIR, TASK_FILE)
    if not os.path.isfile(path):
        return None
    try:
        kept = TaskInfo.from_json(path)
    except (ValueError, TypeError) as e:       # CheckpointError is a ValueError
        raise ConversionError(f"{path}: {e}") from e
    if kept.head != head.name or (head.labels_required
                                  and len(kept.label_list or ()) != len(labels)):
        notes.append(f"{EXTRAS_DIR}/{TASK_FILE} ignored: it describes a {kept.head} head with "
                     f"{len(kept.label_list or ())} label(s), config.json a {head.name} head "
                     f"with {len(labels)} (the model was changed after albert-tf wrote it)")
        return None
    return kept


def _text_pair(head: Head, task: str) -> tuple[bool | None, str]:
    """Whether a model from elsewhere takes sentence pairs (None: unknown), and why: its
    head (span, multiple choice: pairs), else the task its ``finetuning_task`` names."""
    from albert_tf.data import task_data
    if head.text_pair is not None:
        return head.text_pair, (f"a {head.name} model takes "
                                f"{'pairs' if head.text_pair else 'one text'}")
    glue = task_data.glue_task_key(task)
    if glue is not None:
        pair = len(task_data.GLUE_TASKS[glue].text_columns) == 2
        return pair, (f"finetuning_task {task!r}: GLUE {task_data.GLUE_TASKS[glue].directory} "
                      f"takes {'sentence pairs' if pair else 'one sentence'}")
    if task.lower() in task_data.SENTEVAL_TASKS:
        return False, f"finetuning_task {task!r}: SentEval {task} takes one sentence"
    return None, ""


def read_head(directory: str, config: AlbertConfig, model_type: str,
              notes: list[str], vocab: str | None = None
              ) -> tuple[Head, TaskInfo] | None:
    """The albert-tf head and `TaskInfo` of a Hugging Face task model directory; None for
    a base or pretraining model, or a task no head computes (its head is then skipped).

    The labels, length and casing are Hugging Face's (``id2label``, the tokenizer's
    ``model_max_length`` and ``do_lower_case``); ``text_pair`` comes from the ``task.json``
    albert-tf kept there (`write_task_record`), else `_text_pair`; ``vocab_type`` from the
    vocabulary the conversion copies (``vocab``: ``spiece.model``, ``vocab.txt``, a WordPiece
    ``tokenizer.json``), else the kept ``task.json``."""
    path = os.path.join(directory, "config.json")
    values = _hf_values(directory)
    suffix = _architecture(values, path, model_type)
    if suffix is None:
        return None
    labels = _labels(values, path)
    problem = values.get("problem_type") or (
        "regression" if len(labels) == 1 else "single_label_classification")
    head = heads.for_hf_task(suffix, problem)
    if head is None:
        if suffix not in BASE_CLASSES:
            notes.append(f"{values['architectures'][0]} (problem_type {problem!r}) is no "
                         "albert-tf head: only the encoder is converted")
        return None
    casing = vocab_lib.read_casing(directory)
    kept = _kept_task_info(directory, head, labels, notes)
    task = str(values.get("finetuning_task") or (kept.task if kept else "")
               or os.path.basename(os.path.abspath(directory)))
    if kept is not None:
        text_pair, why = kept.text_pair, f"from {EXTRAS_DIR}/{TASK_FILE}, written by albert-tf"
    else:
        text_pair, why = _text_pair(head, task)
    if vocab is not None:
        vocab_type = (vocab_lib.WORDPIECE if os.path.basename(vocab) == vocab_lib.HF_TOKENIZER_FILE
                      else vocab_lib.kind_from_name(vocab))
    else:
        vocab_type = kept.vocab_type if kept else None
    if casing is None:
        casing = kept.do_lower_case if kept else True
    info = TaskInfo(task=task, head=head.name,
                    label_list=tuple(labels) if head.labels_required else None,
                    max_seq_length=_max_seq_length(directory, config, kept),
                    do_lower_case=casing, text_pair=bool(text_pair), vocab_type=vocab_type)
    pairing = (f"text_pair={str(text_pair).lower()} ({why})" if text_pair is not None else
               f"text_pair unknown (Hugging Face does not record it, and finetuning_task "
               f"{task!r} is no task albert-tf knows): written false, one text per example; "
               f"if the model takes sentence pairs, set \"text_pair\": true in {TASK_FILE}")
    notes.append(f"{values['architectures'][0]} -> the {head.name} head ({len(labels)} "
                 f"output(s)) -> {TASK_FILE}; {pairing}")
    return head, info


def task_table(head: Head, table: name_map.NameTable,
               weights) -> name_map.NameTable:
    """``table`` for a task model with ``weights``: the head's Linear mapped, the rows of
    weights the model lacks (mlm/, sop/, an unused pooler) skipped."""
    unused = [r for r in table.rules if r.target.startswith(name_map.HEAD_PREFIXES)
              or (r.target.startswith(POOLER) and r.target not in weights)]
    kept = tuple(r for r in table.rules if r not in unused)
    skips = tuple((re.escape(r.source), f"not part of the albert-tf {head.name} model")
                  for r in unused)
    return dataclasses.replace(
        table, rules=kept + name_map.hf_head_rules(head.hf_linear, head.hf_dense),
        skips=skips + table.skips)
