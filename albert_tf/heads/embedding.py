"""The embedding head: a sentence embedding an export puts on any model's encoder."""

from __future__ import annotations

import numpy as np

from albert_tf.heads.base import Head, lazy_tf
from albert_tf.heads.registry import register


@register
class EmbeddingHead(Head):
    """A sentence embedding from any model's encoder (an export view, never trained):
    ``embedding [B, H]``, the mean of ``sequence_output`` over the mask, L2-normalized (what
    MediaPipe ``TextEmbedder`` reads; cosine similarity is then a dot product).

    ``albert-tf-export --format=tflite --head=embedding`` exports it from a finetuned or a
    pretrained model directory.
    """

    name = "embedding"
    export_only = True
    export_help = "mean over the mask, L2-normalized"
    sdk_outputs = {"embedding": "Mean of the last hidden states over the mask, L2-normalized."}
    sdk_runners = ("MediaPipe TextEmbedder",)
    answer_keys = ("embedding",)

    def text_inputs(self, info):
        return ("text",)

    def runner_pair(self, meta):
        return False

    def lite_outputs(self, source, model, features, sep_id):
        tf = lazy_tf()
        sequence = tf.cast(source.encoder(features, training=False)["sequence_output"],
                           tf.float32)                                     # [B, S, H]
        mask = tf.cast(features["input_mask"], tf.float32)[:, :, tf.newaxis]  # [B, S, 1]
        mean = tf.reduce_sum(sequence * mask, axis=1) / tf.maximum(
            tf.reduce_sum(mask, axis=1), 1.0)                              # [B, H]
        return {"embedding": tf.math.l2_normalize(mean, axis=-1)}

    def decode(self, runner, outs, rows, example):
        return {"embedding": np.asarray(outs[0]["embedding"], float).reshape(-1).tolist()}
