"""Position-wise feed-forward sublayer of a transformer layer."""

from __future__ import annotations

from albert_tf.backend import keras, tf
from albert_tf.layers.activations import get_activation
from albert_tf.layers.util import QuantizePointsMixin, build_sublayer, truncated_normal


@keras.utils.register_keras_serializable(package="albert_tf")
class FeedForwardBlock(QuantizePointsMixin, keras.layers.Layer):
    """Post-LN feed-forward: ``LayerNorm(x + Dropout(Dense_out(act(Dense_in(x)))))``.

    Input and output: ``[B, S, H]``; the intermediate is ``[B, S, I]``.
    Sublayers: ``intermediate`` (H -> I), ``output_dense`` (I -> H), ``layer_norm``.
    """

    QUANTIZE_POINTS = ("intermediate", "activation", "ffn_output", "residual", "output")

    def __init__(self, hidden_size: int, intermediate_size: int, activation: str = "gelu",
                 initializer_range: float = 0.02, layer_norm_eps: float = 1e-12,
                 dropout_rate: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout_rate
        self._activation_fn = get_activation(activation)
        self.intermediate = keras.layers.Dense(intermediate_size, kernel_initializer=truncated_normal(initializer_range),
                                               name="intermediate")
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=truncated_normal(initializer_range),
                                               name="output_dense")
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="layer_norm")
        self.output_dropout = keras.layers.Dropout(dropout_rate)

    def build(self, input_shape) -> None:
        build_sublayer(self.intermediate, (None, None, self.hidden_size))
        build_sublayer(self.output_dense, (None, None, self.intermediate_size))
        build_sublayer(self.layer_norm, (None, None, self.hidden_size))
        super().build(input_shape)

    def call(self, x: tf.Tensor, training=None) -> tf.Tensor:
        point = self._quantize_point                                 # identity unless QAT
        h = point("activation", self._activation_fn(point("intermediate", self.intermediate(x))))
        out = self.output_dropout(point("ffn_output", self.output_dense(h)), training=training)
        return point("output", self.layer_norm(point("residual", out + x)))

    def get_prunable_weights(self) -> list[tf.Variable]:
        return [self.intermediate.kernel, self.output_dense.kernel]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, intermediate_size=self.intermediate_size,
                      activation=self.activation, initializer_range=self.initializer_range,
                      layer_norm_eps=self.layer_norm_eps, dropout_rate=self.dropout_rate)
        return config
