"""Multi-head self-attention sublayer, built from `Dense` layers and batched matmuls.

Shapes use the original ALBERT einsum letters: B batch, F "from" (query) positions,
T "to" (key) positions, N heads, D head size, H = N * D hidden size.
"""

from __future__ import annotations

import math

from albert_tf.backend import keras, tf
from albert_tf.layers.util import (QuantizePointsMixin, WeightlessLayer, build_sublayer,
                                   truncated_normal)

# Added to the attention logits of padded key positions (the original's constant).
MASK_ADDER = -10000.0


@keras.utils.register_keras_serializable(package="albert_tf")
class AttentionMask(WeightlessLayer):
    """Turns ``input_mask`` int32 ``[B, T]`` (1 = real token) into a logit bias ``[B, 1, 1, T]``."""

    def call(self, input_mask: tf.Tensor) -> tf.Tensor:
        mask = tf.cast(input_mask, self.compute_dtype)
        return (1.0 - mask)[:, tf.newaxis, tf.newaxis, :] * MASK_ADDER


@keras.utils.register_keras_serializable(package="albert_tf")
class SelfAttentionBlock(QuantizePointsMixin, keras.layers.Layer):
    """Post-LN self-attention: ``LayerNorm(x + Dropout(Dense(Attention(x))))``.

    Inputs: ``x [B, F, H]`` and the bias from `AttentionMask`, ``[B, 1, 1, T]``.
    Output: ``[B, F, H]``.

    Sublayers (named as in the original checkpoint's ``attention_1`` scope):
    ``query``, ``key``, ``value`` (H -> N * D), ``output_dense`` (N * D -> H),
    ``layer_norm``. ``N * D == H`` unless ``head_size`` is given (heads pruned).
    """

    QUANTIZE_POINTS = ("query", "key", "value", "query_scaled", "scores", "mask_bias",
                       "masked_scores", "probs", "context", "attention_output", "residual",
                       "output")

    def __init__(self, hidden_size: int, num_heads: int, initializer_range: float = 0.02,
                 layer_norm_eps: float = 1e-12, dropout_rate: float = 0.0,
                 attention_dropout_rate: float = 0.0, head_size: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if head_size is None and hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}.")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = head_size or hidden_size // num_heads
        self._explicit_head_size = head_size
        self.all_head_size = self.num_heads * self.head_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate

        def dense(units: int, name: str) -> keras.layers.Dense:
            return keras.layers.Dense(units, name=name,
                                      kernel_initializer=truncated_normal(initializer_range))

        self.query = dense(self.all_head_size, "query")
        self.key = dense(self.all_head_size, "key")
        self.value = dense(self.all_head_size, "value")
        self.output_dense = dense(hidden_size, "output_dense")
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="layer_norm")
        self.attention_dropout = keras.layers.Dropout(attention_dropout_rate)
        self.output_dropout = keras.layers.Dropout(dropout_rate)

    def build(self, input_shape) -> None:
        x_shape = input_shape[0] if isinstance(input_shape, (list, tuple)) and \
            isinstance(input_shape[0], (list, tuple, tf.TensorShape)) else input_shape
        hidden_shape = (None, None, self.hidden_size)
        for layer in (self.query, self.key, self.value):
            build_sublayer(layer, hidden_shape)
        build_sublayer(self.output_dense, (None, None, self.all_head_size))
        build_sublayer(self.layer_norm, hidden_shape)
        super().build(x_shape)

    def _split_heads(self, x: tf.Tensor, seq_length: tf.Tensor) -> tf.Tensor:
        """``[B, S, H] -> [B, N, S, D]``."""
        x = tf.reshape(x, [-1, seq_length, self.num_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def call(self, inputs, training=None) -> tf.Tensor:
        x, mask_bias = inputs
        seq_length = tf.shape(x)[1]
        point = self._quantize_point                                 # identity unless QAT
        q = self._split_heads(point("query", self.query(x)), seq_length)   # [B, N, F, D]
        k = self._split_heads(point("key", self.key(x)), seq_length)       # [B, N, T, D]
        v = self._split_heads(point("value", self.value(x)), seq_length)   # [B, N, T, D]
        q = point("query_scaled", q * (1.0 / math.sqrt(self.head_size)))
        scores = point("scores", tf.matmul(q, k, transpose_b=True))  # BNFD,BNTD->BNFT
        # Softmax in float32 even under mixed precision.
        mask_bias = point("mask_bias", tf.cast(mask_bias, tf.float32))   # QAT: clipped
        scores = point("masked_scores", tf.cast(scores, tf.float32) + mask_bias)
        probs = point("probs", tf.cast(tf.nn.softmax(scores, axis=-1), x.dtype))
        probs = self.attention_dropout(probs, training=training)
        context = point("context", tf.matmul(probs, v))             # BNFT,BNTD->BNFD
        context = tf.transpose(context, [0, 2, 1, 3])                # [B, F, N, D]
        context = tf.reshape(context, [-1, seq_length, self.all_head_size])
        out = self.output_dropout(point("attention_output", self.output_dense(context)),
                                  training=training)
        return point("output", self.layer_norm(point("residual", out + x)))

    def get_prunable_weights(self) -> list[tf.Variable]:
        return [layer.kernel for layer in (self.query, self.key, self.value, self.output_dense)]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range,
                      layer_norm_eps=self.layer_norm_eps, dropout_rate=self.dropout_rate,
                      attention_dropout_rate=self.attention_dropout_rate)
        if self._explicit_head_size is not None:
            config.update(head_size=self._explicit_head_size)
        return config
