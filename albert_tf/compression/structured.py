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

Fine-tune the pruned model afterwards (the ``structured`` stage does).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.checkpoints import named_weights
from albert_tf.compression.compression_config import CompressionConfigError, StructuredConfig
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


def _blocks(model: keras.Model, cls) -> list:
    return [layer for layer in model.layers if isinstance(layer, cls)]


def pruned_config(config: AlbertConfig, cfg: StructuredConfig) -> AlbertConfig:
    """The config after removing ``head_fraction`` of the heads and ``ffn_fraction`` of
    the FFN neurons of every block (rounded to whole units, at least one kept)."""
    heads = config.num_attention_heads
    keep_heads = heads - int(round(cfg.head_fraction * heads))
    keep_neurons = config.intermediate_size - int(round(cfg.ffn_fraction *
                                                        config.intermediate_size))
    if keep_heads < 1 or keep_neurons < 1:
        raise CompressionConfigError(
            f"structured: head_fraction={cfg.head_fraction} / ffn_fraction={cfg.ffn_fraction} "
            f"would remove every head ({heads}) or neuron ({config.intermediate_size}).")
    if cfg.head_fraction and keep_heads == heads:
        raise CompressionConfigError(
            f"structured.head_fraction: {cfg.head_fraction} of {heads} heads rounds to none "
            "removed; use a fraction of at least 1 / num_attention_heads.")
    return config.replace(num_attention_heads=keep_heads, attention_head_size=config.head_size,
                          intermediate_size=keep_neurons)


# --------------------------------------------------------------------------- importance
def magnitude_importance(model: keras.Model) -> tuple[dict, dict]:
    """``({attention block: [N]}, {ffn block: [I]})`` squared weight norms per unit."""
    heads, neurons = {}, {}
    for block in _blocks(model, SelfAttentionBlock):
        n, d = block.num_heads, block.head_size
        score = np.zeros(n)
        for dense in (block.query, block.key, block.value):
            score += (dense.kernel.numpy() ** 2).reshape(-1, n, d).sum((0, 2))
        score += (block.output_dense.kernel.numpy() ** 2).reshape(n, d, -1).sum((1, 2))
        heads[block.name] = score
    for block in _blocks(model, FeedForwardBlock):
        neurons[block.name] = (block.intermediate.kernel.numpy() ** 2).sum(0) + \
            (block.output_dense.kernel.numpy() ** 2).sum(1)
    return heads, neurons


def gradient_importance(model: keras.Model, dataset: tf.data.Dataset, batches: int,
                        loss_fn=None) -> tuple[dict, dict]:
    """Taylor importance ``E_batch |sum_unit W_out * dL/dW_out|`` per head and neuron."""
    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    attention = _blocks(model, SelfAttentionBlock)
    ffn = _blocks(model, FeedForwardBlock)
    kernels = [b.output_dense.kernel for b in attention] + [b.output_dense.kernel for b in ffn]

    @tf.function(reduce_retracing=True)
    def step(features, labels):
        with tf.GradientTape() as tape:
            outputs = model(features, training=False)
            logits = outputs["logits"] if isinstance(outputs, dict) else outputs
            loss = loss_fn(labels, logits)
        grads = tape.gradient(loss, kernels)
        return [tf.reduce_sum(k * g, axis=-1) for k, g in zip(kernels, grads)]  # per input row

    heads = {b.name: np.zeros(b.num_heads) for b in attention}
    neurons = {b.name: np.zeros(b.intermediate_size) for b in ffn}
    seen = 0
    for features, labels in dataset.take(batches):
        rows = [r.numpy() for r in step(features, labels)]
        for i, block in enumerate(attention):
            heads[block.name] += np.abs(rows[i].reshape(block.num_heads, -1).sum(-1))
        for j, block in enumerate(ffn):
            neurons[block.name] += np.abs(rows[len(attention) + j])
        seen += 1
    if not seen:
        raise ValueError("gradient_importance: the dataset gave no batches.")
    return ({k: v / seen for k, v in heads.items()}, {k: v / seen for k, v in neurons.items()})


def plan(model: keras.Model, cfg: StructuredConfig, dataset: tf.data.Dataset | None = None,
         loss_fn=None) -> StructuredPlan:
    """Chooses the heads and neurons to keep in every block."""
    config = pruned_config(model.albert_config, cfg)
    if cfg.importance == "gradient":
        if dataset is None:
            raise ValueError("structured.importance=gradient needs training batches.")
        heads_imp, neurons_imp = gradient_importance(model, dataset, cfg.importance_batches,
                                                     loss_fn)
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
    for block in _blocks(model, SelfAttentionBlock):
        cols = _columns(plan_.heads[block.name], d)
        for sub in ("query", "key", "value"):
            values[f"{block.name}/{sub}/kernel"] = source[f"{block.name}/{sub}/kernel"][:, cols]
            values[f"{block.name}/{sub}/bias"] = source[f"{block.name}/{sub}/bias"][cols]
        values[f"{block.name}/output_dense/kernel"] = \
            source[f"{block.name}/output_dense/kernel"][cols, :]
    for block in _blocks(model, FeedForwardBlock):
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
    for block in _blocks(model, SelfAttentionBlock):
        kernel = block.output_dense.kernel.numpy()
        drop = np.setdiff1d(np.arange(block.num_heads), plan_.heads[block.name])
        if len(drop):
            kernel[_columns(drop, d), :] = 0.0
        block.output_dense.kernel.assign(kernel)
    for block in _blocks(model, FeedForwardBlock):
        kernel = block.output_dense.kernel.numpy()
        drop = np.setdiff1d(np.arange(block.intermediate_size), plan_.neurons[block.name])
        kernel[drop, :] = 0.0
        block.output_dense.kernel.assign(kernel)
    return model
