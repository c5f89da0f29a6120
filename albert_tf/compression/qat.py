"""Quantization-aware training of ALBERT with TF-MOT; its models export with the ``qat`` recipe.

TF-MOT has no quantization support for attention (``MultiHeadAttention`` is not in
its registry), LayerNorm or custom layers, so this module brings `QuantizeConfig`s
for our layers and applies them with TF-MOT's ``QuantizeWrapperV2``:

==============================  ============================================================
layer                           quantized
==============================  ============================================================
`SelfAttentionBlock`            q/k/v/output kernels (int8, symmetric, per tensor: see below);
                                q, k, v, scaled q, scores, mask bias (fixed
                                `MASK_BIAS_RANGE`), masked scores, softmax probs
                                (fixed [0, 255/256]: TFLite's int8 softmax output), context,
                                output projection, and its LayerNorm (input = residual sum,
                                output)
`FeedForwardBlock`              both kernels; intermediate, GELU output, output projection,
                                LayerNorm input and output
``embedding_projection``, head  kernel; activation output (a Dense's usual QAT)
`ClsPooler`                     kernel; tanh input and output
``LayerNormalization``          output (`LayerNormQuantizeConfig`, for LayerNorm layers of
                                the functional graph)
`AlbertEmbeddings`              nothing: it takes int32 ids; the converter calibrates it
==============================  ============================================================

The attention mask adds -10000 to padded keys; a range covering it would leave int8
scores no resolution, so the masked-scores range is learned from the *unmasked*
entries and extended below by its own width, at least 8 (padded keys saturate
there: softmax weight < e^-8 of the real keys'). Padded fixed-length inputs then work in int8.

The mask bias itself is clipped to ``MASK_BIAS_RANGE`` = [-512, 0] (a fixed-range point
of each attention block; any bias far below the scores masks alike). With the raw
-10000 the int8 ``ADD`` of scores and bias breaks: TFLite's optimized int8 add
(NEON, and NEON_2_SSE on x86) narrows the rescaled sum, in *output* quanta, to int16
without saturation before clamping to int8. -10000 at a masked-scores scale of ~0.04
is ~-230000 quanta, which wraps modulo 65536 to a value of either sign: depending on
the learned range, padded keys came out as the range's *maximum* (their softmax weight
then dominated: a 2-layer student predicted one class) or, by luck, its minimum.
-512 is at most 255 * 512 / 8 = 16320 output quanta (the masked-scores range is at
least `MASK_EXTENSION` = 8 wide), well within int16.

Activation ranges of a block shared across depths
-------------------------------------------------
Wrapping the shared layer once (``activation_ranges="shared"``) gives one range per
quantization point for all L depths, although the hidden states' statistics change
with depth. With ``per_depth`` (default) the graph is rebuilt with one
``QuantizeWrapperV2`` per *call* of the shared block (`graph.split_shared_nodes`):
the L wrappers wrap the same layer (one weight set, identical weight quantizers) and
each owns the activation ranges of its depth -- the ranges live outside the shared
layer. The TFLite graph is unrolled over depth anyway, so per-depth ranges cost
nothing at inference. ``studies/compression/qat.py`` measures both.

Ranges are EMAs (decay ``ema_decay``) of the batch min/max, set from the first
batch instead of TF-MOT's fixed [-6, 6] start, so short QAT runs are calibrated.

Export
------
Importing this module registers `load_qat_model` and `quantize_scope` with
`albert_tf.export.quantization` (the export package imports nothing from here): the
``qat`` recipe of ``albert-tf-export --quantization=qat`` and `convert_int8` then convert
the QAT model through the export's one converter path (`albert_tf.export.tflite.convert`).

Kernels are quantized per tensor by default (TF-MOT's Dense default). Per output
channel (``per_channel_weights``) trains fine, but the TFLite converter rejects a
per-channel kernel of a Dense applied to a ``[B, S, H]`` input whenever it is used once
("'tfl.transpose' op has mismatched quantized axes": every kernel of an unshared model
and the embedding projection; a block shared across depths happens to convert).
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow_model_optimization as tfmot
from tensorflow_model_optimization.python.core.quantization.keras import quantize_wrapper

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import named_weights
from albert_tf.compression.compression_config import QATConfig
from albert_tf.compression.graph import fresh_copy, rewrap, split_shared_nodes
from albert_tf.export import quantization as export_quantization
import albert_tf.heads.registry as heads
from albert_tf.layers import ClsPooler, FeedForwardBlock, SelfAttentionBlock

Q = tfmot.quantization.keras
# Padded keys saturate at least this far below the real scores (softmax weight < e^-8).
MASK_EXTENSION = 8.0
# The QAT (and int8) attention-mask bias: -10000 clipped to -512 (see the module docstring).
MASK_BIAS_RANGE = (-512.0, 0.0)
MASKED_BELOW = MASK_BIAS_RANGE[0] / 2   # masked scores below this are padded keys
# TFLite's int8 ADD holds the rescaled sum (output quanta, before the output zero point)
# in int16: the clipped bias plus the scores' and zero point's 255 + 128 quanta must fit.
assert -MASK_BIAS_RANGE[0] * 255 / MASK_EXTENSION + 255 + 128 < 2 ** 15
SOFTMAX_RANGE = (0.0, 255.0 / 256.0)   # TFLite int8 softmax output: scale 1/256, zp -128


def _kernel(dense: keras.layers.Layer) -> tf.Variable:
    """The kernel *variable* of a Dense layer.

    While a ``QuantizeWrapper`` runs, ``dense.kernel`` is replaced by its fake-quantized
    tensor (and Keras then drops the variable from ``dense.weights``; the wrapper keeps
    training it). A layer wrapped by several wrappers (per-depth ranges) must still
    hand the variable to the next wrapper, so it is remembered on first access.
    """
    variable = getattr(dense, "_qat_kernel_variable", None)
    if variable is None:
        variable = dense.kernel
        if not isinstance(variable, tf.Variable):
            raise ValueError(f"layer {dense.name!r}: kernel is not a variable ({variable!r}).")
        object.__setattr__(dense, "_qat_kernel_variable", variable)
    return variable


def _activation(dense: keras.layers.Layer):
    """A Dense's own activation (unwrapping a QuantizeAwareActivation set by another wrapper)."""
    activation = dense.activation
    return getattr(activation, "activation", activation) \
        if type(activation).__name__ == "QuantizeAwareActivation" else activation


def _prefixed(prefix: str, name: str) -> str:
    return prefix if name in (None, "post_activation") else f"{prefix}_{name}"


# ---------------------------------------------------------------------------- quantizers
@keras.utils.register_keras_serializable(package="albert_tf")
class KernelQuantizer(Q.quantizers.LastValueQuantizer):
    """int8 symmetric per-output-channel kernel quantizer (TFLite's fully-connected
    weights) whose range variables are named ``<prefix>_min/_max``."""

    def __init__(self, prefix: str, num_bits: int = 8, per_axis: bool = True,
                 symmetric: bool = True, narrow_range: bool = True):
        super().__init__(num_bits=num_bits, per_axis=per_axis, symmetric=symmetric,
                         narrow_range=narrow_range)
        self.prefix = prefix

    def build(self, tensor_shape, name, layer):
        return self._add_range_weights(layer, _prefixed(self.prefix, name), self.per_axis,
                                       tensor_shape)

    def get_config(self):
        return dict(super().get_config(), prefix=self.prefix)


@keras.utils.register_keras_serializable(package="albert_tf")
class RangeQuantizer(Q.quantizers.Quantizer):
    """Per-tensor asymmetric int8 activation quantizer.

    Training: the range is the EMA of the batch min/max (``moving_average``) or the
    last batch's (``last_value``), initialised from the first batch; always contains
    0. ``masked``: the statistics ignore entries below `MASKED_BELOW` and the range is
    extended below by its width (see the module docstring).
    """

    def __init__(self, prefix: str, mode: str = "moving_average", ema_decay: float = 0.99,
                 masked: bool = False, num_bits: int = 8):
        self.prefix = prefix
        self.mode = mode
        self.ema_decay = float(ema_decay)
        self.masked = bool(masked)
        self.num_bits = num_bits

    def build(self, tensor_shape, name, layer):
        prefix = _prefixed(self.prefix, name)
        const = keras.initializers.Constant
        return {
            "min_var": layer.add_weight(prefix + "_min", shape=(), initializer=const(-6.0),
                                        trainable=False),
            "max_var": layer.add_weight(prefix + "_max", shape=(), initializer=const(6.0),
                                        trainable=False),
            "count": layer.add_weight(prefix + "_count", shape=(), dtype=tf.int64,
                                      initializer=const(0), trainable=False),
        }

    def _quantize(self, x, lo, hi):
        if self.masked:
            lo = lo - tf.maximum(hi - lo, MASK_EXTENSION)
        return tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, num_bits=self.num_bits)

    def __call__(self, inputs, training, weights, **kwargs):
        lo_var, hi_var, count = weights["min_var"], weights["max_var"], weights["count"]
        if not training:
            return self._quantize(inputs, lo_var, hi_var)
        x = tf.cast(inputs, tf.float32)
        if self.masked:
            valid = x > MASKED_BELOW
            batch_lo = tf.reduce_min(tf.where(valid, x, tf.fill(tf.shape(x), np.inf)))
            batch_hi = tf.reduce_max(tf.where(valid, x, tf.fill(tf.shape(x), -np.inf)))
        else:
            batch_lo, batch_hi = tf.reduce_min(x), tf.reduce_max(x)
        batch_lo, batch_hi = tf.minimum(batch_lo, 0.0), tf.maximum(batch_hi, 0.0)
        if self.mode == "last_value":
            lo, hi = batch_lo, batch_hi
        else:
            first = tf.equal(count, 0)
            d = self.ema_decay
            lo = tf.where(first, batch_lo, d * lo_var + (1.0 - d) * batch_lo)
            hi = tf.where(first, batch_hi, d * hi_var + (1.0 - d) * batch_hi)
        lo = lo_var.assign(lo)
        hi = hi_var.assign(hi)
        with tf.control_dependencies([count.assign_add(1)]):
            return tf.cast(self._quantize(x, lo, hi), inputs.dtype)

    def get_config(self):
        return {"prefix": self.prefix, "mode": self.mode, "ema_decay": self.ema_decay,
                "masked": self.masked, "num_bits": self.num_bits}


@keras.utils.register_keras_serializable(package="albert_tf")
class FixedRangeQuantizer(Q.quantizers.Quantizer):
    """Fake-quantizes to a fixed range (softmax probabilities: TFLite's fixed int8 range)."""

    def __init__(self, min_value: float, max_value: float, num_bits: int = 8):
        self.min_value, self.max_value, self.num_bits = float(min_value), float(max_value), num_bits

    def build(self, tensor_shape, name, layer):
        return {}

    def __call__(self, inputs, training, weights, **kwargs):
        return tf.quantization.fake_quant_with_min_max_args(
            inputs, min=self.min_value, max=self.max_value, num_bits=self.num_bits)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value,
                "num_bits": self.num_bits}


# ------------------------------------------------------------------------ quantize configs
class _ActivationSettings:
    def __init__(self, activation_quantizer: str = "moving_average", ema_decay: float = 0.99,
                 per_channel: bool = False):
        self.activation_quantizer = activation_quantizer
        self.ema_decay = float(ema_decay)
        self.per_channel = bool(per_channel)

    def range_quantizer(self, prefix: str, masked: bool = False) -> RangeQuantizer:
        return RangeQuantizer(prefix, self.activation_quantizer, self.ema_decay, masked=masked)

    def get_config(self):
        return {"activation_quantizer": self.activation_quantizer, "ema_decay": self.ema_decay,
                "per_channel": self.per_channel}


@keras.utils.register_keras_serializable(package="albert_tf")
class BlockQuantizeConfig(_ActivationSettings, Q.QuantizeConfig):
    """A transformer sublayer: int8 kernels of its Dense sublayers and fake-quant at each
    of the layer's ``QUANTIZE_POINTS`` (set through the layer's ``quantize_points`` hook).

    ``LAYER_NORM_POINTS`` are the LayerNorm's input and output ranges (what
    `LayerNormQuantizeConfig` does for a stand-alone LayerNorm layer).
    """

    DENSES: tuple = ()
    FIXED: dict = {}
    MASKED: tuple = ()
    LAYER_NORM_POINTS = ("residual", "output")

    def points(self, layer) -> tuple:
        return tuple(layer.QUANTIZE_POINTS)

    def get_weights_and_quantizers(self, layer):
        return [(_kernel(getattr(layer, d)),
                 KernelQuantizer(f"{d}_kernel", per_axis=self.per_channel))
                for d in self.DENSES]

    def set_quantize_weights(self, layer, quantize_weights):
        for d, weight in zip(self.DENSES, quantize_weights):
            getattr(layer, d).kernel = weight

    def get_activations_and_quantizers(self, layer):
        out = []
        for point in self.points(layer):
            if point in self.FIXED:
                quantizer = FixedRangeQuantizer(*self.FIXED[point])
            else:
                quantizer = self.range_quantizer(point, masked=point in self.MASKED)
            out.append((keras.activations.linear, quantizer))   # post-quantized identity
        return out

    def set_quantize_activations(self, layer, quantize_activations):
        # Not a tracked attribute: the callables hold the wrapper's range variables.
        object.__setattr__(layer, "quantize_points",
                           dict(zip(self.points(layer), quantize_activations)))

    def get_output_quantizers(self, layer):
        return []          # the block's output is its "output" point


@keras.utils.register_keras_serializable(package="albert_tf")
class AttentionQuantizeConfig(BlockQuantizeConfig):
    """`SelfAttentionBlock`: q/k/v/output kernels, attention internals, its LayerNorm."""

    DENSES = ("query", "key", "value", "output_dense")
    FIXED = {"probs": SOFTMAX_RANGE, "mask_bias": MASK_BIAS_RANGE}
    MASKED = ("masked_scores",)


@keras.utils.register_keras_serializable(package="albert_tf")
class FeedForwardQuantizeConfig(BlockQuantizeConfig):
    """`FeedForwardBlock`: both kernels, intermediate/GELU/output, its LayerNorm."""

    DENSES = ("intermediate", "output_dense")


@keras.utils.register_keras_serializable(package="albert_tf")
class DenseQuantizeConfig(_ActivationSettings, Q.QuantizeConfig):
    """A Dense layer (``sublayer`` = "") or a custom layer's Dense ``sublayer`` (the
    pooler's ``dense``): per-tensor int8 kernel (TF-MOT's Dense default; the TFLite
    converter rejects a per-channel kernel on the embedding projection: "tfl.transpose
    op has mismatched quantized axes"), its activation quantized after (linear) or
    before and after (tanh), as TF-MOT does for Dense."""

    def __init__(self, sublayer: str = "", prefix: str = "", **kwargs):
        kwargs["per_channel"] = False
        super().__init__(**kwargs)
        self.sublayer = sublayer
        self.prefix = prefix or sublayer or "dense"

    def _dense(self, layer):
        return getattr(layer, self.sublayer) if self.sublayer else layer

    def get_weights_and_quantizers(self, layer):
        return [(_kernel(self._dense(layer)), KernelQuantizer(f"{self.prefix}_kernel",
                                                                    per_axis=False))]

    def set_quantize_weights(self, layer, quantize_weights):
        self._dense(layer).kernel = quantize_weights[0]

    def get_activations_and_quantizers(self, layer):
        return [(_activation(self._dense(layer)), self.range_quantizer(f"{self.prefix}_act"))]

    def set_quantize_activations(self, layer, quantize_activations):
        self._dense(layer).activation = quantize_activations[0]

    def get_output_quantizers(self, layer):
        return []

    def get_config(self):
        return dict(super().get_config(), sublayer=self.sublayer, prefix=self.prefix)


@keras.utils.register_keras_serializable(package="albert_tf")
class LayerNormQuantizeConfig(_ActivationSettings, Q.QuantizeConfig):
    """A ``LayerNormalization`` layer: its output range (gamma/beta are constants the
    converter quantizes; its internal statistics are calibrated)."""

    def get_weights_and_quantizers(self, layer):
        return []

    def set_quantize_weights(self, layer, quantize_weights):
        pass

    def get_activations_and_quantizers(self, layer):
        return []

    def set_quantize_activations(self, layer, quantize_activations):
        pass

    def get_output_quantizers(self, layer):
        return [self.range_quantizer("output")]


def quantize_config_for(layer: keras.layers.Layer, cfg: QATConfig) -> Q.QuantizeConfig | None:
    """Our `QuantizeConfig` for ``layer``, or None when it stays float (embeddings, mask,
    dropout) or is a head and ``cfg.quantize_head`` is false."""
    settings = dict(activation_quantizer=cfg.activation_quantizer, ema_decay=cfg.ema_decay,
                    per_channel=cfg.per_channel_weights)
    if isinstance(layer, SelfAttentionBlock):
        return AttentionQuantizeConfig(**settings)
    if isinstance(layer, FeedForwardBlock):
        return FeedForwardQuantizeConfig(**settings)
    if isinstance(layer, keras.layers.LayerNormalization):
        return LayerNormQuantizeConfig(**settings)
    if isinstance(layer, keras.layers.Dense) and layer.name == "embedding_projection":
        return DenseQuantizeConfig(prefix="dense", **settings)
    if cfg.quantize_head and isinstance(layer, ClsPooler):
        return DenseQuantizeConfig(sublayer="dense", **settings)
    if cfg.quantize_head and isinstance(layer, keras.layers.Dense) and \
            layer.name in heads.head_layer_names():         # a head's own Dense layer
        return DenseQuantizeConfig(prefix="dense", **settings)
    return None


def quantize_scope():
    """TF-MOT's ``quantize_scope`` with our quantizers and configs (for deserializing)."""
    return Q.quantize_scope({cls.__name__: cls for cls in (
        KernelQuantizer, RangeQuantizer, FixedRangeQuantizer, BlockQuantizeConfig,
        AttentionQuantizeConfig, FeedForwardQuantizeConfig, DenseQuantizeConfig,
        LayerNormQuantizeConfig)})


# ------------------------------------------------------------------------------ models
def quantize_model(model: keras.Model, cfg: QATConfig | None = None) -> keras.Model:
    """A fake-quantized copy of ``model`` ready for QAT with ``fit`` (float ``model`` kept).

    ``cfg.activation_ranges``: ``per_depth`` (one wrapper, hence one set of ranges,
    per call of a shared block) or ``shared`` (one wrapper per layer).
    """
    cfg = cfg or QATConfig()
    copy = fresh_copy(model)

    def wrapper(layer, prefix="quant_"):
        return quantize_wrapper.QuantizeWrapperV2(layer, quantize_config_for(layer, cfg),
                                                  name_prefix=prefix)

    def selected(layer) -> bool:
        return quantize_config_for(layer, cfg) is not None

    if cfg.activation_ranges == "shared":
        quantized = keras.models.clone_model(
            copy, clone_function=lambda layer: wrapper(layer) if selected(layer) else layer)
        return rewrap(quantized, model)
    if cfg.activation_ranges != "per_depth":
        raise ValueError(f"qat.activation_ranges: unknown {cfg.activation_ranges!r}.")
    return split_shared_nodes(
        copy, lambda layer, i, n: wrapper(layer, f"quant_call{i}_" if n > 1 else "quant_"),
        selected)


def quantize_wrappers(model: keras.Model) -> list:
    return [layer for layer in model.layers
            if isinstance(layer, quantize_wrapper.QuantizeWrapper)]


def float_weights(model: keras.Model) -> dict[str, tf.Variable]:
    """The model's own weights by canonical name, without QAT range variables."""
    quant = {id(v) for w in quantize_wrappers(model) for v in w._non_trainable_weights}  # noqa
    quant |= {id(v) for w in quantize_wrappers(model) for v in w._trainable_weights
              if v.name.startswith(w.name + "/")}
    return {name: v for name, v in named_weights(model).items() if id(v) not in quant}


def activation_ranges(model: keras.Model) -> dict[str, tuple[float, float]]:
    """``{wrapper/point: (min, max)}`` of every learned activation range."""
    out = {}
    for variable in model.weights:
        name = variable.name.rsplit(":", 1)[0]
        if name.endswith("_min") and variable.shape.rank == 0 and "kernel" not in name:
            twin = [v for v in model.weights if v.name == variable.name.replace("_min:", "_max:")]
            if twin:
                out[name[:-4]] = (float(variable.numpy()), float(twin[0].numpy()))
    return out


# ---------------------------------------------------------------------- model directories
QAT_FILE = "qat.json"


def save_qat_config(directory: str, cfg: QATConfig) -> None:
    """Marks a model directory (written from a QAT model) as quantization-aware."""
    import dataclasses
    import json
    with open(os.path.join(directory, QAT_FILE), "w") as f:
        json.dump(dataclasses.asdict(cfg), f, indent=2)


def load_qat_model(model_dir: str) -> keras.Model | None:
    """The QAT Keras model of a directory written from a QAT model (``qat.json`` + the
    weights including the learned ranges); None when ``model_dir`` has no ``qat.json``.
    Registered with `albert_tf.export.quantization.register_qat_loader` at import, so
    ``--quantization=qat`` finds it."""
    import json

    from albert_tf.checkpoints import load_task_model, restore_weights
    from albert_tf.training.experiment_config import override_params
    path = os.path.join(model_dir, QAT_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        cfg = override_params(QATConfig(), json.load(f))
    model, _ = load_task_model(model_dir)
    quantized = quantize_model(model, cfg)
    report = restore_weights(quantized, model_dir)
    if report.missing_in_checkpoint:
        raise ValueError(f"{model_dir}: QAT weights missing from the checkpoint: "
                         f"{report.missing_in_checkpoint[:5]}")
    return quantized


# ------------------------------------------------------------------------------- TFLite
def convert_int8(qat_model: keras.Model, source, calibration: dict, seq_length: int) -> bytes:
    """Full-integer TFLite bytes of a QAT model: int8 weights and activations, every op an
    int8 builtin; QAT ranges where the model has them, ``calibration`` (padded
    ``[n, seq_length]`` features, training split) for the rest (embeddings, LayerNorm
    statistics). The export's ``qat`` recipe with ``strict_int8`` (the same converter path
    as ``albert-tf-export --quantization=qat``); signatures as `albert_tf.export.tflite`
    (``source``: its `ExportSource`).
    """
    from albert_tf.export.tflite import convert
    return convert(source, "qat", [seq_length], 1, calibration=calibration,
                   qat_model=qat_model, strict_int8=True)


# What the export's ``qat`` recipe needs from this package: the model loader and the
# custom objects of a QAT SavedModel.
export_quantization.register_qat_loader(load_qat_model)
export_quantization.register_qat_scope(quantize_scope)


def __getattr__(name: str):
    """``HEAD_DENSE_NAMES``: the heads' own layers (``head_layers``) QAT quantizes when they
    are Dense layers, read when asked (kept for existing imports)."""
    if name == "HEAD_DENSE_NAMES":
        return heads.head_layer_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
