"""The task-head registry: which heads there are (`HEADS`, `EXPORT_HEADS`) and the lookups.

A model directory's ``task.json`` names its head (`albert_tf.checkpoints.TaskInfo`). Training,
export and the edge runner never compare head names; they look the head up:
``heads.get(task_info.head).build_model(config, task_info)``. What a head owns is listed in
`albert_tf.heads.base`; each head is a `TaskHead` subclass in a module of `albert_tf.heads`.
Adding a head: write it there, list it in `HEADS`, add its model builder to
`albert_tf.models.task_models` (and, when it trains differently from the existing tasks, its
`Task` to `albert_tf.training.tasks`; with ``onnx_outputs``, its graph to
`albert_tf.export.onnx`), and test it. Like `albert_tf.heads`, this imports neither
TensorFlow nor training code at import time: the TFLite runner uses it without TensorFlow.
"""

from __future__ import annotations

from typing import Callable

from albert_tf.heads.base import TaskHead
from albert_tf.heads.classification import ClassificationHead, RegressionHead
from albert_tf.heads.embedding import EmbeddingHead
from albert_tf.heads.multiple_choice import MultipleChoiceHead
from albert_tf.heads.pretraining import PretrainingHead
from albert_tf.heads.question_answering import SpanHead
from albert_tf.heads.token_classification import TokenClassificationHead
# Public here too (the runner, export and tests import them from the registry).
from albert_tf.heads.decoding import softmax, word_labels  # noqa: F401
from albert_tf.heads.span import (MAX_ANSWER_LENGTH, SDK_SPAN_BOOST,  # noqa: F401
                                  SDK_SPAN_MASK, SDK_SPAN_SEQ_LENGTH, best_span, best_spans,
                                  sdk_span_logits)

HEADS: dict[str, TaskHead] = {head.name: head for head in (
    ClassificationHead(), RegressionHead(), SpanHead(), TokenClassificationHead(),
    MultipleChoiceHead(), PretrainingHead())}
#: Heads an export can put on any model (``--head=``); no model directory is trained as one.
EXPORT_HEADS: dict[str, TaskHead] = {head.name: head for head in (EmbeddingHead(),)}


def get(name: str) -> TaskHead:
    """The registered head ``name`` (a ValueError listing the heads otherwise)."""
    head = HEADS.get(name) or EXPORT_HEADS.get(name)
    if head is None:
        raise ValueError(f"unknown head {name!r}; use one of {tuple(HEADS)}.")
    return head


def every_head() -> dict[str, TaskHead]:
    """Every registered head by name: the trained ones (`HEADS`), then `EXPORT_HEADS`."""
    return {**HEADS, **EXPORT_HEADS}


def sdk_heads() -> dict[str, tuple[str, ...]]:
    """Head name -> the mobile SDK tasks that run its SDK-shaped TFLite export."""
    return {name: head.sdk_runners for name, head in every_head().items() if head.sdk_outputs}


def onnx_heads() -> tuple[str, ...]:
    """The heads the ONNX export writes (``onnx_outputs``)."""
    return tuple(name for name, head in every_head().items() if head.onnx_outputs)


def for_keras_hub_task(is_task: Callable[[str], bool]) -> TaskHead | None:
    """The head whose keras-hub task base class name satisfies ``is_task`` (e.g. "a keras-hub
    task object is an instance of it"); None when no head has such a keras-hub task."""
    return next((head for head in HEADS.values()
                 if head.keras_hub_task is not None and is_task(head.keras_hub_task)), None)


def hf_heads() -> tuple[str, ...]:
    """The heads that export to a Hugging Face class (``hf_task``)."""
    return tuple(name for name, head in HEADS.items() if head.hf_task)


def for_hf_task(hf_task: str, problem_type: str | None) -> TaskHead | None:
    """The head computed by Hugging Face class suffix ``hf_task`` (e.g.
    ``"ForSequenceClassification"``) with config ``problem_type``; None when no head is."""
    return next((head for head in HEADS.values() if head.hf_dense and head.hf_task == hf_task
                 and head.hf_problem_type in (None, problem_type)), None)


def task_types() -> tuple[str, ...]:
    """Every ``task.type`` the trainer runs: the training task of a head."""
    return tuple(head.task_type for head in HEADS.values() if head.task_type)


def for_task_type(task_type: str) -> TaskHead:
    """The head whose training task ``task.type`` names."""
    for head in HEADS.values():
        if head.task_type == task_type:
            return head
    raise ValueError(f"task.type: unknown task type {task_type!r}; use one of "
                     f"{sorted(task_types())}.")
