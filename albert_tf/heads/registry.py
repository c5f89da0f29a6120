"""The head registry: which heads there are (`HEADS`, `EXPORT_HEADS`) and the lookups.

A model directory's ``task.json`` names its head (`albert_tf.checkpoints.TaskInfo`). Training,
export and the edge runner never compare head names; they look the head up:
``heads.get(task_info.head).build_model(config, task_info)``. What a head declares is listed
in `albert_tf.heads.base`.

Each head module of `albert_tf.heads` registers its head with ``@register`` when it is
imported; the package `albert_tf.heads` imports the built-in ones (in the order messages list
them), so any import of this module (``import albert_tf.heads.registry as heads``) finds them
all.
A head defined elsewhere registers the same way, in its own module, imported before use.

This module imports nothing (the heads import it: no cycle), and no TensorFlow: the TFLite
runner uses it without TensorFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

if TYPE_CHECKING:
    from albert_tf.heads.base import Head

#: The trained heads by name (a model directory's ``task.json`` names one).
HEADS: dict[str, "Head"] = {}
#: Heads an export can put on any model (``--head=``); no model directory is trained as one.
EXPORT_HEADS: dict[str, "Head"] = {}

HeadClass = TypeVar("HeadClass", bound=type)


def register(cls: HeadClass) -> HeadClass:
    """Class decorator: registers one instance of the `Head` subclass ``cls`` under its
    ``name`` (in `EXPORT_HEADS` when it is ``export_only``); a ValueError when that name is
    taken. Returns ``cls``."""
    head = cls()
    if not head.name:
        raise ValueError(f"{cls.__name__}: a head needs a name.")
    if head.name in HEADS or head.name in EXPORT_HEADS:
        raise ValueError(f"head {head.name!r} is registered twice.")
    (EXPORT_HEADS if head.export_only else HEADS)[head.name] = head
    return cls


def get(name: str) -> "Head":
    """The registered head ``name`` (a ValueError listing the heads otherwise)."""
    head = HEADS.get(name) or EXPORT_HEADS.get(name)
    if head is None:
        raise ValueError(f"unknown head {name!r}; use one of {tuple(HEADS)}.")
    return head


def every_head() -> dict[str, "Head"]:
    """Every registered head by name: the trained ones (`HEADS`), then `EXPORT_HEADS`."""
    return {**HEADS, **EXPORT_HEADS}


def sdk_heads() -> dict[str, tuple[str, ...]]:
    """Head name -> the mobile SDK tasks that run its SDK-shaped TFLite export."""
    return {name: head.sdk_runners for name, head in every_head().items() if head.sdk_outputs}


def onnx_heads() -> tuple[str, ...]:
    """The heads the ONNX export writes (``onnx_outputs``)."""
    return tuple(name for name, head in every_head().items() if head.onnx_outputs)


def for_keras_hub_task(is_task: Callable[[str], bool]) -> "Head | None":
    """The head whose keras-hub task base class name satisfies ``is_task`` (e.g. "a keras-hub
    task object is an instance of it"); None when no head has such a keras-hub task."""
    return next((head for head in HEADS.values()
                 if head.keras_hub_task is not None and is_task(head.keras_hub_task)), None)


def hf_heads() -> tuple[str, ...]:
    """The heads that export to a Hugging Face class (``hf_task``)."""
    return tuple(name for name, head in HEADS.items() if head.hf_task)


def for_hf_task(hf_task: str, problem_type: str | None) -> "Head | None":
    """The head computed by Hugging Face class suffix ``hf_task`` (e.g.
    ``"ForSequenceClassification"``) with config ``problem_type``; None when no head is."""
    return next((head for head in HEADS.values() if head.hf_dense and head.hf_task == hf_task
                 and head.hf_problem_type in (None, problem_type)), None)


def task_types() -> tuple[str, ...]:
    """Every ``task.type`` the trainer runs: the training task of a head."""
    return tuple(head.task_type for head in HEADS.values() if head.task_type)


def for_task_type(task_type: str) -> "Head":
    """The head whose training task ``task.type`` names."""
    for head in HEADS.values():
        if head.task_type == task_type:
            return head
    raise ValueError(f"task.type: unknown task type {task_type!r}; use one of "
                     f"{sorted(task_types())}.")


def for_task_name(name: str) -> "Head | None":
    """The trained head whose ``task_names`` hold ``--task`` name ``name`` (any case; e.g.
    ``squad``: span), else None."""
    name = (name or "").lower()
    return next((head for head in HEADS.values() if name in head.task_names), None)


def custom_heads() -> tuple["Head", ...]:
    """The trained heads read from a custom file of their own format (``file_header``), the
    one naming the most columns first (the order their formats are matched and listed)."""
    return tuple(sorted((head for head in HEADS.values() if head.file_header),
                        key=lambda head: -len(head.file_header)))


def for_file_header(header: Iterable[str]) -> "Head | None":
    """The trained head whose ``file_header`` columns are all in ``header`` (a custom train
    file's first row), the one naming the most columns first; None when none is."""
    columns = set(header)
    return next((head for head in custom_heads() if set(head.file_header) <= columns), None)


def head_layer_names(heads: Iterable["Head"] | None = None) -> tuple[str, ...]:
    """The Keras layer names of the heads' own layers (``head_layers``; default: every
    registered head), each once, in registry order: pruning's ``head`` group, the head
    Dense layers QAT quantizes."""
    names: list[str] = []
    for head in every_head().values() if heads is None else heads:
        names += [name for name in head.head_layers if name not in names]
    return tuple(names)
