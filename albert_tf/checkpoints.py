"""Weight checkpoints keyed by canonical weight names, portable between our models.

A *model directory* is what `albert-tf-convert` and the training binaries write::

    DIR/config.json            AlbertConfig.to_json
    DIR/task.json              (finetuned models) `TaskInfo`: task, head, labels, seq length
    DIR/vocab.model            (when known) the vocabulary the ids come from: a SentencePiece
      or DIR/vocab.txt         model or a WordPiece vocab.txt (`albert_tf.text.vocabulary`)
    DIR/weights.index          standard TF checkpoint (tf.train.load_checkpoint reads it)
    DIR/weights.data-*         whose keys are our weight names, e.g.
                               ``embeddings/word_embeddings/embeddings``,
                               ``group_0_inner_0_attention/query/kernel``, ``mlm/output_bias``

Because keys are weight names rather than object-graph paths, a pretrainer's weights
restore into an encoder or a classifier (unused heads are reported, not errors), and
a checkpoint written by another tool only needs the same names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from typing import Iterable

import numpy as np

from albert_tf import outputs
import albert_tf.heads.registry as heads_lib
from albert_tf.backend import keras, tf
from albert_tf.config import AlbertConfig
from albert_tf.text import vocabulary as vocab_lib

WEIGHTS_PREFIX = "weights"
CONFIG_FILE = "config.json"
TASK_FILE = "task.json"
VOCAB_FILE = vocab_lib.SENTENCEPIECE_FILE    # a WordPiece vocabulary is vocab.txt


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """What a model directory's head does, for export and serving.

    Attributes:
      task: task name, e.g. ``sst2`` or a custom TSV task's name.
      head: a head of the registry (`albert_tf.heads.registry.HEADS`).
      label_list: class labels in logit order (classification, token classification);
        ``None`` otherwise.
      max_seq_length: sequence length the model was finetuned with.
      do_lower_case: whether the tokenizer lower-cases (must match the vocabulary).
      text_pair: whether inputs are sentence pairs.
      vocab_type: ``sentencepiece`` or ``wordpiece`` (`albert_tf.text.vocabulary`);
        `save_model_dir` records it from the vocabulary file, `load_task_info` derives it
        from the directory's vocabulary when an older ``task.json`` lacks it.
    """

    task: str
    head: str
    label_list: tuple[str, ...] | None = None
    max_seq_length: int = 128
    do_lower_case: bool = True
    text_pair: bool = False
    vocab_type: str | None = None

    def __post_init__(self) -> None:
        if self.vocab_type is not None and self.vocab_type not in vocab_lib.KINDS:
            raise ValueError(f"task.json vocab_type: unknown {self.vocab_type!r}; use one of "
                             f"{list(vocab_lib.KINDS)}.")
        heads = tuple(heads_lib.HEADS)      # live: a head registered later counts too
        if self.head not in heads:
            raise ValueError(f"task.json head: unknown head {self.head!r}; use one of {heads}.")
        heads_lib.get(self.head).validate(self)

    def to_json(self, path: str) -> None:
        import json
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f, indent=2)

    @classmethod
    def from_json(cls, path: str) -> "TaskInfo":
        import json
        with open(path, encoding="utf-8") as f:
            try:
                values = json.load(f)
            except (ValueError, RecursionError) as e:
                raise CheckpointError(f"{path}: not valid JSON ({e}); the model directory is "
                                      "damaged: copy or write it again.") from None
        if not isinstance(values, dict):
            raise CheckpointError(f"{path}: not a task.json mapping; the model directory is "
                                  "damaged: copy or write it again.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise CheckpointError(f"{path}: unknown task.json key(s) {unknown}; known: "
                                  f"{sorted(known)}.")
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
    prefix = _checkpoint_prefix(path)
    with unreadable_weights(prefix):
        reader = tf.train.load_checkpoint(prefix)
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
    with unreadable_weights(prefix):     # every tensor read before any is assigned
        values = {name: reader.get_tensor(name) for name in loaded}
    for name in loaded:
        weights[name].assign(values[name])
    unused = sorted(n for n in shapes if n not in weights)
    return RestoreReport(loaded, missing, unused)


class UnreadableWeights(CheckpointError):
    """Checkpoint files that cannot be read (truncated, damaged); ``cause`` is the reader's
    own first line."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


@contextlib.contextmanager
def unreadable_weights(prefix: str):
    """Turns the errors of reading damaged checkpoint files (a truncated ``.data`` file:
    ``IndexError``; a changed byte: a checksum ``OpError``; a damaged ``.index``:
    ``DataLossError``) into one `CheckpointError` naming the files and the fix."""
    try:
        yield
    except (tf.errors.OpError, IndexError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        from albert_tf.cli import cause_line
        cause = cause_line(e)
        raise UnreadableWeights(
            f"the weights {prefix}.index / {prefix}.data-* cannot be read ({cause}): the "
            "files are truncated or damaged; copy the model directory again, or write it "
            "again (training, albert-tf-convert).", cause) from None


def save_model_dir(model: keras.Model, directory: str,
                   config: AlbertConfig | None = None, task_info: TaskInfo | None = None,
                   vocab_file: str | None = None, overwrite: bool = True,
                   inputs: Iterable[tuple[str, str | None]] = (),
                   flag: str = "model directory", kind: str = outputs.MODEL_DIRECTORY) -> str:
    """Writes ``config.json``, name-keyed weights and, when given, ``task.json`` and a
    copy of ``vocab_file`` to ``directory``: a SentencePiece model as ``vocab.model``, a
    WordPiece vocabulary as ``vocab.txt`` (the kind read from the content; ``task.json``
    records it as ``vocab_type``).

    Written through `albert_tf.outputs.staged_output`: a staged sibling renamed into place,
    so a crash never leaves a half-written model directory. ``overwrite`` replaces only a
    model directory albert-tf wrote earlier (the trainer rewrites ``best/`` this way), of
    the same ``kind`` (`albert_tf.outputs.MODEL_DIRECTORY`: written by training; a
    converter passes its own); a directory holding anything else, or one of ``inputs``
    (``(flag, path)`` pairs), is refused with an `albert_tf.outputs.OutputError`.
    """
    config = config or getattr(model, "albert_config", None)
    if config is None:
        raise ValueError("save_model_dir needs the AlbertConfig (model.albert_config is unset).")
    vocab_type = None
    if vocab_file is not None:
        if not os.path.exists(vocab_file):
            raise FileNotFoundError(f"vocabulary file {vocab_file!r} does not exist.")
        vocab_type = vocab_lib.vocabulary_kind(vocab_file)
        task_info = _with_vocab_type(task_info, vocab_type, vocab_file)
    with outputs.staged_output(directory, kind=kind, inputs=inputs,
                               overwrite=overwrite, flag=flag) as tmp:
        config.to_json(os.path.join(tmp, CONFIG_FILE))
        write_weights(named_weights(model), os.path.join(tmp, WEIGHTS_PREFIX))
        if task_info is not None:
            task_info.to_json(os.path.join(tmp, TASK_FILE))
        if vocab_type is not None:
            shutil.copyfile(vocab_file, os.path.join(tmp, vocab_lib.file_name(vocab_type)))
    return os.path.abspath(os.path.expanduser(directory))


def _with_vocab_type(task_info: TaskInfo | None, vocab_type: str,
                     vocab_file: str) -> TaskInfo | None:
    """``task_info`` recording ``vocab_type`` (an error when it already says another)."""
    if task_info is None or task_info.vocab_type == vocab_type:
        return task_info
    if task_info.vocab_type is not None:
        raise ValueError(f"task_info.vocab_type is {task_info.vocab_type!r} but {vocab_file} is a "
                         f"{vocab_type} vocabulary; pass the vocabulary the model was trained "
                         "with.")
    return dataclasses.replace(task_info, vocab_type=vocab_type)


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
    info = TaskInfo.from_json(path)
    if info.vocab_type is None:      # written before vocab_type: the file name says it
        try:
            info = dataclasses.replace(info, vocab_type=vocab_lib.find_vocabulary(directory)[0])
        except vocab_lib.VocabularyError:
            pass                     # none or both: `vocab_path` says so where it matters
    return info


def recorded_casing(directory: str) -> bool | None:
    """The ``do_lower_case`` a model directory records: ``task.json``'s (finetuned models),
    else ``tokenizer_config.json``'s (converted models); ``None`` when it records none."""
    if os.path.isfile(os.path.join(directory, TASK_FILE)):
        return load_task_info(directory).do_lower_case
    return vocab_lib.read_casing(directory)


def vocab_path(directory: str) -> str:
    """The vocabulary shipped in a model directory, ``vocab.model`` (SentencePiece) or
    ``vocab.txt`` (WordPiece); a one-line `CheckpointError` when it has neither or both."""
    try:
        return vocab_lib.find_vocabulary(directory)[1]
    except vocab_lib.VocabularyError as e:
        raise CheckpointError(str(e)) from e


def load_encoder(directory: str, **build_kwargs) -> keras.Model:
    """The encoder of a model directory, with its weights (heads in the directory ignored)."""
    from albert_tf.networks.encoder import build_encoder
    model = build_encoder(load_config_from_dir(directory), **build_kwargs)
    restore_weights(model, directory)
    return model


def pretrainer_prefixes() -> tuple[str, ...]:
    """The weight-name prefixes a pretrainer directory must have: the embeddings and the
    pretraining head's layers (``("embeddings/", "mlm/", "sop/")``)."""
    return ("embeddings/", *(f"{layer}/" for layer in heads_lib.get("pretraining").head_layers))


def load_pretrainer(directory: str, **build_kwargs) -> keras.Model:
    """The pretrainer (encoder + MLM + SOP heads) of a model directory, with its weights."""
    from albert_tf.models.pretrainer import build_pretrainer
    model = build_pretrainer(load_config_from_dir(directory), **build_kwargs)
    restore_weights(model, directory, required=pretrainer_prefixes())
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


def __getattr__(name: str):
    """``HEADS``: the names of the trained heads, read from the registry when asked (kept
    for existing imports; `albert_tf.heads.registry.HEADS` is the registry)."""
    if name == "HEADS":
        return tuple(heads_lib.HEADS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
