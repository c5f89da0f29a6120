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
    decoded_output = "probabilities"
    distill_output = "logits"

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import ClassificationTask
        return ClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_classifier
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

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import ClassificationTask
        return ClassificationTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.task_models import build_regressor
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
