"""Sequence-level heads on the pooled ``[CLS]``: classification (``logits [B, C]``) and
regression (``value [B, 1]``, STS-B), both trained by the classification task beside them
(`ClassificationTask`: GLUE, SentEval and custom TSV/CSV tasks, `load_task_data`).
TensorFlow is imported only when a function runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import os

import numpy as np

from albert_tf import resources
from albert_tf.data.task_data import SENTEVAL_TASKS
from albert_tf.heads.base import (Head, lazy_tf, smoke_sentences, softmax_and_argmax,
                                  write_smoke_tsv)
from albert_tf.heads.registry import register
from albert_tf.training.task_base import TextTask, custom_task_files, resolve_path

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig


@register
class ClassificationHead(Head):
    """Sequence (pair) classification: ``logits [B, C]`` from the pooled ``[CLS]``."""

    name = "classification"
    head_layers = ("classifier",)
    task_type = "classification"
    labels_required = True
    sdk_outputs = {"probabilities": "Probabilities of the labels."}
    sdk_runners = ("Task Library BertNLClassifier", "MediaPipe TextClassifier")
    sdk_label_scores = True
    onnx_outputs = ("probabilities", "label_id")
    keras_hub_task = "TextClassifier"
    keras_hub_dense = "classifier"
    hf_task = "ForSequenceClassification"              # pooler -> dropout -> classifier
    hf_dense = "classifier"
    hf_problem_type = "single_label_classification"
    decoded_output = "probabilities"
    distill_output = "logits"
    answer_keys = ("label", "label_id", "probabilities")

    def training_task(self, config, **kwargs):
        return ClassificationTask(config, **kwargs)

    def smoke_files(self, directory, vocab):
        """A custom TSV task (``sentence``, ``label`` 0/1)."""
        rows = [(text, i % 2) for i, text in enumerate(smoke_sentences())]
        return smoke_tsv_overrides(write_smoke_tsv(directory, ("sentence", "label"), rows),
                                   vocab)

    def build_model(self, config, info, **build_kwargs):
        return build_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        return softmax_and_argmax(outputs["logits"])

    def onnx_graph(self, g, pooled, source, dims, seq):
        """``probabilities [B, C]`` (softmax of the logits) and ``label_id`` int32 ``[B]``."""
        from onnx import TensorProto, helper

        from albert_tf.export.onnx import dense
        logits = dense(g, pooled, source.model.get_layer("classifier"), "classifier")
        g.node("Softmax", [logits], "probabilities", axis=-1)
        g.node("Cast", [g.node("ArgMax", [logits], "argmax", axis=-1, keepdims=0)],
               "label_id", to=TensorProto.INT32)
        classes = len(source.task_info.label_list)
        return [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                              dims + [classes]),
                helper.make_tensor_value_info("label_id", TensorProto.INT32, dims)]

    def serving_strings(self, module, result, features, texts):
        return {"label": lazy_tf().gather(module.label_names, result["label_id"])}

    def decode(self, runner, outs, rows, example):
        probs = outs[0]["probabilities"].astype(float)
        label_id = int(np.argmax(probs))
        return {"label": runner.labels[label_id] if runner.labels else str(label_id),
                "label_id": label_id, "probabilities": probs.tolist()}


@register
class RegressionHead(Head):
    """Sequence regression (STS-B): ``value [B, 1]``; trained by the classification task."""

    name = "regression"
    head_layers = ("regressor",)
    onnx_outputs = ("value",)
    hf_task = "ForSequenceClassification"              # num_labels=1
    hf_dense = "regressor"
    hf_problem_type = "regression"
    decoded_output = "value"
    answer_keys = ("value",)

    def training_task(self, config, **kwargs):
        return ClassificationTask(config, **kwargs)

    def keras_loss(self):
        """The squared error of ``value`` against the float labels."""
        from albert_tf.backend import keras
        return keras.losses.MeanSquaredError()

    def smoke_files(self, directory, vocab):
        """A custom TSV task with float labels (``sentence``, ``score``)."""
        rows = [(text, f"{i % 5}.5") for i, text in enumerate(smoke_sentences())]
        files = write_smoke_tsv(directory, ("sentence", "score"), rows)
        return smoke_tsv_overrides(files, vocab) + ["task.label_column=score",
                                                    "task.is_regression=true"]

    def build_model(self, config, info, **build_kwargs):
        return build_regressor(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])}

    def onnx_graph(self, g, pooled, source, dims, seq):
        """``value [B]``."""
        from onnx import TensorProto, helper

        from albert_tf.export.onnx import dense
        value = dense(g, pooled, source.model.get_layer("regressor"), "regressor")
        g.node("Reshape", [value, g.weight("const/flat", np.array([-1], np.int64))], "value")
        return [helper.make_tensor_value_info("value", TensorProto.FLOAT, dims)]

    def decode(self, runner, outs, rows, example):
        return {"value": float(np.reshape(outs[0]["value"], [-1])[0])}


def smoke_tsv_overrides(files: dict, vocab: str, task_type: str = "classification"
                        ) -> list[str]:
    """The overrides that train ``task_type`` on the custom files ``files`` (`write_smoke_tsv`)."""
    return [f"task.type={task_type}", "task.name=smoke", f"task.train_file={files['train']}",
            f"task.dev_file={files['dev']}", f"task.vocab_file={vocab}"]


# -------------------------------------------------------------------------- model
def build_classifier(config: "AlbertConfig", num_classes: int, seq_length: int | None = None,
                     name: str = "albert_classifier") -> "keras.Model":
    """Sequence classification: ``logits [B, num_classes]`` from the pooled ``[CLS]``."""
    from albert_tf.backend import keras
    from albert_tf.models.task_models import dropout_rate, encode, head_dense
    from albert_tf.networks.encoder import AlbertFunctionalModel
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}; use build_regressor "
                         "for a single real-valued output.")
    inputs, encoded = encode(config, seq_length)
    x = keras.layers.Dropout(dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    logits = head_dense(num_classes, config, "classifier")(x)
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


def build_regressor(config: "AlbertConfig", seq_length: int | None = None,
                    name: str = "albert_regressor") -> "keras.Model":
    """Sequence regression (e.g. STS-B): ``value [B, 1]`` from the pooled ``[CLS]``."""
    from albert_tf.backend import keras
    from albert_tf.models.task_models import dropout_rate, encode, head_dense
    from albert_tf.networks.encoder import AlbertFunctionalModel
    inputs, encoded = encode(config, seq_length)
    x = keras.layers.Dropout(dropout_rate(config), name="classifier_dropout")(
        encoded["pooled_output"])
    value = head_dense(1, config, "regressor")(x)
    return AlbertFunctionalModel(inputs, {"value": value}, albert_config=config, name=name)


# ------------------------------------------------------------------ training task
# SentEval tasks (SENTEVAL_TASKS) are read from <data_dir>/extra: ``label<TAB>sentence``,
# no header.


def _column(value: str):
    return int(value) if str(value).isdigit() else value


def load_task_data(task):
    """`TaskData` of ``task.name``: a GLUE task (from ``data_dir`` or ``data_dir/glue``),
    a SentEval task (``data_dir/extra``) or a custom TSV/CSV task (``task.train_file``)."""
    from albert_tf.data import task_data as data_tasks
    from albert_tf.training.preflight import check_task_name
    name = task.name.lower()
    check_task_name(task)
    if task.train_file:
        train, dev, test = custom_task_files(task)
        return data_tasks.load_tsv_task(
            train, dev, test, text_a_column=_column(task.text_a_column),
            text_b_column=_column(task.text_b_column) if task.text_b_column else None,
            label_column=_column(task.label_column), has_header=task.has_header,
            is_regression=task.is_regression, label_list=task.label_list or None,
            metric=task.metric or None, name=task.name or "custom")
    data_dir = resources.data_dir(resolve_path(task.data_dir) or None)

    def require(path, what):
        if not os.path.isfile(path):
            raise data_tasks.TaskDataError(f"task {task.name or 'custom'!r}: {what} {path} "
                                           f"not found; {resources.DATA_DIR_FIX}.")
        return path

    if name in SENTEVAL_TASKS:
        extra = os.path.join(data_dir, "extra")
        upper = name.upper()
        require(os.path.join(extra, f"{upper}_train.tsv"), "SentEval file")
        return data_tasks.load_tsv_task(
            os.path.join(extra, f"{upper}_train.tsv"), os.path.join(extra, f"{upper}_dev.tsv"),
            text_a_column=1, label_column=0, has_header=False, name=name)
    if data_tasks.find_glue_task_dir(data_dir, name) is None:
        raise data_tasks.TaskDataError(
            f"task {name!r}: GLUE file {data_tasks.expected_glue_file(data_dir, name)} not "
            f"found; {resources.DATA_DIR_FIX}.")
    return data_tasks.load_task(name, data_dir)


class ClassificationTask(TextTask):
    """Sentence(-pair) classification or regression: GLUE, SentEval, custom TSV tasks."""

    # ---- data
    def load_task_data(self):
        return load_task_data(self.config.task)

    @property
    def is_regression(self) -> bool:
        return bool(self.task_data.is_regression)

    @property
    def main_metric(self) -> str:  # type: ignore[override]
        from albert_tf.training import metrics as metrics_lib
        return metrics_lib.metric_key(getattr(self.task_data, "metric", "accuracy"))

    def build_inputs(self, data_config, input_context=None):
        from albert_tf.data.task_data import classification_dataset
        task = self.config.task
        seed = self.seed(data_config)
        # batch_size is global; training batches are length-bucketed and every batch is
        # padded to its longest sequence by the data module (bucket_window=1: no bucketing).
        return classification_dataset(
            self.examples(data_config.split), self.tokenizer, task.max_seq_length,
            data_config.global_batch_size, is_training=data_config.is_training, seed=seed,
            input_context=input_context,
            label_list=None if self.is_regression else self.task_data.label_list,
            is_regression=self.is_regression,
            bucket_window=50 if task.length_bucketing else 1)

    # ---- loss / metrics
    def train_metric_names(self) -> list[str]:
        return [] if self.is_regression else ["accuracy"]

    def train_loss(self, inputs, outputs):
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
        labels = self.labels(inputs)
        if self.is_regression:
            value = tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])
            per_example = tf.square(value - tf.reshape(tf.cast(labels, tf.float32), [-1]))
            loss, _, _ = metrics_lib.weighted_mean_loss(per_example)
            return loss, {}
        labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
        logits = tf.cast(outputs["logits"], tf.float32)
        loss, _, count = metrics_lib.weighted_mean_loss(metrics_lib.sparse_xent(labels, logits))
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels),
                          tf.float32)
        return loss, {"accuracy_num": tf.reduce_sum(correct), "accuracy_den": count}

    def eval_outputs(self, inputs, outputs) -> dict:
        tf = lazy_tf()
        labels = self.labels(inputs)
        if self.is_regression:
            return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1]),
                    "label": tf.reshape(tf.cast(labels, tf.float32), [-1])}
        return {"logits": tf.cast(outputs["logits"], tf.float32),
                "label": tf.reshape(tf.cast(labels, tf.int32), [-1])}

    def reduce_eval(self, outputs):
        from albert_tf.training import metrics as metrics_lib
        if self.is_regression:
            result = metrics_lib.regression_metrics(outputs["value"], outputs["label"])
            result["loss"] = result["mse"]
        else:
            logits, labels = outputs["logits"], outputs["label"]
            result = metrics_lib.classification_metrics(logits, labels)
            shifted = logits - logits.max(-1, keepdims=True)
            log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
            result["loss"] = float(-np.mean(log_probs[np.arange(len(labels)), labels])) \
                if len(labels) else 0.0
        result["examples"] = float(len(outputs["label"]))
        return result

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        data = self.task_data
        train = [e for e in (getattr(data, "train", None) or []) if e is not None]
        text_pair = any(getattr(e, "text_b", None) for e in train[:100])
        if self.is_regression:
            info = TaskInfo(task=self.config.task.name, head="regression",
                            max_seq_length=self.config.task.max_seq_length,
                            do_lower_case=self.config.task.do_lower_case, text_pair=text_pair)
        else:
            info = TaskInfo(task=self.config.task.name, head="classification",
                            label_list=tuple(str(v) for v in data.label_list),
                            max_seq_length=self.config.task.max_seq_length,
                            do_lower_case=self.config.task.do_lower_case, text_pair=text_pair)
        return info, self._vocab_or_none()

    def predict(self, model, outputs, path: str) -> str:
        with open(path, "w", encoding="utf-8") as f:
            f.write("index\tprediction\n")
            if self.is_regression:
                for i, v in enumerate(outputs["value"]):
                    f.write(f"{i}\t{float(v):.6f}\n")
            else:
                labels = list(self.task_data.label_list)
                for i, row in enumerate(outputs["logits"]):
                    f.write(f"{i}\t{labels[int(np.argmax(row))]}\n")
        return path
