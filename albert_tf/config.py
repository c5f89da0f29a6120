"""`AlbertConfig`: the hyperparameters of one ALBERT (or BERT) model.

The field names are exactly the keys of Google's original ``albert_config.json``,
so a released config file loads unchanged. One key is ours: ``sharing`` says which
sublayers of a transformer layer share weights across depth.

Activation names
----------------
The same name means different functions in different code bases. Our names follow
the original Google code, the format of ``albert_config.json``:

============================  ==============================  ========================
our ``hidden_act``            function                        Hugging Face name
============================  ==============================  ========================
``gelu`` (Google's meaning)   tanh approximation of GELU      ``gelu_new``
``gelu_new``                  tanh approximation of GELU      ``gelu_new``
``gelu_pytorch_tanh``         tanh approximation of GELU      ``gelu_pytorch_tanh``
``gelu_fast``                 tanh approximation of GELU      ``gelu_fast``
``gelu_exact``                exact ``x * Phi(x)`` (erf)      ``gelu``
``relu``, ``tanh``, ``silu``  as named                        same
============================  ==============================  ========================

Hugging Face's ``"gelu"`` is the exact erf form; convert a Hugging Face config with
:func:`activation_from_hf` so that nothing changes meaning silently.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any, Mapping

SHARING_MODES = ("all", "attention", "ffn", "none")

# Our activation name -> canonical function name used by albert_tf.layers.activations.
ACTIVATIONS = {
    "gelu": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_tanh": "gelu_tanh",
    "gelu_exact": "gelu_exact",
    "gelu_erf": "gelu_exact",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
}

# Hugging Face activation name -> our name (only where the meaning differs or needs care).
_HF_TO_OURS = {"gelu": "gelu_exact", "gelu_new": "gelu_new",
               "gelu_pytorch_tanh": "gelu_pytorch_tanh", "gelu_fast": "gelu_fast",
               "relu": "relu", "tanh": "tanh", "silu": "silu", "swish": "silu"}
_OURS_TO_HF = {"gelu_tanh": "gelu_new", "gelu_exact": "gelu",
               "relu": "relu", "tanh": "tanh", "silu": "silu"}


class ConfigError(ValueError):
    """A model configuration is malformed; the message names the key and the fix."""


def activation_from_hf(name: str) -> str:
    """Maps a Hugging Face ``hidden_act`` to ours (HF ``gelu`` is the erf form)."""
    if name not in _HF_TO_OURS:
        raise ConfigError(f"hidden_act: Hugging Face activation {name!r} is not supported; "
                          f"use one of {sorted(_HF_TO_OURS)}.")
    return _HF_TO_OURS[name]


def activation_to_hf(name: str) -> str:
    """Maps our ``hidden_act`` to the Hugging Face name with the same function."""
    return _OURS_TO_HF[ACTIVATIONS[name]]


_POSITIVE_INTS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                  "num_hidden_groups", "inner_group_num", "num_attention_heads",
                  "intermediate_size", "max_position_embeddings", "type_vocab_size")
_PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob",
                  "classifier_dropout_prob")
_POSITIVE_FINITE = ("initializer_range", "layer_norm_eps")


def _check_type(name: str, annotation: str, value: Any) -> None:
    """``annotation`` is the field's annotation as text (``"int"``, ``"float | None"``)."""
    if value is None and annotation.endswith("| None"):
        return
    kind = annotation.split(" ")[0]
    expected = {"int": int, "float": (int, float), "str": str}.get(kind)
    if expected is not None and (isinstance(value, bool) or not isinstance(value, expected)):
        raise ConfigError(f"{name}: expected {kind}, got {value!r} ({type(value).__name__}).")


def _check_value(name: str, value: Any) -> None:
    """The rules of one field on its own (the cross-field ones are `AlbertConfig`'s)."""
    if name in _POSITIVE_INTS and value <= 0:
        raise ConfigError(f"{name}: must be a positive integer, got {value}.")
    if name in _PROBABILITIES and value is not None and not 0.0 <= value < 1.0:
        raise ConfigError(f"{name}: must be in [0, 1), got {value}.")
    if name == "attention_head_size" and value is not None and value <= 0:
        raise ConfigError(f"attention_head_size: must be a positive integer or null, got "
                          f"{value}.")
    if name == "sharing" and value not in SHARING_MODES:
        raise ConfigError(f"sharing: unknown mode {value!r}; use one of {list(SHARING_MODES)}.")
    if name == "hidden_act" and value not in ACTIVATIONS:
        raise ConfigError(f"hidden_act: unknown activation {value!r}; "
                          f"use one of {sorted(ACTIVATIONS)}.")
    if name in _POSITIVE_FINITE and not 0 < value < math.inf:   # also NaN (JSON allows NaN)
        raise ConfigError(f"{name}: must be a positive finite number, got {value}.")


def check_field(name: str, value: Any) -> None:
    """Checks one `AlbertConfig` field on its own, type and range, as a new config would
    (`ConfigError` naming the field); the rules between fields (heads dividing
    hidden_size, groups <= layers) need the whole config. Used to validate the
    ``model.<field>`` overrides of the experiment configs before any model is built."""
    fields = {f.name: f for f in dataclasses.fields(AlbertConfig)}
    if name not in fields:
        raise ConfigError(f"unknown config key {name!r}; known keys are {sorted(fields)}.")
    _check_type(name, str(fields[name].type), value)
    _check_value(name, value)


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Hyperparameters of an ALBERT or BERT encoder (field names as in ``albert_config.json``).

    BERT is the special case ``embedding_size == hidden_size`` (no projection) and
    ``sharing="none"``.

    Attributes:
      vocab_size: V, SentencePiece/WordPiece vocabulary size.
      embedding_size: E, width of the token embeddings (factorized: V x E then E -> H).
      hidden_size: H, width of every transformer layer.
      num_hidden_layers: L, depth of the encoder.
      num_hidden_groups: G, number of distinct parameter groups; layer ``i`` uses group
        ``int(i / L * G)`` exactly as the original code.
      inner_group_num: K, transformer layers applied, in order, inside each group call.
      num_attention_heads: N; ``hidden_size`` must be divisible by it.
      intermediate_size: I, width of the feed-forward layer.
      hidden_act: activation name, see the module docstring for its meaning.
      hidden_dropout_prob: dropout on embeddings and sublayer outputs.
      attention_probs_dropout_prob: dropout on attention probabilities.
      max_position_embeddings: P, longest sequence the model accepts.
      type_vocab_size: T, number of segment (token type) ids.
      initializer_range: stddev of the truncated-normal weight initializer.
      layer_norm_eps: LayerNorm epsilon (1e-12 in the original ALBERT).
      sharing: which weights are shared across the layers of a group: ``all``
        (the whole layer, ALBERT), ``attention`` (self-attention only), ``ffn``
        (feed-forward only) or ``none`` (BERT).
      classifier_dropout_prob: dropout before task heads (defaults to hidden dropout).
      attention_head_size: D, width of one attention head; ``None`` (the original) means
        ``hidden_size / num_attention_heads``. Set by structured head pruning
        (`albert_tf.compression.structured`), where ``N * D`` becomes less than H.
    """

    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    sharing: str = "all"
    classifier_dropout_prob: float | None = None
    attention_head_size: int | None = None

    def __post_init__(self) -> None:
        self._check_types()
        self._check_values()

    # ----------------------------------------------------------------- validation
    def _check_types(self) -> None:
        for field in dataclasses.fields(self):
            _check_type(field.name, str(field.type), getattr(self, field.name))

    def _check_values(self) -> None:
        for name in _POSITIVE_INTS + _PROBABILITIES + ("attention_head_size",):
            _check_value(name, getattr(self, name))
        if self.attention_head_size is None and self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size: {self.hidden_size} is not divisible by num_attention_heads="
                f"{self.num_attention_heads}; choose a head count that divides it.")
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"num_hidden_groups: {self.num_hidden_groups} groups but only "
                f"{self.num_hidden_layers} layers (num_hidden_layers); every group needs "
                "at least one layer, so use num_hidden_groups <= num_hidden_layers.")
        for name in ("sharing", "hidden_act") + _POSITIVE_FINITE:
            _check_value(name, getattr(self, name))

    # ------------------------------------------------------------------- derived
    @property
    def head_size(self) -> int:
        """D, the width of one attention head (H / N unless ``attention_head_size`` is set)."""
        if self.attention_head_size is not None:
            return self.attention_head_size
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer_index: int) -> int:
        """The hidden group that layer ``layer_index`` uses (original: int(i / L * G))."""
        return int(layer_index / self.num_hidden_layers * self.num_hidden_groups)

    @property
    def is_bert(self) -> bool:
        return self.embedding_size == self.hidden_size and self.sharing == "none"

    # ------------------------------------------------------------------ file I/O
    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "AlbertConfig":
        """Builds a config, rejecting unknown keys by name."""
        if not isinstance(values, Mapping):
            raise ConfigError(f"a config must be a JSON object, got {type(values).__name__}.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in set(values) - known)
        if unknown:
            hint = ""
            if "model_type" in values or "architectures" in values:
                hint = (" This looks like a Hugging Face config.json; convert it with "
                        "`albert-tf-convert --from=hf`.")
            raise ConfigError(f"unknown config key(s) {unknown}; known keys are "
                              f"{sorted(known)}.{hint}")
        return cls(**dict(values))

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "AlbertConfig":
        """Reads an ``albert_config.json`` (original keys plus ``sharing``)."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"config file {path!r} does not exist; pass the path to an "
                                    "albert_config.json or one of official_configs/models/*.json.")
        with open(path, encoding="utf-8") as f:
            try:
                values = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
                raise ConfigError(f"{path}: not valid JSON ({e}).") from None
        try:
            return cls.from_dict(values)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        if values["attention_head_size"] is None:   # only pruned models carry the key
            del values["attention_head_size"]
        return values

    def to_json(self, path: str | os.PathLike) -> None:
        """Writes the config atomically (temporary file, then rename)."""
        path = os.fspath(path)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)

    def replace(self, **changes: Any) -> "AlbertConfig":
        """A copy with some fields changed (validated like a new config)."""
        return dataclasses.replace(self, **changes)


def official_config_path(name: str) -> str:
    """Path of the shipped ``official_configs/models/<name>.json`` (`albert_tf.resources`)."""
    from albert_tf import resources
    return resources.model_config_path(name)


def load_config(name_or_path: str) -> AlbertConfig:
    """An official config by name (``albert_base``) or any config file by path."""
    if os.path.sep in name_or_path or name_or_path.endswith(".json"):
        return AlbertConfig.from_json(name_or_path)
    return AlbertConfig.from_json(official_config_path(name_or_path))
