"""Token + position + segment embeddings of width E (ALBERT's factorized embedding)."""

from __future__ import annotations

from albert_tf.backend import keras, tf
from albert_tf.layers.util import build_sublayer, truncated_normal


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(keras.layers.Layer):
    """Sums word, position and token-type embeddings, then LayerNorm and dropout.

    Inputs: ``input_word_ids`` and ``input_type_ids``, int32 ``[batch, seq]``.
    Output: float ``[batch, seq, E]``. The projection E -> H lives in the encoder
    (``embedding_projection``) and only exists when E != H.

    Weights: ``word_embeddings/embeddings [V, E]`` (tied to the MLM decoder),
    ``position_embeddings [P, E]``, ``token_type_embeddings/embeddings [T, E]``,
    ``layer_norm/{gamma,beta} [E]``.
    """

    def __init__(self, vocab_size: int, embedding_size: int, max_position_embeddings: int,
                 type_vocab_size: int, initializer_range: float = 0.02,
                 layer_norm_eps: float = 1e-12, dropout_rate: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout_rate
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, embedding_size, embeddings_initializer=truncated_normal(initializer_range),
            name="word_embeddings")
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, embedding_size,
            embeddings_initializer=truncated_normal(initializer_range),
            name="token_type_embeddings")
        # Kept in float32 under mixed precision (statistics over E are sensitive).
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, name="layer_norm", dtype="float32")
        self.dropout = keras.layers.Dropout(dropout_rate)

    def build(self, input_shape) -> None:
        build_sublayer(self.word_embeddings, (None, None))
        build_sublayer(self.token_type_embeddings, (None, None))
        self.position_embeddings = self.add_weight(
            "position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
            initializer=truncated_normal(self.initializer_range))
        build_sublayer(self.layer_norm, (None, None, self.embedding_size))
        super().build(input_shape)

    @property
    def embedding_table(self) -> tf.Variable:
        """The word embedding matrix ``[V, E]``, shared with the MLM decoder."""
        return self.word_embeddings.embeddings

    def call(self, word_ids: tf.Tensor, type_ids: tf.Tensor, training=None) -> tf.Tensor:
        seq_length = tf.shape(word_ids)[1]
        words = self.word_embeddings(word_ids)                       # [B, S, E]
        types = self.token_type_embeddings(type_ids)                 # [B, S, E]
        positions = self.position_embeddings[:seq_length]            # [S, E]
        x = words + types + tf.cast(positions, words.dtype)[tf.newaxis]
        x = self.layer_norm(x)
        x = tf.cast(x, self.compute_dtype)
        return self.dropout(x, training=training)

    def get_prunable_weights(self) -> list[tf.Variable]:
        """Embedding pruning is optional; the word table is the only large weight."""
        return [self.word_embeddings.embeddings]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                      max_position_embeddings=self.max_position_embeddings,
                      type_vocab_size=self.type_vocab_size,
                      initializer_range=self.initializer_range,
                      layer_norm_eps=self.layer_norm_eps, dropout_rate=self.dropout_rate)
        return config
