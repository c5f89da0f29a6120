"""The token-classification head: a tag for every word. One module: the head (model, export,
runner, interop) and its training task (`TokenClassificationTask`, Model Garden's
``tasks/tagging.py``). TensorFlow is imported only when a function runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from albert_tf.heads.base import Head, lazy_tf, softmax_and_argmax
from albert_tf.heads.decoding import word_labels
from albert_tf.heads.registry import register
from albert_tf.training.task_base import TextTask, custom_task_files

if TYPE_CHECKING:
    from albert_tf.backend import keras
    from albert_tf.config import AlbertConfig


@register
class TokenClassificationHead(Head):
    """Tag every word: ``logits [B, S, T]``, trained on each word's first piece.

    Serving: ``text`` in; per piece ``token`` string, ``label`` string, ``label_id`` and
    ``probabilities`` out (``[B, S]``, ``[B, S, T]``; a word's tag is its first piece's).
    The runner answers per whitespace-separated word of the text, as training tags them
    (`word_labels`): ``words`` and ``labels``.
    """

    name = "token_classification"
    head_layers = ("token_classifier",)
    text_pair = False
    task_type = "token_classification"
    file_header = ("tokens", "tags")
    labels_required = True
    lite_tokenizer = False
    hf_task = "ForTokenClassification"                 # dropout -> classifier, no pooler
    hf_dense = "token_classifier"
    decoded_output = "probabilities"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        return TokenClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        return build_token_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        return softmax_and_argmax(outputs["logits"])

    def serving_strings(self, module, result, features, texts):
        tf = lazy_tf()
        return {"label": tf.gather(module.label_names, result["label_id"]),
                "token": module.tokenizer.id_to_token(features["input_word_ids"])}

    def decode(self, runner, outs, rows, example):
        text = example[0]
        _, spans = runner.tokenizer.encode_with_offsets(text)
        pieces = int(np.sum(rows[0]["input_mask"])) - 2          # [CLS] pieces [SEP]
        label_ids = np.argmax(outs[0]["probabilities"], -1)[1:pieces + 1]
        words, labels = word_labels(text, spans[:pieces], label_ids)
        return {"words": words, "labels": [runner.labels[i] for i in labels]}


# -------------------------------------------------------------------------- model
def build_token_classifier(config: "AlbertConfig", num_classes: int,
                           seq_length: int | None = None,
                           name: str = "albert_token_classifier") -> "keras.Model":
    """Per-token tagging (NER, POS): ``logits [B, S, num_classes]``."""
    from albert_tf.backend import keras
    from albert_tf.models.task_models import dropout_rate, encode, head_dense
    from albert_tf.networks.encoder import AlbertFunctionalModel
    inputs, encoded = encode(config, seq_length)
    x = keras.layers.Dropout(dropout_rate(config), name="classifier_dropout")(
        encoded["sequence_output"])
    logits = head_dense(num_classes, config, "token_classifier")(x)
    return AlbertFunctionalModel(inputs, {"logits": logits}, albert_config=config, name=name)


# ------------------------------------------------------------------ training task
class TokenClassificationTask(TextTask):
    """Tag every word (`albert_tf.data.task_data.load_token_classification_task` format): the
    loss and the metrics are on each word's first piece; main metric: micro F1 of the
    tags other than ``O`` (`albert_tf.training.metrics.tagging_metrics`)."""

    main_metric = "f1"

    def load_task_data(self):
        from albert_tf.data.task_data import load_token_classification_task
        task = self.config.task
        return load_token_classification_task(*custom_task_files(task),
                                              name=task.name or "tagging",
                                              label_list=task.label_list or None)

    def build_inputs(self, data_config, input_context=None):
        from albert_tf.data.task_data import token_classification_dataset
        return token_classification_dataset(
            self.examples(data_config.split), self.tokenizer, self.config.task.max_seq_length,
            data_config.global_batch_size, data_config.is_training,
            self.task_data.label_list, self.seed(data_config), input_context)

    def train_metric_names(self) -> list[str]:
        return ["accuracy"]

    def _parts(self, inputs, outputs):
        """``labels [B, S]`` (-1: not a word's first piece), their ``weights``, the
        cross-entropy ``[B, S]`` and the predicted tags ``[B, S]``."""
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
        labels = tf.cast(self.labels(inputs), tf.int32)                     # [B, S]
        logits = tf.cast(outputs["logits"], tf.float32)                     # [B, S, T]
        weights = tf.cast(labels >= 0, tf.float32)
        xent = metrics_lib.sparse_xent(tf.maximum(labels, 0), logits) * weights
        predictions = tf.argmax(logits, -1, output_type=tf.int32)
        return labels, weights, xent, predictions

    def train_loss(self, inputs, outputs):
        from albert_tf.training import metrics as metrics_lib
        tf = lazy_tf()
        labels, weights, xent, predictions = self._parts(inputs, outputs)
        loss, _, count = metrics_lib.weighted_mean_loss(xent, weights)
        correct = tf.cast(tf.equal(predictions, labels), tf.float32) * weights
        return loss, {"accuracy_num": tf.reduce_sum(correct), "accuracy_den": count}

    def eval_outputs(self, inputs, outputs) -> dict:
        tf = lazy_tf()
        labels, weights, xent, predictions = self._parts(inputs, outputs)
        return {"prediction": predictions, "label": labels,
                "xent": tf.reduce_sum(xent, -1), "words": tf.reduce_sum(weights, -1)}

    def reduce_eval(self, outputs):
        from albert_tf.training import metrics as metrics_lib
        result = metrics_lib.tagging_metrics(outputs["prediction"], outputs["label"],
                                             self.task_data.label_list)
        result["loss"] = float(np.sum(outputs["xent"]) / max(np.sum(outputs["words"]), 1.0))
        result["examples"] = float(len(outputs["label"]))
        return result

    def export_info(self):
        from albert_tf.checkpoints import TaskInfo
        task = self.config.task
        return (TaskInfo(task=task.name or "tagging", head="token_classification",
                         label_list=tuple(self.task_data.label_list),
                         max_seq_length=task.max_seq_length, do_lower_case=task.do_lower_case),
                self._vocab_or_none())

    def predict(self, model, outputs, path: str) -> str:
        labels = list(self.task_data.label_list)
        with open(path, "w", encoding="utf-8") as f:
            f.write("index\ttags\n")
            for i, (pred, gold) in enumerate(zip(outputs["prediction"], outputs["label"])):
                tags = [labels[int(p)] for p, g in zip(pred, gold) if g != -1]
                f.write(f"{i}\t{' '.join(tags)}\n")
        return path
