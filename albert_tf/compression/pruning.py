"""Magnitude pruning of ALBERT with TF-MOT (unstructured, N:M or blocks), correct for
shared layers.

TF-MOT's ``PruneLowMagnitude`` keeps its own step counter: every *training call* of
the wrapper adds one and may update the mask. ALBERT calls its shared block L times
per optimizer step (one Keras layer, L inbound nodes, so ``clone_model`` gives one
wrapper for all depths), so with stock TF-MOT the schedule runs L times too fast
with sharing ``all`` and at the right speed with ``none``: the same YAML would mean
different things depending on the sharing mode.

`PruneLowMagnitudeOncePerStep` fixes that: its step is set from the optimizer's
``iterations`` by `PruningStepCallback` before every batch (TF-MOT's convention: the
batch that performs optimizer step ``k`` prunes at step ``k``), and its mask is
updated at most once per step, on the first of the L calls; the other calls only
apply the mask. A schedule therefore reads in optimizer steps, whatever the sharing.

Typical use (what ``albert-tf-compress`` does)::

    pruned = prune_model(model, PruningConfig(final_sparsity=0.8, end_step=2000))
    pruned.compile(...); pruned.fit(data, steps_per_epoch=..., callbacks=[PruningStepCallback()])
    final = strip_pruning(pruned)          # apply the masks, remove the wrappers
    report = sparsity_report(final, pruned_weight_names(pruned))
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np
import tensorflow_model_optimization as tfmot
from tensorflow_model_optimization.python.core.keras.utils import smart_cond
from tensorflow_model_optimization.python.core.sparsity.keras import (pruning_utils,
                                                                      pruning_wrapper)
from tensorflow_model_optimization.python.core.sparsity.keras.prune_registry import PruneRegistry

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import weight_name
from albert_tf.compression.compression_config import (PRUNE_GROUPS, CompressionConfigError,
                                                      PruningConfig, parse_block_size,
                                                      parse_m_by_n, validate_pruning)
from albert_tf.compression.graph import rewrap
import albert_tf.heads.registry as heads
from albert_tf.layers import AlbertEmbeddings, ClsPooler, FeedForwardBlock, SelfAttentionBlock


class PruningTargetError(CompressionConfigError):
    """``pruning.targets`` names a layer that does not exist or cannot be pruned."""


class BlockSizeError(CompressionConfigError):
    """``pruning.block_size`` does not tile a targeted kernel."""


# ----------------------------------------------------------------------------- schedule
def make_schedule(cfg: PruningConfig) -> tfmot.sparsity.keras.PruningSchedule:
    """The TF-MOT schedule of ``cfg``, in optimizer steps (validated first)."""
    validate_pruning(cfg)
    if cfg.schedule == "constant":
        return tfmot.sparsity.keras.ConstantSparsity(
            cfg.target_sparsity, begin_step=cfg.begin_step, end_step=cfg.end_step,
            frequency=cfg.frequency)
    return tfmot.sparsity.keras.PolynomialDecay(
        initial_sparsity=cfg.initial_sparsity, final_sparsity=cfg.final_sparsity,
        begin_step=cfg.begin_step, end_step=cfg.end_step, power=cfg.power,
        frequency=cfg.frequency)


def expected_sparsity(schedule, step: int) -> float:
    """Sparsity the masks have after optimizer step ``step``: the schedule's value at
    the last update step ``<= step`` (0 before the first one)."""
    steps = tf.range(1, step + 1, dtype=tf.int64)
    due, values = tf.vectorized_map(lambda s: schedule(s), steps) if step else ([], [])
    due, values = np.asarray(due, bool), np.asarray(values, np.float64)
    if not step or not due.any():
        return 0.0
    return float(values[np.nonzero(due)[0][-1]])


# ------------------------------------------------------------------------------ wrapper
@keras.utils.register_keras_serializable(package="albert_tf")
class PruneLowMagnitudeOncePerStep(pruning_wrapper.PruneLowMagnitude):
    """``PruneLowMagnitude`` whose step is the optimizer step, however often it is called.

    ``pruning_step`` is written by `PruningStepCallback` (optimizer iterations + 1)
    instead of being incremented by every call, and ``mask_update_step`` remembers
    the step of the last mask update so a layer shared by L depths updates once.

    Args:
      layer: the layer to prune (must have prunable weights).
      pruning_schedule: a TF-MOT ``PruningSchedule`` in optimizer steps.
      m_by_n: ``(m, n)`` for m zeros in every n consecutive input weights of a rank-2
        kernel whose input width is a multiple of n (other weights follow the
        schedule); the schedule then only says *when* masks are recomputed.
      block_size / block_pooling_type: TF-MOT's block sparsity: ``(R, C)`` blocks of the
        ``[in, out]`` kernel scored by the ``AVG`` or ``MAX`` of their ``|w|``, the
        schedule's sparsity being the fraction of blocks removed (`block_mask`). Every
        pruned weight must be rank 2 and a whole number of blocks (`BlockSizeError`).
    """

    _PRUNE_CALLBACK_ERROR_MSG = (
        "pruning_step is < 1: train with albert_tf.compression.pruning.PruningStepCallback() "
        "(it sets the step from the optimizer; TF-MOT's UpdatePruningStep does not).")

    def __init__(self, layer, pruning_schedule=None, m_by_n=None, **kwargs):
        kwargs.pop("sparsity_m_by_n", None)
        if pruning_schedule is None:
            pruning_schedule = tfmot.sparsity.keras.ConstantSparsity(0.5, 0)
        super().__init__(layer, pruning_schedule=pruning_schedule, **kwargs)
        self.m_by_n = tuple(m_by_n) if m_by_n else None

    def build(self, input_shape):
        super().build(input_shape)
        check_block_shapes(self.layer.name, [w for w, _, _ in self.pruning_vars],
                           self.block_size)
        self.mask_update_step = self.add_weight(
            "mask_update_step", shape=[], initializer=keras.initializers.Constant(-1),
            dtype=tf.int64, trainable=False)

    def uses_m_by_n(self, weight) -> bool:
        return bool(self.m_by_n) and weight.shape.rank == 2 and \
            weight.shape[0] % self.m_by_n[1] == 0 and not isinstance(self.layer, AlbertEmbeddings)

    def uses_blocks(self) -> bool:
        return tuple(self.block_size) != (1, 1)

    def _new_mask(self, weight):
        if self.uses_m_by_n(weight):
            rearranged = pruning_utils.weights_rearrange(weight)
            mask = pruning_utils.generate_m_by_n_mask(rearranged, self.m_by_n)
            mask = pruning_utils.m_by_n_sparsity_mask_prepare(mask, weight.shape)
            return tf.constant(0.0, weight.dtype), tf.cast(mask, weight.dtype)
        if self.uses_blocks():
            return block_mask(self.pruning_obj, weight, self.block_size, self.block_pooling_type)
        return self.pruning_obj._update_mask(weight)  # noqa: SLF001  (threshold, mask)

    def _update_masks(self):
        step = self.pruning_step
        due, _ = self.pruning_schedule(step)
        due = tf.logical_and(due, tf.not_equal(step, self.mask_update_step))

        def update():
            assigns = []
            for weight, mask, threshold in self.pruning_vars:
                new_threshold, new_mask = self._new_mask(weight)
                assigns += [threshold.assign(new_threshold), mask.assign(new_mask)]
            with tf.control_dependencies(assigns):
                return self.mask_update_step.assign(step)

        def keep():
            return tf.identity(self.mask_update_step)

        with tf.control_dependencies([tf.debugging.assert_greater_equal(
                step, np.int64(1), message=self._PRUNE_CALLBACK_ERROR_MSG)]):
            return tf.cond(due, update, keep)

    def call(self, inputs, training=None, **kwargs):
        if training is None:
            training = keras.backend.learning_phase()
        self.add_update(smart_cond(training, self._update_masks,
                                   lambda: tf.identity(self.mask_update_step)))
        self.add_update(self.pruning_obj.weight_mask_op())
        if "training" in _call_args(self.layer):
            return self.layer.call(inputs, training=training, **kwargs)
        return self.layer.call(inputs, **kwargs)

    def get_config(self):
        config = super().get_config()
        config["m_by_n"] = list(self.m_by_n) if self.m_by_n else None
        config["block_size"] = list(self.block_size)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        m_by_n = config.pop("m_by_n", None)
        layer = super().from_config(config)
        layer.m_by_n = tuple(m_by_n) if m_by_n else None
        return layer


def block_mask(pruning_obj, weight, block_size, pooling: str):
    """``(threshold, mask)`` of TF-MOT's block pruning (``Pruning._maybe_update_block_mask``)
    for a rank-2 ``weight`` that is a whole number of ``block_size`` blocks: ``|w|``
    pooled over each block (``AVG`` or ``MAX``), the schedule's threshold taken on the
    pooled matrix (``Pruning._update_mask``: the same sparsity, counted in blocks), the
    block mask expanded back. TF-MOT's own path pools with ``tf.nn.pool`` and squeezes,
    which breaks kernels with a dimension of 1 (a ``[H, 1]`` regression head); a
    reshape gives the same mask on every shape that the blocks tile."""
    rows, cols = (int(d) for d in weight.shape)
    r, c = (int(d) for d in block_size)
    blocks = tf.reshape(tf.abs(weight), [rows // r, r, cols // c, c])
    pool = tf.reduce_max if pooling == "MAX" else tf.reduce_mean
    threshold, mask = pruning_obj._update_mask(pool(blocks, axis=[1, 3]))  # noqa: SLF001
    return threshold, tf.repeat(tf.repeat(mask, r, axis=0), c, axis=1)


def check_block_shapes(layer_name: str, weights, block_size) -> None:
    """`BlockSizeError` unless each weight is rank 2 and tiled by ``block_size``."""
    r, c = (int(d) for d in block_size)
    if (r, c) == (1, 1):
        return
    for weight in weights:
        shape = [int(d) for d in weight.shape]
        if len(shape) != 2 or shape[0] % r or shape[1] % c:
            why = ("is not a rank-2 kernel" if len(shape) != 2 else
                   f"is not a whole number of {r}x{c} blocks")
            raise BlockSizeError(
                f"pruning.block_size: {r}x{c} cannot prune layer {layer_name!r}: its kernel "
                f"{weight_name(weight)} {shape} [in, out] {why}; choose a block that divides "
                "it or leave the layer out of pruning.targets.")


def _call_args(layer) -> list[str]:
    import inspect
    return inspect.getfullargspec(layer.call).args


def pruning_wrappers(model: keras.Model) -> list[PruneLowMagnitudeOncePerStep]:
    return [layer for layer in model.layers if isinstance(layer, PruneLowMagnitudeOncePerStep)]


class PruningStepCallback(tfmot.sparsity.keras.UpdatePruningStep):
    """Sets every `PruneLowMagnitudeOncePerStep` step to ``optimizer.iterations + 1``
    before each batch and applies the masks after each epoch and at the end."""

    def on_train_begin(self, logs=None):
        self.prunable_layers = pruning_wrappers(self.model)
        if not self.prunable_layers:
            raise ValueError("PruningStepCallback: the model has no "
                             "PruneLowMagnitudeOncePerStep layers; build it with prune_model().")

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy()) + 1
        keras.backend.batch_set_value([(layer.pruning_step, step)
                                       for layer in self.prunable_layers])

    def on_train_end(self, logs=None):
        apply_masks(self.model)


def sparse_weight_names(model: keras.Model, min_sparsity: float = 0.3) -> list[str]:
    """Kernels (rank >= 2) with at least ``min_sparsity`` exact zeros: weights pruned
    before (trained weights are never exactly zero)."""
    return [weight_name(w) for w in model.weights
            if w.shape.rank >= 2 and float(np.mean(w.numpy() == 0.0)) >= min_sparsity]


class KeepSparsity(keras.callbacks.Callback):
    """Keeps the zeros of already-pruned weights through later training (e.g. QAT after
    pruning): records ``weight != 0`` at the start and re-applies it after every batch,
    so the next forward pass (and its fake-quantized weights) sees the sparse weights."""

    def __init__(self, names: Iterable[str]):
        super().__init__()
        self.names = list(names)
        self._masks: list = []

    def on_train_begin(self, logs=None):
        by_name = {weight_name(w): w for w in self.model.weights}
        missing = [n for n in self.names if n not in by_name]
        if missing:
            raise KeyError(f"KeepSparsity: weights {missing[:5]} are not in the model.")
        self._masks = [(by_name[n], tf.cast(tf.not_equal(by_name[n], 0.0), by_name[n].dtype))
                       for n in self.names]

    def on_train_batch_end(self, batch, logs=None):
        for weight, mask in self._masks:
            weight.assign(weight * mask)


class SparsityCurve(keras.callbacks.Callback):
    """Records the masks' sparsity every ``every`` optimizer steps next to the schedule's
    expected value (``curve``: dicts of step, expected, min, max over pruned weights)."""

    def __init__(self, schedule, every: int):
        super().__init__()
        self.schedule, self.every, self.curve = schedule, max(1, int(every)), []

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every:
            return
        values = [1.0 - float(np.mean(mask.numpy())) for layer in pruning_wrappers(self.model)
                  for _, mask, _ in layer.pruning_vars]
        self.curve.append({"step": step, "expected": expected_sparsity(self.schedule, step),
                           "min": min(values), "max": max(values)})


def apply_masks(model: keras.Model) -> None:
    """``weight *= mask`` for every wrapper (the optimizer's last update can refill zeros)."""
    for layer in pruning_wrappers(model):
        for weight, mask, _ in layer.pruning_vars:
            weight.assign(weight * mask)


# ------------------------------------------------------------------------------ targets
def _group_of(layer: keras.layers.Layer) -> str | None:
    if isinstance(layer, SelfAttentionBlock):
        return "attention"
    if isinstance(layer, FeedForwardBlock):
        return "ffn"
    if isinstance(layer, AlbertEmbeddings):
        return "embeddings"
    if isinstance(layer, ClsPooler):
        return "pooler"
    if layer.name == "embedding_projection":
        return "embedding_projection"
    if layer.name in heads.head_layer_names():     # the heads' own layers
        return "head"
    return None


def prunable_weights_of(layer: keras.layers.Layer) -> list:
    """The weights TF-MOT would prune in ``layer`` ([] when it has none)."""
    if isinstance(layer, tfmot.sparsity.keras.PrunableLayer) or \
            hasattr(layer, "get_prunable_weights"):
        return list(layer.get_prunable_weights())
    if PruneRegistry.supports(layer):
        return list(PruneRegistry.make_prunable(layer).get_prunable_weights())
    return []


def resolve_targets(model: keras.Model, targets: Iterable[str]) -> list[str]:
    """Layer names that ``targets`` (groups or layer names) select in ``model``.

    Raises `PruningTargetError` for an unknown name and for a layer that has no
    prunable kernel (LayerNorm, dropout, the attention mask, an unsupported custom
    layer), before anything is wrapped or trained.
    """
    layers = {layer.name: layer for layer in model.layers
              if not isinstance(layer, keras.layers.InputLayer)}
    chosen: list[str] = []
    for target in targets:
        if target in PRUNE_GROUPS:
            chosen += [name for name, layer in layers.items() if _group_of(layer) == target]
            continue
        if target not in layers:
            raise PruningTargetError(
                f"pruning.targets: {target!r} is neither a group {list(PRUNE_GROUPS)} nor a "
                f"layer of the model (layers: {sorted(layers)}).")
        layer = layers[target]
        supported = isinstance(layer, tfmot.sparsity.keras.PrunableLayer) or \
            hasattr(layer, "get_prunable_weights") or PruneRegistry.supports(layer)
        if not supported or not prunable_weights_of(layer):
            raise PruningTargetError(
                f"pruning.targets: layer {target!r} ({type(layer).__name__}) cannot be pruned: "
                "it has no prunable kernel (TF-MOT prunes Dense/Embedding kernels and layers "
                "with get_prunable_weights()).")
        chosen.append(target)
    unique = list(dict.fromkeys(chosen))
    if not unique:
        raise PruningTargetError(f"pruning.targets: {list(targets)} select no layer of this "
                                 "model.")
    return unique


# -------------------------------------------------------------------------- model level
def prune_model(model: keras.Model, cfg: PruningConfig) -> keras.Model:
    """``model`` with every targeted layer wrapped once in `PruneLowMagnitudeOncePerStep`.

    The wrappers wrap the original layer objects: ``model``'s weights are pruned too.
    Checks the schedule and the targets before wrapping anything.
    """
    schedule = make_schedule(cfg)
    names = set(resolve_targets(model, cfg.targets))
    check_blocks(model, cfg, names)
    m_by_n = parse_m_by_n(cfg.m_by_n)
    block = parse_block_size(cfg.block_size)

    def wrap(layer):
        if layer.name in names:
            return PruneLowMagnitudeOncePerStep(layer, pruning_schedule=schedule, m_by_n=m_by_n,
                                                block_size=block,
                                                block_pooling_type=cfg.block_pooling)
        return layer

    return rewrap(keras.models.clone_model(model, clone_function=wrap), model)


def check_blocks(model: keras.Model, cfg: PruningConfig, names: Iterable[str] | None = None):
    """`BlockSizeError` (one line: the layer, its kernel, the shape) unless
    ``cfg.block_size`` tiles every kernel that ``cfg.targets`` select in ``model``
    (``names``: those layers, else `resolve_targets`, which raises for a bad target);
    checked before anything is wrapped or trained."""
    names = list(names) if names is not None else resolve_targets(model, cfg.targets)
    block = parse_block_size(cfg.block_size)
    if block == (1, 1):
        return
    layers = {layer.name: layer for layer in model.layers}
    for name in names:
        check_block_shapes(name, prunable_weights_of(layers[name]), block)


def pruned_weight_names(model: keras.Model) -> list[str]:
    """Canonical names of the weights that a pruned (wrapped) model prunes."""
    return [weight_name(weight) for layer in pruning_wrappers(model)
            for weight, _, _ in layer.pruning_vars]


def m_by_n_weight_names(model: keras.Model) -> list[str]:
    return [weight_name(weight) for layer in pruning_wrappers(model)
            for weight, _, _ in layer.pruning_vars if layer.uses_m_by_n(weight)]


def strip_pruning(model: keras.Model) -> keras.Model:
    """Applies the final masks and removes the wrappers (TF-MOT ``strip_pruning``)."""
    apply_masks(model)
    return rewrap(tfmot.sparsity.keras.strip_pruning(model), model)


@dataclasses.dataclass
class SparsityReport:
    """Per-weight sparsity (fraction of exact zeros) of the pruned weights, and whether
    each one's zeros form whole ``block_size`` blocks (`is_block_sparse`; ``None`` for a
    weight that the blocks do not tile)."""

    sparsity: dict[str, float]
    sizes: dict[str, int]
    block_size: str = "1x1"
    block_sparse: dict[str, bool | None] = dataclasses.field(default_factory=dict)

    def total(self) -> float:
        n = sum(self.sizes.values())
        return sum(self.sparsity[k] * self.sizes[k] for k in self.sparsity) / max(n, 1)

    def table(self) -> str:
        blocks = f"whole {self.block_size} blocks"
        lines = [f"| weight | shape elements | sparsity | {blocks} |", "|---|---|---|---|"]
        lines += [f"| {name} | {self.sizes[name]} | {value:.4f} | "
                  f"{_yes_no(self.block_sparse.get(name))} |"
                  for name, value in sorted(self.sparsity.items())]
        lines.append(f"| **all pruned weights** | {sum(self.sizes.values())} | "
                     f"{self.total():.4f} | {_yes_no(self.all_block_sparse())} |")
        return "\n".join(lines)

    def all_block_sparse(self) -> bool | None:
        values = list(self.block_sparse.values())
        return None if not values or None in values else all(values)

    def as_dict(self) -> dict:
        return {"weights": self.sparsity, "total": self.total(), "block_size": self.block_size,
                "block_sparse": self.block_sparse, "all_block_sparse": self.all_block_sparse()}


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def sparsity_report(model: keras.Model, names: Iterable[str],
                    block_size: str = "1x1") -> SparsityReport:
    """Sparsity of each named weight of ``model`` (stripped or not), and whether its zeros
    form whole ``block_size`` blocks (``"RxC"`` of the ``[in, out]`` kernel)."""
    block = parse_block_size(block_size)
    by_name = {weight_name(w): w for w in model.weights}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"weights {missing[:5]} are not in the model.")
    sparsity, sizes, block_sparse = {}, {}, {}
    for name in names:
        value = by_name[name].numpy()
        sparsity[name] = float(np.mean(value == 0.0))
        sizes[name] = int(value.size)
        block_sparse[name] = is_block_sparse(value, block)
    return SparsityReport(sparsity, sizes, f"{block[0]}x{block[1]}", block_sparse)


def is_block_sparse(weight: np.ndarray, block_size: tuple[int, int]) -> bool | None:
    """True when every ``(R, C)`` block of a rank-2 ``[in, out]`` weight is all zero or
    holds no zero (its zeros are whole blocks); ``None`` when the blocks do not tile it
    (or it is not rank 2). Always True for ``(1, 1)``."""
    weight = np.asarray(weight)
    r, c = block_size
    if weight.ndim != 2 or weight.shape[0] % r or weight.shape[1] % c:
        return None
    zeros = (weight == 0).reshape(weight.shape[0] // r, r, weight.shape[1] // c, c)
    count = zeros.sum(axis=(1, 3))
    return bool(np.all((count == 0) | (count == r * c)))


def is_m_by_n(weight: np.ndarray, m_by_n: tuple[int, int]) -> bool:
    """True when every n consecutive input weights of a ``[in, out]`` kernel hold >= m zeros."""
    m, n = m_by_n
    blocks = np.asarray(weight).T.reshape(weight.shape[1], -1, n)
    return bool(np.all((blocks == 0).sum(-1) >= m))


def __getattr__(name: str):
    """``HEAD_LAYER_NAMES``: the ``head`` group's layer names, read from the heads'
    ``head_layers`` when asked (kept for existing imports)."""
    if name == "HEAD_LAYER_NAMES":
        return heads.head_layer_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
