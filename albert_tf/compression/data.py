"""Task data and Keras ``fit`` plumbing for the compression stages.

TF-MOT is built around ``model.fit`` (pruning needs its step callback, QAT's
quantizers run as layer updates), so every stage trains with ``fit`` on the task's
training split, with the training library's optimizer (`build_optimizer`: AdamW or
LAMB, warmup + linear decay), and is scored on the dev split. Test splits are never
used.

The data of a GLUE-style task (classification, regression) is `TaskInputs`; a head trained
from a custom file of its own format (``Head.file_header``: multiple choice, token
classification) compresses on its training task's datasets of ``<data_dir>/train.tsv`` and
``dev.tsv`` (`HeadTaskInputs`), with its Keras loss (``Head.keras_loss``) and its training
task's dev metrics.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Sequence

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import TaskInfo


@dataclasses.dataclass
class TaskInputs:
    """A task's examples and tokenizer, ready to make datasets."""

    name: str
    train: list
    dev: list
    label_list: list | None
    is_regression: bool
    tokenizer: object
    max_seq_length: int

    def train_dataset(self, batch_size: int, seed: int = 0) -> tf.data.Dataset:
        """Shuffled, length-bucketed, repeated ``(features, labels)`` batches."""
        from albert_tf.data.task_data import classification_dataset
        return classification_dataset(
            self.train, self.tokenizer, self.max_seq_length, batch_size, is_training=True,
            seed=seed, label_list=self.label_list, is_regression=self.is_regression,
            drop_remainder=True).repeat()

    def dev_dataset(self, batch_size: int, examples: Sequence | None = None) -> tf.data.Dataset:
        from albert_tf.data.task_data import classification_dataset
        return classification_dataset(
            list(examples if examples is not None else self.dev), self.tokenizer,
            self.max_seq_length, batch_size, is_training=False, label_list=self.label_list,
            is_regression=self.is_regression)

    def encoded(self, examples: Sequence, seq_length: int | None = None):
        """``(features dict of int32 [n, seq_length], labels)``, padded to ``seq_length``."""
        from albert_tf.data.task_data import encode_examples
        seq = seq_length or self.max_seq_length
        words, types, labels = encode_examples(examples, self.tokenizer, seq, self.label_list,
                                               self.is_regression)
        n = len(words)
        out = {name: np.zeros((n, seq), np.int32)
               for name in ("input_word_ids", "input_mask", "input_type_ids")}
        out["input_word_ids"][:] = self.tokenizer.pad_id
        for i, (w, t) in enumerate(zip(words, types)):
            out["input_word_ids"][i, :len(w)] = w
            out["input_type_ids"][i, :len(t)] = t
            out["input_mask"][i, :len(w)] = 1
        return out, np.asarray(labels)

    @property
    def loss(self) -> keras.losses.Loss:
        """The Keras loss of the task's model (`task_loss`)."""
        return task_loss(self.is_regression)

    def fit_metrics(self) -> list:
        return fit_metrics(self.is_regression)

    def evaluate(self, model: keras.Model, batch_size: int) -> dict:
        """Dev metrics of ``model`` (`evaluate`)."""
        return evaluate(model, self.dev_dataset(batch_size), self.is_regression)


@dataclasses.dataclass
class HeadTaskInputs:
    """The data of a head trained from a custom file of its own format: its training task
    (``task``, an `albert_tf.training.task_base.Task`) reading ``train.tsv`` / ``dev.tsv``,
    the head's Keras loss, the task's dev metrics. Only the pruning and QAT stages use it."""

    name: str
    task: object
    loss: object
    label_list: list | None
    max_seq_length: int
    is_regression = False

    def fit_metrics(self) -> list:
        """Nothing beside the loss (the dev metrics are the training task's)."""
        return []

    def _split(self, split: str, batch_size: int, is_training: bool, seed: int = 0):
        data = copy.deepcopy(self.task.config.task.train_data)
        data.split, data.global_batch_size, data.is_training = split, batch_size, is_training
        data.shuffle_seed = seed
        return self.task.build_inputs(data)

    def train_dataset(self, batch_size: int, seed: int = 0) -> tf.data.Dataset:
        """Shuffled, repeated ``(features, labels)`` batches of the train split."""
        return self._split("train", batch_size, True, seed).repeat()

    def dev_dataset(self, batch_size: int) -> tf.data.Dataset:
        return self._split("dev", batch_size, False)

    def evaluate(self, model: keras.Model, batch_size: int) -> dict:
        """The training task's dev metrics of ``model`` and ``examples``."""
        task, collected = self.task, {}
        for inputs in self.dev_dataset(batch_size):
            outputs = task.eval_outputs(inputs, model(task.features(inputs), training=False))
            for key, value in outputs.items():
                collected.setdefault(key, []).append(np.asarray(value))
        collected = {k: np.concatenate(v, axis=0) for k, v in collected.items()}
        examples = len(next(iter(collected.values())))
        return {**{k: float(v) for k, v in task.reduce_eval(collected).items()},
                "examples": examples}


def load_head_inputs(head, task_info: TaskInfo, data_dir: str, vocab_file: str,
                     task_name: str = "", max_seq_length: int = 0) -> HeadTaskInputs:
    """`HeadTaskInputs` of ``head`` (its ``file_header``) from ``<data_dir>/train.tsv`` and
    ``dev.tsv``, the labels in ``task_info``'s order."""
    import os

    from albert_tf.training.experiment_config import ExperimentConfig
    config = ExperimentConfig()
    task = config.task
    task.type, task.name = head.task_type, task_name or task_info.task
    task.train_file, task.dev_file = (os.path.join(data_dir, f"{split}.tsv")
                                      for split in ("train", "dev"))
    for path in (task.train_file, task.dev_file):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"a {head.name} model compresses on {path}, which does not "
                                    f"exist; set data.data_dir to the folder of its train.tsv "
                                    f"and dev.tsv.")
    task.vocab_file, task.do_lower_case = vocab_file, task_info.do_lower_case
    task.max_seq_length = max_seq_length or task_info.max_seq_length
    task.label_list = list(task_info.label_list or [])
    return HeadTaskInputs(task.name, head.training_task(config), head.keras_loss(),
                          task.label_list or None, task.max_seq_length)


def load_task_inputs(task_info: TaskInfo, data_dir: str, vocab_file: str,
                     task_name: str = "", max_seq_length: int = 0):
    """The examples of ``task_name`` (default ``task_info.task``) and the tokenizer of
    ``vocab_file``: SentencePiece or WordPiece (`albert_tf.text.vocabulary.load_tokenizer`);
    for a head read from a custom file of its own format, `load_head_inputs`."""
    from albert_tf import resources
    from albert_tf.data.task_data import load_task
    from albert_tf.heads import registry as heads
    from albert_tf.text.vocabulary import load_tokenizer
    head = heads.get(task_info.head)
    if head.file_header:
        return load_head_inputs(head, task_info, data_dir, vocab_file, task_name,
                                max_seq_length)
    name = task_name or task_info.task
    try:
        data = load_task(name, data_dir)       # a GLUE directory or the data root with glue/
    except Exception as e:  # noqa: BLE001  (TaskDataError, missing directory)
        raise FileNotFoundError(f"task {name!r}: no data under {data_dir} ({e}); "
                                f"{resources.data_dir_fix()} to the data directory.") from None
    tokenizer = load_tokenizer(vocab_file, do_lower_case=task_info.do_lower_case)
    label_list = list(data.label_list) if data.label_list else None
    return TaskInputs(name, data.train, data.dev, label_list, bool(data.is_regression),
                      tokenizer, max_seq_length or task_info.max_seq_length)


def default_data_dir(data_dir: str) -> str:
    """``data_dir``, else ``$ALBERT_TF_DATA_DIR``; `albert_tf.resources.DataDirError` if
    neither names an existing directory."""
    from albert_tf import resources
    return resources.data_dir(data_dir or None)


# ------------------------------------------------------------------------------ fitting
def task_loss(is_regression: bool):
    if is_regression:
        return keras.losses.MeanSquaredError()
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def fit_metrics(is_regression: bool) -> list:
    """What ``fit`` reports beside the loss: the accuracy of classification."""
    return [] if is_regression else [keras.metrics.SparseCategoricalAccuracy(name="acc")]


def make_optimizer(optimizer_config, train_steps: int, learning_rate: float = 0.0):
    """The training library's optimizer for a stage of ``train_steps`` steps."""
    from albert_tf.training.optimization import build_optimizer
    cfg = copy.deepcopy(optimizer_config)
    if learning_rate:
        cfg.learning_rate = learning_rate
    return build_optimizer(cfg, max(1, train_steps))


def compile_stage(model: keras.Model, optimizer_config, train_steps: int,
                  learning_rate: float = 0.0, is_regression: bool = False,
                  run_eagerly: bool = False, loss=None, metrics=None) -> keras.Model:
    """``model`` compiled for a stage (``loss`` and ``metrics`` of ``fit``: default
    `task_loss` and `fit_metrics`)."""
    if metrics is None:
        metrics = fit_metrics(is_regression)
    model.compile(optimizer=make_optimizer(optimizer_config, train_steps, learning_rate),
                  loss=loss or task_loss(is_regression), metrics=metrics,
                  run_eagerly=run_eagerly)
    return model


def fit_steps(model: keras.Model, dataset: tf.data.Dataset, steps: int, callbacks=(),
              log_every: int = 0) -> dict:
    """``steps`` optimizer steps of ``fit`` (one "epoch"); returns the last logs."""
    if steps <= 0:
        return {}
    verbose = 2 if log_every else 0
    history = model.fit(dataset.map(_single_output), steps_per_epoch=steps, epochs=1,
                        callbacks=list(callbacks), verbose=verbose)
    return {k: float(v[-1]) for k, v in history.history.items()}


def _single_output(features, labels):
    return features, labels


def predict_logits(model: keras.Model, dataset: tf.data.Dataset, key: str = "logits"):
    """Concatenated model outputs and labels over ``dataset``."""
    outputs, labels = [], []
    fn = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    for features, y in dataset:
        out = fn(features)
        out = out[key] if isinstance(out, dict) else out
        outputs.append(np.asarray(out, np.float32))
        labels.append(np.asarray(y))
    return np.concatenate(outputs), np.concatenate(labels)


def evaluate(model: keras.Model, dataset: tf.data.Dataset, is_regression: bool = False) -> dict:
    """Dev metrics: ``accuracy`` (classification) or ``mse`` (regression), ``examples``."""
    key = "value" if is_regression else "logits"
    outputs, labels = predict_logits(model, dataset, key)
    if is_regression:
        return {"mse": float(np.mean((outputs.reshape(-1) - labels) ** 2)),
                "examples": len(labels)}
    return {"accuracy": float(np.mean(outputs.argmax(-1) == labels)), "examples": len(labels)}
