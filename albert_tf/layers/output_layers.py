"""Output layers (Keras): the pooler, the masked-LM head (tied decoder), span logits and
the multiple-choice folding; the task heads that use them are `albert_tf.heads`."""

from __future__ import annotations

from albert_tf.backend import keras, tf
from albert_tf.layers.activations import get_activation
from albert_tf.layers.util import WeightlessLayer, build_sublayer, truncated_normal


@keras.utils.register_keras_serializable(package="albert_tf")
class ClsPooler(keras.layers.Layer):
    """``tanh(Dense(sequence_output[:, 0]))``: ``[B, S, H] -> [B, H]``."""

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(hidden_size, activation="tanh",
                                        kernel_initializer=truncated_normal(initializer_range),
                                        name="dense")

    def build(self, input_shape) -> None:
        build_sublayer(self.dense, (None, self.hidden_size))
        super().build(input_shape)

    def call(self, sequence_output: tf.Tensor) -> tf.Tensor:
        return self.dense(sequence_output[:, 0, :])

    def get_prunable_weights(self) -> list[tf.Variable]:
        return [self.dense.kernel]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.utils.register_keras_serializable(package="albert_tf")
class GatherPositions(WeightlessLayer):
    """Picks ``positions [B, P]`` out of ``sequence [B, S, H]`` -> ``[B, P, H]``."""

    def call(self, inputs) -> tf.Tensor:
        sequence, positions = inputs
        return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)


@keras.utils.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
    """``logits = LayerNorm(act(Dense_{H->E}(x))) @ W_word^T + bias``: ``[B, S, H] -> [B, S, V]``.

    The decoder matrix is the word embedding table ``[V, E]`` of the encoder
    (weight tying, as the original); only ``output_bias [V]`` is new.
    """

    def __init__(self, embedding_table: tf.Variable, activation: str = "gelu",
                 initializer_range: float = 0.02, layer_norm_eps: float = 1e-12, **kwargs):
        super().__init__(**kwargs)
        self.embedding_table = embedding_table
        self.vocab_size, self.embedding_size = embedding_table.shape
        self.activation = activation
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dense = keras.layers.Dense(self.embedding_size,
                                        kernel_initializer=truncated_normal(initializer_range),
                                        name="dense")
        self._activation_fn = get_activation(activation)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, name="layer_norm")

    def build(self, input_shape) -> None:
        build_sublayer(self.dense, (None, None, input_shape[-1]))
        build_sublayer(self.layer_norm, (None, None, self.embedding_size))
        self.output_bias = self.add_weight("output_bias", shape=(self.vocab_size,),
                                           initializer="zeros")
        super().build(input_shape)

    def call(self, x: tf.Tensor) -> tf.Tensor:
        h = self.layer_norm(self._activation_fn(self.dense(x)))       # [B, S, E]
        table = tf.cast(self.embedding_table, h.dtype)
        logits = tf.matmul(h, table, transpose_b=True)                # BSE,VE->BSV
        return tf.cast(logits + tf.cast(self.output_bias, h.dtype), tf.float32)

    def get_prunable_weights(self) -> list[tf.Variable]:
        return [self.dense.kernel]

    def get_config(self) -> dict:
        raise NotImplementedError("MaskedLMHead shares the encoder's embedding table; rebuild it "
                                  "with albert_tf.build_pretrainer(config) instead of from config.")


@keras.utils.register_keras_serializable(package="albert_tf")
class SpanLogits(keras.layers.Layer):
    """Start/end logits for span extraction: ``[B, S, H] -> ([B, S], [B, S])``.

    Padded positions (``input_mask == 0``) get a large negative logit so they are
    never predicted.
    """

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(2, kernel_initializer=truncated_normal(initializer_range),
                                        name="dense")

    def build(self, input_shape) -> None:
        build_sublayer(self.dense, (None, None, input_shape[0][-1]))
        super().build(input_shape)

    def call(self, inputs):
        sequence_output, input_mask = inputs
        logits = tf.cast(self.dense(sequence_output), tf.float32)     # [B, S, 2]
        penalty = (1.0 - tf.cast(input_mask, tf.float32)) * -1e9
        return logits[..., 0] + penalty, logits[..., 1] + penalty

    def get_prunable_weights(self) -> list[tf.Variable]:
        return [self.dense.kernel]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config


@keras.utils.register_keras_serializable(package="albert_tf")
class FoldChoices(WeightlessLayer):
    """Multiple choice: ``[B, C, S] -> [B * C, S]`` so each choice is one encoder row."""

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return tf.reshape(x, [-1, tf.shape(x)[-1]])


@keras.utils.register_keras_serializable(package="albert_tf")
class UnfoldChoices(WeightlessLayer):
    """Multiple choice: per-row scores ``[B * C, 1] -> [B, C]``.

    With ``num_choices=None`` it is called on ``[scores, ids [B, C, S]]`` and takes C
    from the ids (any number of choices).
    """

    def __init__(self, num_choices: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices

    def call(self, inputs) -> tf.Tensor:
        if self.num_choices:
            return tf.reshape(inputs, [-1, self.num_choices])
        scores, like = inputs
        return tf.reshape(scores, tf.shape(like)[:2])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_choices=self.num_choices)
        return config
