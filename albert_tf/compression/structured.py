"""Structured pruning: remove attention heads and FFN neurons, giving a smaller dense model.

Unstructured sparsity makes no CPU kernel faster (TFLite/XNNPACK have no sparse
fully-connected kernels for these shapes); removing whole heads and neurons shrinks
the matrices themselves. Every attention block keeps the same number of heads and
every FFN block the same number of neurons, so the result is an ordinary model with
a valid config: ``num_attention_heads`` and ``intermediate_size`` shrink and
``attention_head_size`` keeps the head width D (``N * D`` is then less than H).
Which heads/neurons each block keeps is chosen per block by importance:

* ``magnitude``: squared norm of the weights that belong to the unit (a head's q, k,
  v columns and output rows; a neuron's input column and output row).
* ``gradient``: first-order Taylor estimate of the loss change when the unit is
  removed (Michel et al. 2019, Molchanov et al. 2019): ``|sum w * dL/dw|`` over the
  unit's rows of the output projection -- exactly ``|dL/dgate|`` for a gate on the
  unit's output -- averaged over training batches. A block shared across depths
  accumulates the gradient of all its depths, the importance of removing the unit
  from every depth at once.
* ``movement``: the same estimate kept signed (Sanh et al. 2020's movement score,
  ``-sum dL/dw * w``, per unit): summed over batches (and, on the schedule, over every
  mask update), so a unit whose removal would *lower* the loss goes first.

Fine-tune the pruned model afterwards (the ``structured`` stage does). Without training
data (a random model, as ``albert-tf-benchmark --compressed --structured`` times):
`prune_by_magnitude`; `keep_layers` removes whole layers instead.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import named_weights
# the config arithmetic (pruned_config, fewer_layers_config) lives beside StructuredConfig,
# free of TensorFlow, for one-line errors before it loads; still importable from here
from albert_tf.compression.compression_config import (StructuredConfig,
                                                      fewer_layers_config,
                                                      pruned_config)
from albert_tf.config import AlbertConfig
from albert_tf.layers import FeedForwardBlock, SelfAttentionBlock


@dataclasses.dataclass
class StructuredPlan:
    """What to keep: ``heads[block name]`` and ``neurons[block name]`` (sorted indices)."""

    config: AlbertConfig
    heads: dict[str, list[int]]
    neurons: dict[str, list[int]]
    head_importance: dict[str, list[float]]
    neuron_importance: dict[str, list[float]]

    def summary(self) -> dict:
        return {"num_attention_heads": self.config.num_attention_heads,
                "attention_head_size": self.config.head_size,
                "intermediate_size": self.config.intermediate_size,
                "kept_heads": self.heads}


def blocks(model: keras.Model, cls) -> list:
    return [layer for layer in model.layers if isinstance(layer, cls)]


# --------------------------------------------------------------------------- importance
def magnitude_importance(model: keras.Model) -> tuple[dict, dict]:
    """``({attention block: [N]}, {ffn block: [I]})`` squared weight norms per unit."""
    heads, neurons = {}, {}
    for block in blocks(model, SelfAttentionBlock):
        n, d = block.num_heads, block.head_size
        score = np.zeros(n)
        for dense in (block.query, block.key, block.value):
            score += (dense.kernel.numpy() ** 2).reshape(-1, n, d).sum((0, 2))
        score += (block.output_dense.kernel.numpy() ** 2).reshape(n, d, -1).sum((1, 2))
        heads[block.name] = score
    for block in blocks(model, FeedForwardBlock):
        neurons[block.name] = (block.intermediate.kernel.numpy() ** 2).sum(0) + \
            (block.output_dense.kernel.numpy() ** 2).sum(1)
    return heads, neurons


def removal_step(model: keras.Model, loss_fn=None):
    """``step(features, labels) -> ({attention block: [N]}, {ffn block: [I]})``: one batch's
    first-order estimate of the loss change if each head / neuron were removed,
    ``-sum_unit W_out * dL/dW_out`` over the unit's rows of the block's output kernel
    (signed; a ``tf.function`` traced once). `gradient_importance` turns batches of it
    into an importance, the scheduled stage calls it at every mask update."""
    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    attention = blocks(model, SelfAttentionBlock)
    ffn = blocks(model, FeedForwardBlock)
    kernels = [b.output_dense.kernel for b in attention] + [b.output_dense.kernel for b in ffn]

    @tf.function(reduce_retracing=True)
    def rows_of(features, labels):
        with tf.GradientTape() as tape:
            outputs = model(features, training=False)
            logits = outputs["logits"] if isinstance(outputs, dict) else outputs
            loss = loss_fn(labels, logits)
        grads = tape.gradient(loss, kernels)
        return [tf.reduce_sum(k * g, axis=-1) for k, g in zip(kernels, grads)]  # per input row

    def step(features, labels):
        rows = [-r.numpy() for r in rows_of(features, labels)]
        heads = {b.name: rows[i].reshape(b.num_heads, -1).sum(-1)
                 for i, b in enumerate(attention)}
        neurons = {b.name: rows[len(attention) + j] for j, b in enumerate(ffn)}
        return heads, neurons
    return step


def batch_importance(removal: tuple[dict, dict], kind: str) -> tuple[dict, dict]:
    """One batch's importance from `removal_step`'s estimates: ``gradient`` (first-order
    Taylor, Molchanov et al. 2019): ``|estimate|``, a unit whose removal moves the loss
    either way matters; ``movement`` (Sanh et al. 2020's score, per unit): the signed
    estimate, summed over batches and updates, a unit whose removal would lower the
    loss goes first."""
    if kind == "gradient":
        return tuple({k: np.abs(v) for k, v in part.items()} for part in removal)
    return removal


def add_into(total: dict, part: dict) -> None:
    """``total[name] += part[name]`` for every block (missing totals start at 0)."""
    for name, value in part.items():
        total[name] = total.get(name, 0.0) + value


def gradient_importance(model: keras.Model, dataset: tf.data.Dataset, batches: int,
                        loss_fn=None, step=None, kind: str = "gradient") -> tuple[dict, dict]:
    """The ``kind`` importance (`batch_importance`), averaged over ``batches`` batches of
    ``dataset``, per head and neuron (``step``: a `removal_step` of ``model`` to reuse)."""
    step = step or removal_step(model, loss_fn)
    heads: dict = {}
    neurons: dict = {}
    seen = 0
    for features, labels in dataset.take(batches):
        h, n = batch_importance(step(features, labels), kind)
        add_into(heads, h)
        add_into(neurons, n)
        seen += 1
    if not seen:
        raise ValueError("gradient_importance: the dataset gave no batches.")
    return ({k: v / seen for k, v in heads.items()}, {k: v / seen for k, v in neurons.items()})


def plan(model: keras.Model, cfg: StructuredConfig, dataset: tf.data.Dataset | None = None,
         loss_fn=None) -> StructuredPlan:
    """Chooses the heads and neurons to keep in every block."""
    config = pruned_config(model.albert_config, cfg)
    if cfg.importance != "magnitude":
        if dataset is None:
            raise ValueError(f"structured.importance={cfg.importance} needs training batches.")
        heads_imp, neurons_imp = gradient_importance(model, dataset, cfg.importance_batches,
                                                     loss_fn, kind=cfg.importance)
    else:
        heads_imp, neurons_imp = magnitude_importance(model)

    def top(scores, k):
        return sorted(int(i) for i in np.argsort(-np.asarray(scores), kind="stable")[:k])

    return StructuredPlan(
        config,
        {name: top(s, config.num_attention_heads) for name, s in heads_imp.items()},
        {name: top(s, config.intermediate_size) for name, s in neurons_imp.items()},
        {k: [float(x) for x in v] for k, v in heads_imp.items()},
        {k: [float(x) for x in v] for k, v in neurons_imp.items()})


# ------------------------------------------------------------------------- the new model
def _columns(head_ids, d):
    return np.concatenate([np.arange(h * d, (h + 1) * d) for h in head_ids])


def apply_plan(model: keras.Model, plan_: StructuredPlan, build_fn) -> keras.Model:
    """A new, smaller model (``build_fn(config)`` builds it) holding the kept units'
    weights; every other weight is copied by name."""
    new = build_fn(plan_.config)
    source = {k: v.numpy() for k, v in named_weights(model).items()}
    target = named_weights(new)
    d = model.albert_config.head_size
    values = dict(source)
    for block in blocks(model, SelfAttentionBlock):
        cols = _columns(plan_.heads[block.name], d)
        for sub in ("query", "key", "value"):
            values[f"{block.name}/{sub}/kernel"] = source[f"{block.name}/{sub}/kernel"][:, cols]
            values[f"{block.name}/{sub}/bias"] = source[f"{block.name}/{sub}/bias"][cols]
        values[f"{block.name}/output_dense/kernel"] = \
            source[f"{block.name}/output_dense/kernel"][cols, :]
    for block in blocks(model, FeedForwardBlock):
        keep = np.asarray(plan_.neurons[block.name])
        values[f"{block.name}/intermediate/kernel"] = \
            source[f"{block.name}/intermediate/kernel"][:, keep]
        values[f"{block.name}/intermediate/bias"] = source[f"{block.name}/intermediate/bias"][keep]
        values[f"{block.name}/output_dense/kernel"] = \
            source[f"{block.name}/output_dense/kernel"][keep, :]
    missing = [k for k in target if k not in values]
    if missing:
        raise ValueError(f"structured: no source for weights {missing[:5]}")
    for name, variable in target.items():
        if tuple(variable.shape) != values[name].shape:
            raise ValueError(f"structured: {name} has shape {values[name].shape}, the pruned "
                             f"model expects {tuple(variable.shape)}.")
        variable.assign(values[name])
    return new


def head_mask_equivalent(model: keras.Model, plan_: StructuredPlan) -> keras.Model:
    """(For tests) ``model`` with the removed heads' output rows and neurons zeroed: it
    computes exactly what the pruned model computes."""
    d = model.albert_config.head_size
    for block in blocks(model, SelfAttentionBlock):
        kernel = block.output_dense.kernel.numpy()
        drop = np.setdiff1d(np.arange(block.num_heads), plan_.heads[block.name])
        if len(drop):
            kernel[_columns(drop, d), :] = 0.0
        block.output_dense.kernel.assign(kernel)
    for block in blocks(model, FeedForwardBlock):
        kernel = block.output_dense.kernel.numpy()
        drop = np.setdiff1d(np.arange(block.intermediate_size), plan_.neurons[block.name])
        kernel[drop, :] = 0.0
        block.output_dense.kernel.assign(kernel)
    return model


# ------------------------------------------------------------- without training data
def prune_by_magnitude(model: keras.Model, head_fraction: float = 0.0,
                       ffn_fraction: float = 0.0, build_fn=None
                       ) -> tuple[keras.Model, StructuredPlan]:
    """A physically smaller copy of ``model`` with ``head_fraction`` of the attention heads
    and ``ffn_fraction`` of the FFN neurons of every block removed, chosen by weight magnitude
    (`magnitude_importance`: no training data, e.g. for a random model timed by
    ``albert-tf-benchmark --compressed``). A block shared across depths (ALBERT's) is pruned
    once: one set of weights, the same units removed at every depth.

    With H the hidden size, N heads of width D and I neurons, every attention block's
    query / key / value kernels go from ``[H, N * D]`` to ``[H, N' * D]`` (biases ``[N * D]``
    to ``[N' * D]``) and its output kernel from ``[N * D, H]`` to ``[N' * D, H]``; every FFN
    block's input kernel from ``[H, I]`` to ``[H, I']`` (bias ``[I']``) and output kernel
    from ``[I, H]`` to ``[I', H]``; ``N' = N - round(head_fraction * N)``,
    ``I' = I - round(ffn_fraction * I)`` (`pruned_config`). Everything else is copied.

    ``build_fn(config)`` builds the new model (default: `albert_tf.networks.encoder.
    build_encoder`, for an encoder; pass a task-model builder for a task model). Returns the
    new model and its `StructuredPlan`; a `CompressionConfigError` for fractions that remove
    every unit, or that round to no head removed."""
    if build_fn is None:
        from albert_tf.networks.encoder import build_encoder as build_fn
    cfg = StructuredConfig(head_fraction=head_fraction, ffn_fraction=ffn_fraction,
                           importance="magnitude")
    plan_ = plan(model, cfg)
    return apply_plan(model, plan_, build_fn), plan_


def keep_layers(model: keras.Model, num_layers: int, build_fn=None) -> keras.Model:
    """A copy of ``model`` with ``num_layers`` of its L layers, evenly spaced, the last kept
    (`albert_tf.compression.distillation.uniform_layer_map`; the weights copied by
    `~albert_tf.compression.distillation.init_student_from_teacher`). Every kept layer's
    tensors keep their shapes; with one hidden group (ALBERT) the shared block's weights are
    the same and it simply runs at ``num_layers`` depths instead of L. ``build_fn`` as in
    `prune_by_magnitude`."""
    from albert_tf.compression.distillation import init_student_from_teacher
    if build_fn is None:
        from albert_tf.networks.encoder import build_encoder as build_fn
    new = build_fn(fewer_layers_config(model.albert_config, num_layers))
    copied = init_student_from_teacher(new, model)
    if copied["skipped"]:
        raise ValueError(f"structured: no source for weights {copied['skipped'][:5]}")
    return new
