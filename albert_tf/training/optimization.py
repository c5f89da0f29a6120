"""Optimizers (LAMB, AdamW), the warmup + polynomial-decay schedule, mixed precision.

Both optimizers follow the original ALBERT/BERT code: decoupled weight decay that
skips the weights whose names match ``exclude_from_weight_decay`` (LayerNorm and
biases), no Adam bias correction by default, and for LAMB the layer-wise trust
ratio ``||w|| / ||update||`` (also skipped for the excluded weights). Gradient
clipping by global norm happens in the trainer, after the cross-replica all-reduce,
so it sees the same gradients on every replica as on one device.
"""

from __future__ import annotations

import re

from albert_tf.backend import keras, tf


class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to ``learning_rate`` over ``warmup_steps``, then
    ``PolynomialDecay(learning_rate, decay_steps, end_learning_rate, power)`` (counted
    from step 0, as the original ALBERT/BERT)."""

    def __init__(self, learning_rate: float, decay_steps: int, warmup_steps: int = 0,
                 end_learning_rate: float = 0.0, power: float = 1.0, name: str = "warmup_poly"):
        super().__init__()
        self.learning_rate = float(learning_rate)
        self.decay_steps = max(1, int(decay_steps))
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.name = name

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        progress = tf.minimum(step, float(self.decay_steps)) / float(self.decay_steps)
        decayed = ((self.learning_rate - self.end_learning_rate)
                   * tf.pow(1.0 - progress, self.power) + self.end_learning_rate)
        if self.warmup_steps <= 0:
            return decayed
        warmup = self.learning_rate * step / float(self.warmup_steps)
        return tf.where(step < float(self.warmup_steps), warmup, decayed)

    def get_config(self) -> dict:
        return dict(learning_rate=self.learning_rate, decay_steps=self.decay_steps,
                    warmup_steps=self.warmup_steps, end_learning_rate=self.end_learning_rate,
                    power=self.power, name=self.name)


class _DecoupledDecayOptimizer(keras.optimizers.Optimizer):
    """Shared machinery: m/v slots, per-weight decay flags decided once in `build`."""

    def __init__(self, learning_rate=1e-3, weight_decay_rate: float = 0.0,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                 exclude_from_weight_decay=("LayerNorm", "layer_norm", "bias"),
                 bias_correction: bool = False, name: str = "optimizer", **kwargs):
        super().__init__(name=name, **kwargs)
        self._learning_rate = self._build_learning_rate(learning_rate)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_patterns = list(exclude_from_weight_decay or ())
        self.bias_correction = bool(bias_correction)

    def uses_weight_decay(self, name: str) -> bool:
        """False for weights whose name matches an exclusion regex (LayerNorm, bias)."""
        if self.weight_decay_rate == 0.0:
            return False
        return not any(re.search(p, name) for p in self.exclude_patterns)

    def build(self, var_list):
        super().build(var_list)
        if getattr(self, "_built", False):
            return
        self._built = True
        self._momentums, self._velocities, self._decay = [], [], []
        for var in var_list:
            self._momentums.append(self.add_variable_from_reference(var, "m"))
            self._velocities.append(self.add_variable_from_reference(var, "v"))
            self._decay.append(self.uses_weight_decay(var.name))

    def _adam_update(self, gradient, variable):
        """``(update, decays)`` with update = m_hat / (sqrt(v_hat) + eps) [+ wd * w]."""
        if isinstance(gradient, tf.IndexedSlices):
            gradient = tf.convert_to_tensor(gradient)
        index = self._index_dict[self._var_key(variable)]
        m, v = self._momentums[index], self._velocities[index]
        dtype = variable.dtype
        m.assign(self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        v.assign(self.beta_2 * v + (1.0 - self.beta_2) * tf.square(gradient))
        m_hat, v_hat = tf.identity(m), tf.identity(v)
        if self.bias_correction:
            step = tf.cast(self.iterations + 1, dtype)
            m_hat = m_hat / (1.0 - tf.pow(tf.cast(self.beta_1, dtype), step))
            v_hat = v_hat / (1.0 - tf.pow(tf.cast(self.beta_2, dtype), step))
        update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
        decays = self._decay[index]
        if decays:
            update += self.weight_decay_rate * variable
        return update, decays

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(learning_rate=self._serialize_hyperparameter(self._learning_rate),
                      weight_decay_rate=self.weight_decay_rate, beta_1=self.beta_1,
                      beta_2=self.beta_2, epsilon=self.epsilon,
                      exclude_from_weight_decay=self.exclude_patterns,
                      bias_correction=self.bias_correction)
        return config


class AdamWeightDecay(_DecoupledDecayOptimizer):
    """AdamW as the original BERT/ALBERT ``AdamWeightDecayOptimizer``:
    ``w -= lr * (m / (sqrt(v) + eps) + wd * w)``."""

    def __init__(self, *args, name: str = "AdamWeightDecay", **kwargs):
        super().__init__(*args, name=name, **kwargs)

    def update_step(self, gradient, variable):
        update, _ = self._adam_update(gradient, variable)
        lr = tf.cast(self.learning_rate, variable.dtype)
        variable.assign_sub(lr * update)


class Lamb(_DecoupledDecayOptimizer):
    """LAMB (You et al. 2019) as the original ALBERT ``lamb_optimizer``:
    ``w -= lr * r * (m / (sqrt(v) + eps) + wd * w)`` with the trust ratio
    ``r = ||w|| / ||update||`` (1 when either norm is 0, or for excluded weights)."""

    def __init__(self, *args, name: str = "LAMB", **kwargs):
        super().__init__(*args, name=name, **kwargs)

    def update_step(self, gradient, variable):
        update, decays = self._adam_update(gradient, variable)
        ratio = tf.constant(1.0, variable.dtype)
        if decays:
            w_norm = tf.norm(variable)
            g_norm = tf.norm(update)
            ratio = tf.where(w_norm > 0.0,
                             tf.where(g_norm > 0.0, w_norm / tf.maximum(g_norm, 1e-30), 1.0),
                             1.0)
        lr = tf.cast(self.learning_rate, variable.dtype)
        variable.assign_sub(ratio * lr * update)


def warmup_steps_of(optimizer_config, train_steps: int) -> int:
    if optimizer_config.warmup_fraction > 0:
        return int(round(optimizer_config.warmup_fraction * train_steps))
    return int(optimizer_config.warmup_steps)


def build_schedule(optimizer_config, train_steps: int) -> WarmupPolynomialDecay:
    return WarmupPolynomialDecay(
        optimizer_config.learning_rate,
        decay_steps=optimizer_config.decay_steps or train_steps,
        warmup_steps=warmup_steps_of(optimizer_config, train_steps),
        end_learning_rate=optimizer_config.end_learning_rate,
        power=optimizer_config.power)


def build_optimizer(optimizer_config, train_steps: int, mixed_precision_dtype: str = "float32",
                    loss_scale: str = "dynamic") -> keras.optimizers.Optimizer:
    """The configured optimizer with its schedule; wrapped in a `LossScaleOptimizer`
    for ``mixed_float16``. Create it under the strategy's scope."""
    cls = {"lamb": Lamb, "adamw": AdamWeightDecay}[optimizer_config.type]
    optimizer = cls(learning_rate=build_schedule(optimizer_config, train_steps),
                    weight_decay_rate=optimizer_config.weight_decay_rate,
                    beta_1=optimizer_config.beta_1, beta_2=optimizer_config.beta_2,
                    epsilon=optimizer_config.epsilon,
                    exclude_from_weight_decay=optimizer_config.exclude_from_weight_decay,
                    bias_correction=optimizer_config.bias_correction)
    if mixed_precision_dtype == "mixed_float16":
        if loss_scale == "dynamic":
            optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
        else:
            optimizer = keras.mixed_precision.LossScaleOptimizer(
                optimizer, dynamic=False, initial_scale=float(loss_scale))
    return optimizer


def inner_optimizer(optimizer):
    """The optimizer under a `LossScaleOptimizer` (or the optimizer itself)."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def current_learning_rate(optimizer) -> float:
    inner = inner_optimizer(optimizer)
    lr = inner._learning_rate  # noqa: SLF001 - the schedule object
    if callable(lr):
        return float(lr(inner.iterations))
    return float(keras.backend.get_value(lr))


def set_mixed_precision(dtype: str) -> None:
    """Sets the global Keras policy (``float32``, ``mixed_bfloat16``, ``mixed_float16``).

    The model keeps the embedding LayerNorm, the attention softmax and the output
    logits in float32 under either mixed policy (see `albert_tf.layers`).
    """
    keras.mixed_precision.set_global_policy(dtype)


def clip_gradients(grads, clip_norm: float):
    """Clips by global norm (``clip_norm <= 0``: unchanged); returns (grads, global_norm)."""
    norm = tf.linalg.global_norm([g for g in grads if g is not None])
    if clip_norm and clip_norm > 0:
        grads, _ = tf.clip_by_global_norm(grads, clip_norm, use_norm=norm)
    return grads, norm
