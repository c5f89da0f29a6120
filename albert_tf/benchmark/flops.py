"""Floating-point operations of one forward pass, computed from the config.

A multiply-add counts as 2 FLOPs (1 for int8 "ops" likewise counts 2 per MAC).
Per sequence of length S, one transformer layer costs::

    Q, K, V, output projections   4 * 2 * S * H * A
    scores Q K^T and probs V      2 * 2 * S * S * A
    feed-forward                  2 * 2 * S * H * I

with A = N * D the attention width (= H, except after structured pruning removed heads),
plus the embedding projection ``2 * S * E * H`` (ALBERT only) and the pooler
``2 * H * H``. Sharing changes parameters, not FLOPs: every layer is computed.
Softmax, LayerNorm, GELU and adds are O(S * H) and left out (< 1% at these sizes).
"""

from __future__ import annotations

from albert_tf.config import AlbertConfig


def layer_flops(config: AlbertConfig, seq_length: int) -> int:
    """FLOPs of one transformer layer (attention + feed-forward) on one sequence."""
    S, H, I = seq_length, config.hidden_size, config.intermediate_size
    A = config.num_attention_heads * config.head_size
    projections = 4 * 2 * S * H * A
    attention = 2 * 2 * S * S * A
    feed_forward = 2 * 2 * S * H * I
    return projections + attention + feed_forward


def flops_per_sequence(config: AlbertConfig, seq_length: int) -> int:
    """FLOPs of the encoder + pooler forward pass for one sequence of ``seq_length``."""
    total = config.num_hidden_layers * config.inner_group_num * layer_flops(config, seq_length)
    if config.embedding_size != config.hidden_size:
        total += 2 * seq_length * config.embedding_size * config.hidden_size
    return total + 2 * config.hidden_size * config.hidden_size
