"""The pretraining model: encoder + masked-LM head (tied decoder) + sentence-order head."""

from __future__ import annotations

from albert_tf.backend import keras
from albert_tf.config import AlbertConfig
from albert_tf.layers import GatherPositions, MaskedLMHead
from albert_tf.layers.util import truncated_normal
from albert_tf.networks.encoder import (INPUT_NAMES, AlbertFunctionalModel, encoder_graph,
                                        model_inputs)


def build_pretrainer(config: AlbertConfig, masked_lm_positions: bool = False,
                     max_predictions_per_seq: int | None = None,
                     seq_length: int | None = None, name: str = "albert_pretrainer") -> keras.Model:
    """ALBERT pretrainer (MLM + SOP) as one flat functional model.

    Inputs: the encoder inputs and, when ``masked_lm_positions`` is true, an int32
    ``masked_lm_positions [B, P]`` input.
    Outputs: ``sequence_output [B, S, H]``, ``pooled_output [B, H]``,
    ``mlm_logits`` ``[B, P, V]`` at the given positions (``[B, S, V]``, every
    position, without that input) and ``sop_logits [B, 2]`` (0 = in order, 1 = swapped).
    """
    names = INPUT_NAMES + (("masked_lm_positions",) if masked_lm_positions else ())
    inputs = model_inputs(names, seq_length=seq_length)
    if masked_lm_positions and max_predictions_per_seq is not None:
        inputs["masked_lm_positions"] = keras.Input(
            shape=(max_predictions_per_seq,), dtype="int32", name="masked_lm_positions")
    encoded = encoder_graph(config, inputs)
    embeddings = encoded.pop("_embeddings")
    sequence = encoded["sequence_output"]
    if masked_lm_positions:
        sequence = GatherPositions(name="gather_masked_positions")(
            [sequence, inputs["masked_lm_positions"]])                    # [B, P, H]
    mlm_logits = MaskedLMHead(embeddings.embedding_table, config.hidden_act,
                              config.initializer_range, config.layer_norm_eps,
                              name="mlm")(sequence)
    sop_logits = keras.layers.Dense(2, kernel_initializer=truncated_normal(config.initializer_range),
                                    name="sop", dtype="float32")(encoded["pooled_output"])
    outputs = dict(encoded, mlm_logits=mlm_logits, sop_logits=sop_logits)
    return AlbertFunctionalModel(inputs, outputs, albert_config=config, name=name)
