"""The ALBERT encoder network: embeddings, projection, shared transformer layers, pooler.

Every model of the package (encoder, pretrainer, task models) is one *flat* functional
graph built by `encoder_graph`, because TF-MOT cannot wrap nested models. Weights are
moved between these models by layer name, and the layer names are canonical:

==============================  ==========================================================
layer name                      what
==============================  ==========================================================
``embeddings``                  `AlbertEmbeddings` (word/position/type, LayerNorm over E)
``embedding_projection``        Dense E -> H, only when E != H
``attention_mask``              `AttentionMask` (input_mask -> logit bias)
``{owner}_inner_{k}_attention``  `SelfAttentionBlock` for inner layer k
``{owner}_inner_{k}_ffn``        `FeedForwardBlock` for inner layer k
``pooler``                      `ClsPooler`
==============================  ==========================================================

``owner`` is ``group_{g}`` when that sublayer is shared by all layers of group g
(``sharing`` "all", or "attention"/"ffn" for that sublayer) and ``layer_{i}`` when each
layer owns it.
"""

from __future__ import annotations

from typing import Mapping

from albert_tf.backend import keras, tf
from albert_tf.config import AlbertConfig
from albert_tf.layers import (AlbertEmbeddings, AttentionMask, ClsPooler, FeedForwardBlock,
                              SelfAttentionBlock)
from albert_tf.layers.util import truncated_normal

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


class InputError(ValueError):
    """Model inputs are missing, misnamed or of the wrong rank."""


class AlbertFunctionalModel(keras.Model):
    """A functional `keras.Model` that checks its dict inputs and carries its config.

    Calling it with a missing or misnamed input key raises `InputError` naming the
    key, instead of a bare ``KeyError`` from inside Keras.
    """

    def __init__(self, inputs, outputs, albert_config: AlbertConfig | None = None, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.albert_config = albert_config

    def __call__(self, inputs, *args, **kwargs):
        check_inputs(inputs, [t.name.split(":")[0] for t in self.inputs])
        return super().__call__(inputs, *args, **kwargs)


def check_inputs(inputs, expected_names) -> None:
    """Raises `InputError` unless ``inputs`` is a dict with every expected key."""
    expected = list(expected_names)
    if not isinstance(inputs, Mapping):
        raise InputError(f"model inputs must be a dict with keys {expected}, "
                         f"got {type(inputs).__name__}.")
    missing = [name for name in expected if name not in inputs]
    if missing:
        raise InputError(f"missing model input(s) {missing}; got keys {sorted(inputs)}, "
                         f"expected {expected} (int32 tensors of shape [batch, seq]).")


def model_inputs(names=INPUT_NAMES, seq_length: int | None = None,
                 batch_size: int | None = None) -> dict[str, keras.Input]:
    """int32 ``[batch, seq]`` Keras inputs, one per name."""
    return {name: keras.Input(shape=(seq_length,), batch_size=batch_size, dtype=tf.int32,
                              name=name) for name in names}


def sublayer_name(config: AlbertConfig, layer_index: int, kind: str, inner: int = 0) -> str:
    """The name of the ``kind`` (``attention`` or ``ffn``) sublayer that encoder layer
    ``layer_index`` (0-based) applies at inner position ``inner``: its hidden group's
    (``group_0_inner_0_attention``) when ``config.sharing`` shares that kind, else its own
    (``layer_3_inner_0_ffn``). The one rule for where a layer's weights live."""
    shared = config.sharing in ("all", kind)
    owner = f"group_{config.group_of_layer(layer_index)}" if shared else f"layer_{layer_index}"
    return f"{owner}_inner_{inner}_{kind}"


def encoder_graph(config: AlbertConfig, inputs: Mapping[str, tf.Tensor],
                  return_all_layers: bool = False) -> dict[str, tf.Tensor]:
    """Applies the encoder to Keras inputs and returns its symbolic outputs.

    Args:
      config: model hyperparameters.
      inputs: ``input_word_ids``, ``input_mask``, ``input_type_ids``, int32 ``[B, S]``.
      return_all_layers: also return ``encoder_outputs``, the list of the L layer
        outputs ``[B, S, H]`` (for distillation and hidden-state parity tests).

    Returns:
      ``sequence_output [B, S, H]``, ``pooled_output [B, H]`` and, optionally,
      ``encoder_outputs``; also ``embedding_table``-owning layer under ``_embeddings``.
    """
    embeddings = AlbertEmbeddings(
        config.vocab_size, config.embedding_size, config.max_position_embeddings,
        config.type_vocab_size, config.initializer_range, config.layer_norm_eps,
        config.hidden_dropout_prob, name="embeddings")
    x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])   # [B, S, E]
    if config.embedding_size != config.hidden_size:
        x = keras.layers.Dense(config.hidden_size,
                               kernel_initializer=truncated_normal(config.initializer_range),
                               name="embedding_projection")(x)          # [B, S, H]
    mask_bias = AttentionMask(name="attention_mask")(inputs["input_mask"])  # [B, 1, 1, S]

    sublayers: dict[str, keras.layers.Layer] = {}

    def get(name: str, make) -> keras.layers.Layer:
        if name not in sublayers:
            sublayers[name] = make(name)
        return sublayers[name]

    def make_attention(name: str) -> SelfAttentionBlock:
        return SelfAttentionBlock(config.hidden_size, config.num_attention_heads,
                                  config.initializer_range, config.layer_norm_eps,
                                  config.hidden_dropout_prob,
                                  config.attention_probs_dropout_prob,
                                  head_size=config.attention_head_size, name=name)

    def make_ffn(name: str) -> FeedForwardBlock:
        return FeedForwardBlock(config.hidden_size, config.intermediate_size, config.hidden_act,
                                config.initializer_range, config.layer_norm_eps,
                                config.hidden_dropout_prob, name=name)

    layer_outputs = []
    for i in range(config.num_hidden_layers):
        for k in range(config.inner_group_num):
            attention = get(sublayer_name(config, i, "attention", k), make_attention)
            ffn = get(sublayer_name(config, i, "ffn", k), make_ffn)
            x = ffn(attention([x, mask_bias]))
        layer_outputs.append(x)

    pooled = ClsPooler(config.hidden_size, config.initializer_range, name="pooler")(x)
    outputs = {"sequence_output": x, "pooled_output": pooled}
    if return_all_layers:
        outputs["encoder_outputs"] = layer_outputs
    outputs["_embeddings"] = embeddings
    return outputs


def build_encoder(config: AlbertConfig, return_all_layers: bool = False,
                  seq_length: int | None = None, name: str = "albert_encoder") -> keras.Model:
    """The ALBERT/BERT encoder as a functional `tf_keras.Model`.

    Inputs (dict): ``input_word_ids``, ``input_mask``, ``input_type_ids``, int32 ``[B, S]``.
    Outputs (dict): ``sequence_output [B, S, H]``, ``pooled_output [B, H]`` and, with
    ``return_all_layers``, ``encoder_outputs`` (L tensors ``[B, S, H]``).
    """
    inputs = model_inputs(seq_length=seq_length)
    outputs = encoder_graph(config, inputs, return_all_layers)
    outputs.pop("_embeddings")
    return AlbertFunctionalModel(inputs, outputs, albert_config=config, name=name)
