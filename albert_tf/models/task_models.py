"""What the task models' builders share: the encoder under a head (`encode`), the head's
dropout rate and Dense layer. Each head builds its model in its own module
(`albert_tf.heads`: `build_classifier`, `build_regressor`, `build_span_extractor`,
`build_token_classifier`, `build_multiple_choice`, still importable from here).

Each builder returns one flat functional model whose encoder layers carry the
canonical names of `albert_tf.networks.encoder`, so weights from a pretrainer load
into it by name (`albert_tf.checkpoints.restore_encoder_weights`).
"""

from __future__ import annotations

from albert_tf.backend import keras
from albert_tf.config import AlbertConfig
from albert_tf.layers.util import truncated_normal
from albert_tf.lazy import lazy_exports
from albert_tf.networks.encoder import encoder_graph, model_inputs

# The builders live beside their heads; the old names still resolve (PEP 562).
_BUILDERS = {"build_classifier": "albert_tf.heads.classification",
             "build_regressor": "albert_tf.heads.classification",
             "build_span_extractor": "albert_tf.heads.question_answering",
             "build_token_classifier": "albert_tf.heads.token_classification",
             "build_multiple_choice": "albert_tf.heads.multiple_choice"}
__getattr__, __dir__ = lazy_exports(__name__, _BUILDERS, globals())


def dropout_rate(config: AlbertConfig) -> float:
    """The dropout before a task head: ``classifier_dropout_prob``, else the hidden one."""
    if config.classifier_dropout_prob is not None:
        return config.classifier_dropout_prob
    return config.hidden_dropout_prob


def head_dense(units: int, config: AlbertConfig, name: str) -> keras.layers.Dense:
    """A head's float32 Dense layer ``name`` (kernel: truncated normal, ``initializer_range``)."""
    return keras.layers.Dense(units, kernel_initializer=truncated_normal(config.initializer_range),
                              name=name, dtype="float32")


def encode(config: AlbertConfig, seq_length: int | None):
    """``(inputs, encoded)``: the three ``[B, S]`` id inputs and the encoder's outputs on them
    (``sequence_output [B, S, H]``, ``pooled_output [B, H]``)."""
    inputs = model_inputs(seq_length=seq_length)
    encoded = encoder_graph(config, inputs)
    encoded.pop("_embeddings")
    return inputs, encoded
