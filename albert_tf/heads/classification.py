"""Sequence-level heads on the pooled ``[CLS]``: classification (``logits [B, C]``) and
regression (``value [B, 1]``, STS-B), both trained by the classification task."""

from __future__ import annotations

import numpy as np

from albert_tf.heads.base import Head, lazy_tf, softmax_and_argmax
from albert_tf.heads.registry import register


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

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import ClassificationTask
        return ClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_classifier
        return build_classifier(config, len(info.label_list), **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        return softmax_and_argmax(outputs["logits"])

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

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import ClassificationTask
        return ClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_regressor
        return build_regressor(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"value": tf.reshape(tf.cast(outputs["value"], tf.float32), [-1])}

    def decode(self, runner, outs, rows, example):
        return {"value": float(np.reshape(outs[0]["value"], [-1])[0])}
