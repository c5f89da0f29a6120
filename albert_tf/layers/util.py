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


class QuantizePointsMixin:
    """Named intermediate tensors where quantization-aware training may fake-quantize.

    A layer lists its points in ``QUANTIZE_POINTS`` and passes each such tensor
    through ``self._quantize_point(name, x)``: the identity unless a TF-MOT
    ``QuantizeConfig`` (`albert_tf.compression.qat`) has set ``quantize_points`` to
    ``{name: callable}`` inside its ``QuantizeWrapper``. The float model is unchanged.
    """

    QUANTIZE_POINTS: tuple = ()
    quantize_points = None

    def _quantize_point(self, name: str, x):
        points = self.quantize_points
        if not points or name not in points:
            return x
        return points[name](x)
