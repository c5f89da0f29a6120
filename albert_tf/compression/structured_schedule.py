"""Structured pruning on TF-MOT's polynomial-decay schedule, with distillation.

The one-shot structured stage (`albert_tf.compression.structured`) scores the heads and
FFN neurons once and removes them; here they are removed *while the model trains*:

1. (``num_layers``) the layers kept are chosen first, evenly spaced
   (`structured.keep_layers`; ALBERT: fewer passes of the shared block).
2. TF-MOT's ``PolynomialDecay`` (0 -> ``head_fraction`` / ``ffn_fraction`` from
   ``begin_step`` to ``end_step``, ``power``, an update every ``frequency`` optimizer steps:
   the pruning stage's schedule object and semantics) gives at every update the fraction of
   heads and of neurons masked. At each update the importance is recomputed with the
   masks in place (``importance``: ``gradient``, the first-order Taylor estimate on
   ``importance_batches`` training batches; ``movement``, the signed estimate summed over
   every update so far; ``magnitude``, weight norms; `structured.batch_importance`);
   masked units stay masked and the least important of the rest join them. A mask zeroes the unit's rows of the block's output kernel (a head's ``D``
   rows of the attention output ``[N * D, H]``, a neuron's row of the FFN output
   ``[I, H]``): the unit then adds nothing, exactly as if it were gone, and the rows are
   zeroed again after every optimizer step. ALBERT's shared block has one mask for all its
   depths; BERT one per layer, every block keeping the same count.
3. Throughout, with ``distill_alpha`` / ``distill_hidden_weight``, the model learns from
   the unpruned model it started from (frozen): soft targets and hidden states of matched
   layers (`albert_tf.compression.distillation.Distiller`).
4. At the end the masked units are removed (`structured.apply_plan`): an ordinary smaller
   model directory that every export, runner and converter takes as it is.
"""

from __future__ import annotations

import numpy as np

from albert_tf.backend import keras, tf
from albert_tf.compression import structured
from albert_tf.compression.compression_config import (DistillationConfig, StructuredConfig,
                                                     pruned_config)
from albert_tf.layers import FeedForwardBlock, SelfAttentionBlock


def polynomial_schedule(final: float, cfg: StructuredConfig):
    """TF-MOT's ``PolynomialDecay`` from 0 to ``final`` on ``cfg``'s steps."""
    import tensorflow_model_optimization as tfmot
    return tfmot.sparsity.keras.PolynomialDecay(
        initial_sparsity=0.0, final_sparsity=final, begin_step=cfg.begin_step,
        end_step=cfg.end_step, power=cfg.power, frequency=cfg.frequency)


def update_steps(cfg: StructuredConfig) -> dict[int, tuple[float, float]]:
    """``{optimizer step: (head fraction, neuron fraction)}`` at every step where the
    schedules update the masks (their ``should_prune``), read from the TF-MOT objects."""
    heads = polynomial_schedule(cfg.head_fraction, cfg)
    neurons = polynomial_schedule(cfg.ffn_fraction, cfg)
    out = {}
    for step in range(cfg.begin_step, cfg.end_step + 1, cfg.frequency):
        due, head_value = heads(tf.constant(step, tf.int64))
        _, neuron_value = neurons(tf.constant(step, tf.int64))
        if bool(due):
            out[step] = (float(head_value), float(neuron_value))
    return out


def removed_count(fraction: float, units: int) -> int:
    """Units removed at ``fraction`` (`pruned_config`'s rounding)."""
    return int(round(fraction * units))


def choose_kept(keep: np.ndarray, importance: np.ndarray, remove: int) -> np.ndarray:
    """The new keep mask: units already removed stay removed, then the least important
    of the rest until ``remove`` are gone (never fewer removed than before)."""
    scores = np.where(keep, np.asarray(importance, np.float64), -np.inf)
    order = np.argsort(scores, kind="stable")
    new = np.ones_like(keep)
    new[order[:max(remove, int((~keep).sum()))]] = False
    return new


class ScheduledUnitMasks(keras.callbacks.Callback):
    """Masks heads and FFN neurons of ``model`` on `update_steps`'s schedule (see the module
    docstring). ``batches`` yields ``(features, labels)`` for the importance. ``curve``:
    one dict per update (step, heads and neurons removed per block)."""

    def __init__(self, model: keras.Model, cfg: StructuredConfig, batches, loss_fn=None,
                 log=print):
        super().__init__()
        self.student, self.cfg, self.log = model, cfg, log
        self.attention = structured.blocks(model, SelfAttentionBlock)
        self.ffn = structured.blocks(model, FeedForwardBlock)
        self.heads = {b.name: np.ones(b.num_heads, bool) for b in self.attention}
        self.neurons = {b.name: np.ones(b.intermediate_size, bool) for b in self.ffn}
        self.schedule = update_steps(cfg)
        self.batches = iter(batches)
        self.removal = structured.removal_step(model, loss_fn)
        self.movement: tuple[dict, dict] = ({}, {})   # the movement scores so far
        self.step = 0
        self.curve: list[dict] = []

    # --------------------------------------------------------------------- callbacks
    def on_train_batch_begin(self, batch, logs=None):
        if self.step in self.schedule:
            self.update(*self.schedule[self.step])

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        self.apply()

    # ------------------------------------------------------------------------- masks
    def update(self, head_fraction: float, neuron_fraction: float) -> None:
        """Recomputes the importance and masks ``head_fraction`` / ``neuron_fraction``."""
        self.apply()
        heads, neurons = self.importance()
        for block in self.attention:
            self.heads[block.name] = choose_kept(
                self.heads[block.name], heads[block.name],
                removed_count(head_fraction, block.num_heads))
        for block in self.ffn:
            self.neurons[block.name] = choose_kept(
                self.neurons[block.name], neurons[block.name],
                removed_count(neuron_fraction, block.intermediate_size))
        self.apply()
        self.curve.append({"step": self.step, "head_fraction": head_fraction,
                           "ffn_fraction": neuron_fraction,
                           "heads_removed": self._removed(self.heads),
                           "neurons_removed": self._removed(self.neurons)})

    def importance(self) -> tuple[dict, dict]:
        """``({attention block: [N]}, {ffn block: [I]})`` now, by ``cfg.importance``."""
        if self.cfg.importance == "magnitude":
            return structured.magnitude_importance(self.student)
        heads, neurons = ({}, {}) if self.cfg.importance == "gradient" else self.movement
        for _ in range(self.cfg.importance_batches):
            h, n = structured.batch_importance(self.removal(*next(self.batches)),
                                               self.cfg.importance)
            structured.add_into(heads, h)
            structured.add_into(neurons, n)
        return heads, neurons

    def finish(self) -> None:
        """Reaches the final fractions if training stopped before the last update."""
        final = (self.cfg.head_fraction, self.cfg.ffn_fraction)
        want_heads = [removed_count(final[0], b.num_heads) for b in self.attention]
        want_neurons = [removed_count(final[1], b.intermediate_size) for b in self.ffn]
        if self._removed(self.heads) != want_heads or \
                self._removed(self.neurons) != want_neurons:
            self.log(f"structured: training ended at step {self.step}, before the schedule "
                     "reached its final fractions; removing them now")
            self.update(*final)

    @staticmethod
    def _removed(masks: dict) -> list[int]:
        return [int((~m).sum()) for m in masks.values()]

    def apply(self) -> None:
        """Zeroes the masked units' rows of the blocks' output kernels."""
        for block in self.attention:
            rows = np.repeat(self.heads[block.name], block.head_size)
            if not rows.all():
                _zero_rows(block.output_dense.kernel, rows)
        for block in self.ffn:
            rows = self.neurons[block.name]
            if not rows.all():
                _zero_rows(block.output_dense.kernel, rows)

    def plan(self) -> structured.StructuredPlan:
        """What the masks keep, as the plan `structured.apply_plan` removes the rest by."""
        config = pruned_config(self.student.albert_config, self.cfg)
        kept = {int(m.sum()) for m in self.heads.values()}
        neurons = {int(m.sum()) for m in self.neurons.values()}
        if kept != {config.num_attention_heads} or neurons != {config.intermediate_size}:
            raise ValueError(f"structured: the masks keep {sorted(kept)} heads and "
                             f"{sorted(neurons)} neurons per block; the pruned config "
                             f"{config.num_attention_heads} and {config.intermediate_size}.")
        return structured.StructuredPlan(
            config,
            {name: [int(i) for i in np.flatnonzero(m)] for name, m in self.heads.items()},
            {name: [int(i) for i in np.flatnonzero(m)] for name, m in self.neurons.items()},
            {}, {})


def _zero_rows(kernel, keep_rows: np.ndarray) -> None:
    kernel.assign(kernel * tf.constant(keep_rows[:, None], kernel.dtype))


def distillation_config(cfg: StructuredConfig) -> DistillationConfig:
    """The `Distiller`'s settings of a scheduled stage."""
    return DistillationConfig(temperature=cfg.distill_temperature, alpha=cfg.distill_alpha,
                              hidden_weight=cfg.distill_hidden_weight,
                              train_steps=cfg.train_steps)


def train_scheduled(model: keras.Model, cfg: StructuredConfig, fit, distil, train_batches,
                    build_fn, loss_fn=None, log=print):
    """The scheduled stage on ``model``; returns ``(smaller model, report dict)``.

    ``fit(model, callbacks)`` trains a model for the stage's steps on the labels;
    ``distil(student, teacher, distillation config, callbacks)`` trains ``student`` from
    ``teacher``; ``train_batches`` is an endless iterator of training batches (the
    importance's); ``build_fn(config)`` builds a task model of a config."""
    teacher = model
    student = model
    if cfg.num_layers and cfg.num_layers != model.albert_config.num_hidden_layers:
        student = structured.keep_layers(model, cfg.num_layers, build_fn)
        log(f"structured: kept {cfg.num_layers} of {model.albert_config.num_hidden_layers} "
            "layers")
    else:                                  # the teacher stays unpruned: train a copy
        student = build_fn(model.albert_config)
        student.set_weights(model.get_weights())
    masks = ScheduledUnitMasks(student, cfg, train_batches, loss_fn, log)
    if cfg.distill_alpha or cfg.distill_hidden_weight:
        distil(student, teacher, distillation_config(cfg), [masks])
    else:
        fit(student, [masks])
    masks.finish()
    plan = masks.plan()
    smaller = structured.apply_plan(student, plan, build_fn)
    report = {"plan": plan.summary(), "schedule": masks.curve,
              "params_before": teacher.count_params(), "params_after": smaller.count_params(),
              "distillation": {"alpha": cfg.distill_alpha,
                               "temperature": cfg.distill_temperature,
                               "hidden_weight": cfg.distill_hidden_weight}}
    return smaller, report
