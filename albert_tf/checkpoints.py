"""Weight checkpoints keyed by canonical weight names, portable between our models.

A *model directory* is what `albert-tf-convert` and the training binaries write::

    DIR/config.json            AlbertConfig.to_json
    DIR/task.json              (finetuned models) `TaskInfo`: task, head, labels, seq length
    DIR/vocab.model            (when known) the SentencePiece model the ids come from
    DIR/weights.index          standard TF checkpoint (tf.train.load_checkpoint reads it)
    DIR/weights.data-*         whose keys are our weight names, e.g.
                               ``embeddings/word_embeddings/embeddings``,
                               ``group_0_inner_0_attention/query/kernel``, ``mlm/output_bias``

Because keys are weight names rather than object-graph paths, a pretrainer's weights
restore into an encoder or a classifier (unused heads are reported, not errors), and
a checkpoint written by another tool only needs the same names.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from typing import Iterable

import numpy as np

from albert_tf import task_heads as heads_lib
from albert_tf.backend import keras, tf
from albert_tf.config import AlbertConfig

WEIGHTS_PREFIX = "weights"
CONFIG_FILE = "config.json"
TASK_FILE = "task.json"
VOCAB_FILE = "vocab.model"
HEADS = tuple(heads_lib.HEADS)   # the registry: `albert_tf.task_heads`


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """What a model directory's head does, for export and serving.

    Attributes:
      task: task name, e.g. ``sst2`` or a custom TSV task's name.
      head: one of `HEADS`.
      label_list: class labels in logit order (classification, token classification);
        ``None`` otherwise.
      max_seq_length: sequence length the model was finetuned with.
      do_lower_case: whether the tokenizer lower-cases (must match the vocabulary).
      text_pair: whether inputs are sentence pairs.
    """

    task: str
    head: str
    label_list: tuple[str, ...] | None = None
    max_seq_length: int = 128
    do_lower_case: bool = True
    text_pair: bool = False

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"task.json head: unknown head {self.head!r}; use one of {HEADS}.")
        heads_lib.get(self.head).validate(self)

    def to_json(self, path: str) -> None:
        import json
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f, indent=2)

    @classmethod
    def from_json(cls, path: str) -> "TaskInfo":
        import json
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{path}: unknown task.json key(s) {unknown}; known: {sorted(known)}.")
        if values.get("label_list") is not None:
            values["label_list"] = tuple(str(v) for v in values["label_list"])
        return cls(**values)


class CheckpointError(ValueError):
    """A checkpoint does not fit the model; the message names the tensor or file."""


def weight_name(variable: tf.Variable) -> str:
    """Canonical name of a model weight: its variable name without ``:0``."""
    return variable.name.rsplit(":", 1)[0]


def named_weights(model: keras.Model) -> dict[str, tf.Variable]:
    """``{canonical name: variable}`` for every (deduplicated) weight of ``model``."""
    weights: dict[str, tf.Variable] = {}
    for variable in model.weights:
        name = weight_name(variable)
        if name in weights and weights[name] is not variable:
            raise CheckpointError(f"two different weights are both named {name!r}; "
                                  "weight names must be unique.")
        weights[name] = variable
    return weights


def write_weights(weights: dict[str, np.ndarray | tf.Variable], prefix: str) -> None:
    """Writes ``{name: tensor}`` as a TF checkpoint at ``prefix`` (not atomic by itself)."""
    names = sorted(weights)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.convert_to_tensor(weights[n]) for n in names])


@dataclasses.dataclass
class RestoreReport:
    """What a restore did: names loaded, model weights left untouched, checkpoint extras."""

    loaded: list[str]
    missing_in_checkpoint: list[str]
    unused_in_checkpoint: list[str]

    def summary(self) -> str:
        return (f"loaded {len(self.loaded)} weights; {len(self.missing_in_checkpoint)} model "
                f"weights not in the checkpoint {self.missing_in_checkpoint[:8]}; "
                f"{len(self.unused_in_checkpoint)} checkpoint tensors unused "
                f"{self.unused_in_checkpoint[:8]}")


def _checkpoint_prefix(path: str) -> str:
    if os.path.isdir(path):
        prefix = os.path.join(path, WEIGHTS_PREFIX)
        if not os.path.exists(prefix + ".index"):
            latest = tf.train.latest_checkpoint(path)
            if latest is None:
                raise CheckpointError(f"{path!r} holds no weights ({WEIGHTS_PREFIX}.index) and no "
                                      "TF checkpoint; pass a model directory written by "
                                      "albert-tf-convert or a training run.")
            prefix = latest
        return prefix
    if os.path.exists(path + ".index"):
        return path
    raise CheckpointError(f"no checkpoint at {path!r} (looked for {path}.index); pass a model "
                          "directory or a checkpoint prefix.")


def restore_weights(model: keras.Model, path: str,
                    required: Iterable[str] = ("embeddings/",),
                    allow_missing: Iterable[str] = ()) -> RestoreReport:
    """Loads name-keyed weights from ``path`` (a model directory or checkpoint prefix).

    Shapes are all checked before anything is assigned, so a mismatch leaves the
    model untouched and names the tensor. Model weights absent from the checkpoint
    are an error when their name starts with one of ``required`` and not with one of
    ``allow_missing`` (task heads of a fresh classifier are typically allowed).
    """
    reader = tf.train.load_checkpoint(_checkpoint_prefix(path))
    shapes = reader.get_variable_to_shape_map()
    weights = named_weights(model)
    mismatched = [f"{name}: checkpoint {shapes[name]} vs model {var.shape.as_list()}"
                  for name, var in weights.items()
                  if name in shapes and list(shapes[name]) != var.shape.as_list()]
    if mismatched:
        raise CheckpointError(f"{path}: tensor shapes disagree with the model config: "
                              + "; ".join(mismatched[:10])
                              + ". Was the checkpoint written for another config?")
    missing = sorted(n for n in weights if n not in shapes)
    allow_missing = tuple(allow_missing)
    bad = [n for n in missing if n.startswith(tuple(required)) and not n.startswith(allow_missing)]
    if bad:
        raise CheckpointError(f"{path}: checkpoint lacks required weights {bad[:10]}.")
    loaded = sorted(n for n in weights if n in shapes)
    for name in loaded:
        weights[name].assign(reader.get_tensor(name))
    unused = sorted(n for n in shapes if n not in weights)
    return RestoreReport(loaded, missing, unused)


def save_model_dir(model: keras.Model, directory: str,
                   config: AlbertConfig | None = None, task_info: TaskInfo | None = None,
                   vocab_file: str | None = None) -> str:
    """Writes ``config.json``, name-keyed weights and, when given, ``task.json`` and a
    copy of the SentencePiece ``vocab_file`` (as ``vocab.model``) to ``directory``.

    Everything is written to a temporary sibling directory that then replaces
    ``directory``, so a crash never leaves a half-written model directory.
    """
    config = config or getattr(model, "albert_config", None)
    if config is None:
        raise ValueError("save_model_dir needs the AlbertConfig (model.albert_config is unset).")
    directory = os.path.abspath(directory)
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}.tmp-", dir=parent)
    try:
        config.to_json(os.path.join(tmp, CONFIG_FILE))
        write_weights(named_weights(model), os.path.join(tmp, WEIGHTS_PREFIX))
        if task_info is not None:
            task_info.to_json(os.path.join(tmp, TASK_FILE))
        if vocab_file is not None:
            if not os.path.exists(vocab_file):
                raise FileNotFoundError(f"vocabulary file {vocab_file!r} does not exist.")
            shutil.copyfile(vocab_file, os.path.join(tmp, VOCAB_FILE))
        if os.path.exists(directory):
            old = directory + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(directory, old)
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def load_config_from_dir(directory: str) -> AlbertConfig:
    path = os.path.join(directory, CONFIG_FILE)
    if not os.path.exists(path):
        raise CheckpointError(f"{directory!r} has no {CONFIG_FILE}; a model directory holds "
                              f"{CONFIG_FILE} and {WEIGHTS_PREFIX}.* (see albert-tf-convert).")
    return AlbertConfig.from_json(path)


def load_task_info(directory: str) -> TaskInfo:
    path = os.path.join(directory, TASK_FILE)
    if not os.path.exists(path):
        raise CheckpointError(f"{directory!r} has no {TASK_FILE}: it is not a finetuned model "
                              "directory (write one with albert-tf-finetune).")
    return TaskInfo.from_json(path)


def vocab_path(directory: str) -> str:
    """The SentencePiece model shipped in a model directory; a clear error when absent."""
    path = os.path.join(directory, VOCAB_FILE)
    if not os.path.exists(path):
        raise CheckpointError(f"{directory!r} has no {VOCAB_FILE}; pass the SentencePiece model "
                              "explicitly (--spm_model_file) or save the model with vocab_file=.")
    return path


def load_encoder(directory: str, **build_kwargs) -> keras.Model:
    """The encoder of a model directory, with its weights (heads in the directory ignored)."""
    from albert_tf.networks.encoder import build_encoder
    model = build_encoder(load_config_from_dir(directory), **build_kwargs)
    restore_weights(model, directory)
    return model


def load_pretrainer(directory: str, **build_kwargs) -> keras.Model:
    """The pretrainer (encoder + MLM + SOP heads) of a model directory, with its weights."""
    from albert_tf.models.pretrainer import build_pretrainer
    model = build_pretrainer(load_config_from_dir(directory), **build_kwargs)
    restore_weights(model, directory, required=("embeddings/", "mlm/", "sop/"))
    return model


def build_task_model(config: AlbertConfig, task_info: TaskInfo, **build_kwargs) -> keras.Model:
    """The task model that `TaskInfo.head` describes (weights freshly initialized)."""
    return heads_lib.get(task_info.head).build_model(config, task_info, **build_kwargs)


def load_task_model(directory: str, **build_kwargs) -> tuple[keras.Model, TaskInfo]:
    """A finetuned model directory's task model with its weights, and its `TaskInfo`."""
    task_info = load_task_info(directory)
    model = build_task_model(load_config_from_dir(directory), task_info, **build_kwargs)
    missing = restore_weights(model, directory).missing_in_checkpoint
    if missing:
        raise CheckpointError(f"{directory}: finetuned weights missing for {missing[:10]}.")
    return model, task_info
