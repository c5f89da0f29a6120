"""Activation functions by name (see `albert_tf.config` for what each name means)."""

from __future__ import annotations

import math
from typing import Callable

from albert_tf.backend import tf
from albert_tf.config import ACTIVATIONS, ConfigError


def gelu_tanh(x: tf.Tensor) -> tf.Tensor:
    """GELU, tanh approximation (original ALBERT/BERT ``gelu``, HF ``gelu_new``).

    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``; lowered to the
    TFLite builtin ``GELU`` op with ``approximate=True``.
    """
    return tf.nn.gelu(x, approximate=True)


def gelu_exact(x: tf.Tensor) -> tf.Tensor:
    """GELU, exact form ``x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))`` (HF ``gelu``)."""
    return tf.nn.gelu(x, approximate=False)


_FUNCTIONS: dict[str, Callable[[tf.Tensor], tf.Tensor]] = {
    "gelu_tanh": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": tf.nn.relu,
    "tanh": tf.math.tanh,
    "silu": tf.nn.silu,
}

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def get_activation(name: str) -> Callable[[tf.Tensor], tf.Tensor]:
    """The function for a config ``hidden_act`` name."""
    if name not in ACTIVATIONS:
        raise ConfigError(f"hidden_act: unknown activation {name!r}; use one of {sorted(ACTIVATIONS)}.")
    return _FUNCTIONS[ACTIVATIONS[name]]
