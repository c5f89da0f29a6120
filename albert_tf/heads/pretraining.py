"""The pretraining head: a pretrained model directory (masked LM + sentence order)."""

from __future__ import annotations

from albert_tf.heads.base import Head, lazy_tf
from albert_tf.heads.registry import register


@register
class PretrainingHead(Head):
    """Masked LM + sentence order (a pretrained model directory): serves ``pooled_output``."""

    name = "pretraining"
    head_layers = ("mlm", "sop")
    task_type = "pretraining"
    onnx_outputs = ("sequence_output", "pooled_output")
    hf_task = "ForPreTraining"

    def training_task(self, config, **kwargs):
        from albert_tf.training.tasks import PretrainingTask
        return PretrainingTask(config, **kwargs)

    def build_model(self, config, info, **build_kwargs):
        from albert_tf.models.pretrainer import build_pretrainer
        return build_pretrainer(config, **build_kwargs)

    def outputs(self, source, outputs, features, sep_id):
        tf = lazy_tf()
        return {"pooled_output": tf.cast(outputs["pooled_output"], tf.float32)}

    def onnx_graph(self, g, pooled, source, dims, seq):
        """``sequence_output [B, S, H]`` and ``pooled_output [B, H]`` (pretrained models)."""
        from onnx import TensorProto, helper
        hidden = source.config.hidden_size
        g.node("Identity", [pooled], "pooled_output")
        return [helper.make_tensor_value_info("sequence_output", TensorProto.FLOAT,
                                              dims + [seq, hidden]),
                helper.make_tensor_value_info("pooled_output", TensorProto.FLOAT,
                                              dims + [hidden])]

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        encoded = source.encoder(features, training=False)
        return {k: tf.cast(v, tf.float32) for k, v in encoded.items()}
