"""The training tasks' base classes: `Task` (the trainer's interface) and `TextTask` (a
finetuning task over text examples: its data, tokenizer, splits, features and labels).

A task has the same small interface for pretraining and every finetuning task, so one
trainer (`albert_tf.training.trainer`) runs them all:

``build_model()``                        the Keras model: its head's (`Task.head`), the
                                         model export and compression build too
``initialize(model, path)``              load ``--init_checkpoint`` (name-keyed weights)
``build_inputs(data_config, ctx)``       a per-replica-batched `tf.data.Dataset`
``train_loss(inputs, outputs)``          ``(loss, sums)``: the replica's share of the
                                         global mean loss and metric numerators/denominators
``eval_outputs(inputs, outputs)``        per-example tensors gathered over replicas
``reduce_eval(outputs)``                 NumPy metrics of a whole split
``main_metric`` / ``main_metric_comp``   the metric that selects the best checkpoint

Each head's training task lives beside its head (`albert_tf.heads`, e.g.
`albert_tf.heads.token_classification.TokenClassificationTask`) and subclasses these. Nothing
here imports TensorFlow at import time (the heads are imported without it; the methods that
need it import it).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from albert_tf import resources
from albert_tf.data import input_checks
from albert_tf.hyperparams import ConfigValueError
from albert_tf.training.preflight import TASK_FILES, task_file

if TYPE_CHECKING:
    from albert_tf.config import AlbertConfig
    from albert_tf.training.experiment_config import ExperimentConfig

MODEL_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
DEFAULT_VOCAB = resources.DEFAULT_VOCAB
VOCAB_FILE_HINT = input_checks.VOCAB_FILE_HINT


def lazy_tf():
    """TensorFlow, imported on first use."""
    from albert_tf.backend import tf
    return tf


def resolve_path(path: str) -> str:
    """A path as given, or the shipped file for an ``official_configs/...`` path
    (`albert_tf.resources.resolve`)."""
    return resources.resolve(path)


def model_config(config: "ExperimentConfig") -> "AlbertConfig":
    """The AlbertConfig of the experiment: ``model.config`` (or the init checkpoint's
    config.json) with every ``model.<field>`` that is set (`albert_tf.hyperparams.
    apply_model_overrides`: validated as a new config, errors name ``model.<field>``)."""
    from albert_tf.checkpoints import CheckpointError, load_config_from_dir
    from albert_tf.config import load_config
    from albert_tf.hyperparams import apply_model_overrides
    params = config.model
    init = resolve_path(params.init_checkpoint)
    if params.config:
        albert = load_config(resolve_path(params.config))
    elif init and os.path.isdir(init):
        albert = load_config_from_dir(init)
    else:
        raise CheckpointError("model.config is empty and init_checkpoint is not a model "
                              "directory with config.json; set --model_config.")
    return apply_model_overrides(albert, params, "model")


def custom_task_files(task) -> tuple[str, str | None, str | None]:
    """``task.train_file``/``dev_file``/``test_file`` resolved (`preflight.task_file`: a
    relative path against the current directory, else the data directory), each checked
    to exist."""
    from albert_tf.data import task_data as data_tasks
    if not task.train_file:
        raise data_tasks.TaskDataError(
            f"task.type={task.type}: set task.train_file (and task.dev_file); "
            f"{data_tasks.known_tasks(squad=False)}.")
    data_dir = resources.data_dir_or_none(resolve_path(task.data_dir) or None)
    train, dev, test = (task_file(task, key, data_dir) for key in TASK_FILES)
    return train, dev, test


class Task:
    """Base class; see the module docstring."""

    main_metric = "loss"
    main_metric_comp = "lower"

    def __init__(self, config: "ExperimentConfig"):
        self.config = config
        self.albert_config = model_config(config)

    # ---- model
    @property
    def head(self):
        """The head this task trains (`albert_tf.heads.base.Head`): the one its `TaskInfo`
        (`export_info`) names, which the model directory's ``task.json`` records."""
        import albert_tf.heads.registry as heads
        return heads.get(self.export_info()[0].head)

    def model_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the head's model builder for training (none by default)."""
        return {}

    def build_model(self):
        """The task's Keras model, built by its head (`albert_tf.heads.base.Head.
        build_model`) from the task's `TaskInfo`: the same model export, compression and
        the converters build from the finished run's ``task.json``."""
        info, _ = self.export_info()
        return self.head.build_model(self.albert_config, info, **self.model_kwargs())

    def initialize(self, model, path: str):
        from albert_tf.checkpoints import restore_weights
        report = restore_weights(model, resolve_path(path), required=("embeddings/",))
        logging.info("init_checkpoint %s: %s", path, report.summary())
        return report

    # ---- data
    def build_inputs(self, data_config, input_context=None):
        raise NotImplementedError

    @staticmethod
    def per_replica_batch_size(global_batch_size: int, input_context) -> int:
        if input_context is None:
            return global_batch_size
        return input_context.get_per_replica_batch_size(global_batch_size)

    def seed(self, data_config) -> int | None:
        """The split's shuffle seed: ``shuffle_seed``, else ``runtime.seed``."""
        seed = data_config.shuffle_seed
        return self.config.runtime.seed if seed is None else seed

    # ---- loss / metrics
    def train_metric_names(self) -> list[str]:
        """Names of the ratios logged during training (each has _num and _den sums)."""
        return []

    def features(self, inputs) -> dict:
        raise NotImplementedError

    def train_loss(self, inputs, outputs):
        raise NotImplementedError

    def eval_outputs(self, inputs, outputs) -> dict:
        raise NotImplementedError

    def reduce_eval(self, outputs):
        raise NotImplementedError

    def tokens(self, inputs):
        """The number of real (unpadded) tokens of a batch (a float32 scalar tensor)."""
        tf = lazy_tf()
        features = self.features(inputs)
        return tf.reduce_sum(tf.cast(features["input_mask"], tf.float32))

    def predict(self, model, outputs, path: str) -> str:
        raise NotImplementedError(f"--mode=predict is not supported for {type(self).__name__}.")

    def export_info(self):
        """``(TaskInfo or None, vocab file or None)`` written into exported model dirs."""
        return None, None

    def vocab_file(self) -> str:
        """``task.vocab_file`` (default: the project's SentencePiece model) resolved: a
        SentencePiece model or a WordPiece ``vocab.txt``, or the one a model directory
        holds (`albert_tf.text.vocabulary.find_vocabulary`)."""
        vocab = resolve_path(self.config.task.vocab_file or DEFAULT_VOCAB)
        if os.path.isdir(vocab):
            from albert_tf.text.vocabulary import find_vocabulary
            return find_vocabulary(vocab)[1]
        return vocab

    def _vocab_or_none(self):
        vocab = self.vocab_file()
        return vocab if os.path.exists(vocab) else None


class TextTask(Task):
    """A finetuning task on text examples (`albert_tf.data.task_data.TaskData`): its data
    (`load_task_data`, read once), the tokenizer of ``task.vocab_file``, the splits and the
    ``(features, labels)`` batches."""

    main_metric_comp = "higher"

    def __init__(self, config: "ExperimentConfig", task_data=None, tokenizer=None):
        super().__init__(config)
        self._task_data = task_data
        self._tokenizer = tokenizer

    # ---- data
    @property
    def task_data(self):
        if self._task_data is None:
            self._task_data = self.load_task_data()
        return self._task_data

    def load_task_data(self):
        """The task's `TaskData` (its examples and labels), read from its files."""
        raise NotImplementedError

    @property
    def tokenizer(self):
        """`AlbertTokenizer` or `WordPieceTokenizer`, by the kind of ``task.vocab_file``."""
        if self._tokenizer is None:
            from albert_tf.text.vocabulary import load_tokenizer
            vocab = self.vocab_file()
            if not os.path.exists(vocab):
                raise FileNotFoundError(f"vocab_file {vocab!r} does not exist; pass "
                                        f"--vocab_file={VOCAB_FILE_HINT}.")
            tokenizer = load_tokenizer(vocab, do_lower_case=self.config.task.do_lower_case)
            rows = self.albert_config.vocab_size
            if tokenizer.vocab_size > rows:
                raise ConfigValueError(
                    f"task.vocab_file={vocab} has {tokenizer.vocab_size} tokens but the "
                    f"model's embedding has {rows} rows (model.vocab_size): ids from {rows} "
                    "on would index past it; use the vocabulary the model was trained with, "
                    f"or model.vocab_size={tokenizer.vocab_size} for a new model.")
            self._tokenizer = tokenizer
        return self._tokenizer

    def examples(self, split: str):
        data = self.task_data
        if not hasattr(data, split):
            raise ValueError(f"task {self.config.task.name!r} has no {split!r} split.")
        examples = getattr(data, split)
        if not examples:
            from albert_tf.data import task_data as data_tasks
            from albert_tf.data.task_checks import SPLIT_FILES, missing_split
            task = self.config.task
            if task.train_file and split in ("dev", "test") \
                    and not getattr(task, SPLIT_FILES[split]):
                mode = "eval" if split == "dev" else "predict"
                raise data_tasks.TaskDataError(missing_split(task.name or "custom", split,
                                                             mode))
            raise data_tasks.TaskDataError(f"task {task.name!r}: the {split!r} split has no "
                                           "example (its file is missing or empty).")
        return examples

    # ---- features / labels
    @staticmethod
    def features(inputs) -> dict:
        features = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
        return {k: features[k] for k in MODEL_INPUTS}

    @staticmethod
    def labels(inputs):
        if isinstance(inputs, (tuple, list)):
            return inputs[1]
        return inputs["label_ids"] if "label_ids" in inputs else inputs["labels"]
