"""Small helpers shared by the custom layers."""

from __future__ import annotations

from albert_tf.backend import keras, tf


def truncated_normal(stddev: float) -> keras.initializers.Initializer:
    """The original BERT/ALBERT weight initializer."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def build_sublayer(layer: keras.layers.Layer, input_shape) -> None:
    """Builds ``layer`` under its own name scope so its weight names are unique.

    Calling ``sublayer.build()`` directly (outside ``__call__``) would otherwise put
    its weights straight under the parent's scope, e.g. two ``parent/kernel:0``.
    """
    with tf.name_scope(layer.name):
        layer.build(input_shape)


class WeightlessLayer(keras.layers.Layer):
    """Base for custom layers without weights: prunable (nothing to prune) for TF-MOT."""

    def get_prunable_weights(self) -> list:
        return []
