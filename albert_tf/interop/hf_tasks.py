"""Finetuned heads between albert-tf and Hugging Face (``AlbertFor...`` / ``BertFor...``).

Every head of `albert_tf.task_heads` with an ``hf_task`` has a Hugging Face class that
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
(``task.json``'s labels), ``problem_type`` and ``finetuning_task``; import (`read_head`)
turns those back into a ``task.json`` and maps the head's weights.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any

from albert_tf import task_heads as heads
from albert_tf.checkpoints import TASK_FILE, TaskInfo, load_task_info
from albert_tf.config import AlbertConfig
from albert_tf.interop import name_map
from albert_tf.interop.conversion_report import ConversionError
from albert_tf.text import vocabulary as vocab_lib

POOLER = "pooler/"
# Hugging Face classes whose weights are the name map's own (encoder, mlm/, sop/).
BASE_CLASSES = ("Model", "ForPreTraining", "ForMaskedLM", "ForNextSentencePrediction")


# ------------------------------------------------------------------------------ export
def export_head(model_dir: str) -> tuple[heads.TaskHead | None, TaskInfo | None]:
    """The head and `TaskInfo` of a finetuned model directory (``None, None`` without a
    ``task.json``); a one-line `ConversionError` for a head no Hugging Face class computes."""
    if not os.path.isfile(os.path.join(model_dir, TASK_FILE)):
        return None, None
    info = load_task_info(model_dir)
    return check_head(heads.get(info.head), model_dir), info


def check_head(head: heads.TaskHead, where: str) -> heads.TaskHead:
    """``head``; a one-line `ConversionError` naming the heads that export when no Hugging
    Face class computes it."""
    if not head.hf_task:
        raise ConversionError(
            f"{where}: the {head.name} head has no Hugging Face class; heads that export "
            f"with --to=hf: {', '.join(heads.hf_heads())}.")
    return head


def config_fields(head: heads.TaskHead, info: TaskInfo, num_labels: int) -> dict[str, Any]:
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


def task_rules(head: heads.TaskHead, config: AlbertConfig, table: name_map.NameTable,
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


def _max_seq_length(directory: str, config: AlbertConfig) -> int:
    """``model_max_length`` of the tokenizer when it fits the positions, else all of them."""
    try:
        with open(os.path.join(directory, vocab_lib.CASING_FILE), encoding="utf-8") as f:
            value = json.load(f).get("model_max_length")
    except (OSError, ValueError, AttributeError):
        value = None
    fits = isinstance(value, int) and 3 <= value <= config.max_position_embeddings
    return value if fits else config.max_position_embeddings


def read_head(directory: str, config: AlbertConfig, model_type: str,
              notes: list[str]) -> tuple[heads.TaskHead, TaskInfo] | None:
    """The albert-tf head and `TaskInfo` of a Hugging Face task model directory; None for
    a base or pretraining model, or a task no head computes (its head is then skipped)."""
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
    info = TaskInfo(task=str(values.get("finetuning_task") or os.path.basename(directory)),
                    head=head.name, label_list=tuple(labels) if head.labels_required else None,
                    max_seq_length=_max_seq_length(directory, config),
                    do_lower_case=True if casing is None else casing)
    notes.append(f"{values['architectures'][0]} -> the {head.name} head ({len(labels)} "
                 f"output(s)) -> {TASK_FILE}; text_pair=false (Hugging Face does not record "
                 "it: edit task.json for sentence pairs)")
    return head, info


def task_table(head: heads.TaskHead, table: name_map.NameTable,
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
