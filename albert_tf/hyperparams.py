"""The configuration layer: dataclasses <-> YAML and ``--params_override``.

Every experiment schema of the package is a tree of dataclasses built the same way
(the TF Model Garden way), whatever the binary:

* training (`albert_tf.training.experiment_config.ExperimentConfig`: albert-tf-pretrain/-finetune),
* compression (`albert_tf.compression.compression_config.CompressionConfig`: albert-tf-compress),
* the pipeline (`albert_tf.pipeline.pipeline_config.PipelineConfig`: albert-tf-run).

Layering (`build_config`, `apply_config_layers`): the dataclass defaults, then each YAML
file in order (a path, or a bare name of ``official_configs/experiments/<name>.yaml``),
then each ``--params_override`` in order: ``"a.b=1,c.d=[x,y]"`` (values parsed as YAML
scalars/lists), a YAML/JSON mapping string, or the path of a YAML file; then the
schema's ``validate``. The binaries apply their common flags on top with
`override_params`.

Every key is checked against the dataclasses: an unknown key raises `ConfigKeyError`
naming the full dotted key and the valid keys at that level; a value of the wrong type
raises `ConfigValueError` naming the key; both are one line, prefixed with the file or
the flag the value came from. A string field takes the text as written (``name: on``
stays ``"on"``, ``tpu=1:30`` stays ``"1:30"``), other fields YAML's typed value.

The model section (`model_override_fields`, `check_model_overrides`,
`apply_model_overrides`) makes every `albert_tf.config.AlbertConfig` field settable as
``<section>.<field>`` (None = keep the model config's value), validated by AlbertConfig's
own rules with errors naming ``<section>.<field>``.

API: `ConfigKeyError`, `ConfigValueError`, `override_params`, `parse_params_override`,
`load_yaml_file`, `resolve_config_file`, `apply_config_layers`, `build_config`,
`as_dict`, `to_yaml`, `check_one_of`, `check_positive`, and the model section above.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from typing import Any, Callable, Mapping

import yaml


class ConfigKeyError(KeyError):
    """An override or YAML file names a key that the config does not have."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0])


class ConfigValueError(ValueError):
    """A config value has the wrong type or an invalid value; the message names the key."""


# ------------------------------------------------------------------- YAML values
@dataclasses.dataclass(frozen=True)
class _YamlValue:
    """A YAML value as YAML typed it and as written (``yes`` -> True and "yes"): a string
    field takes the written text, so ``task.label_list=[yes,no]`` or ``runtime.tpu=1:30``
    stay ``["yes", "no"]`` and ``"1:30"`` instead of ``["True", "False"]`` and ``"90"``."""

    typed: Any
    text: Any


def _with_text(typed: Any, text: Any) -> Any:
    """``typed`` (from yaml.safe_load) with its mappings walked and every other value a
    `_YamlValue` carrying ``text`` (the same YAML through yaml.BaseLoader: strings only)."""
    if isinstance(typed, dict):
        if not isinstance(text, dict) or len(text) != len(typed) or any(
                isinstance(k, str) and k != t for k, t in zip(typed, text)):
            return typed      # e.g. YAML merge keys (<<): no written form to pair with
        return {k: _with_text(v, t) for (k, v), t in zip(typed.items(), text.values())}
    return _YamlValue(typed, text)


def _load_yaml(stream_or_text) -> Any:
    """yaml.safe_load, with `_YamlValue` leaves (see `_with_text`)."""
    if not isinstance(stream_or_text, str):
        stream_or_text = stream_or_text.read()
    typed = yaml.safe_load(stream_or_text)
    return _with_text(typed, yaml.load(stream_or_text, Loader=yaml.BaseLoader))


def _plain(value: Any) -> Any:
    """``value`` without `_YamlValue` wrappers (YAML's typed values)."""
    if isinstance(value, _YamlValue):
        return value.typed
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


# ----------------------------------------------------------------------- overriding
def _field_types(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Converts a YAML value to ``annotation``, or raises ConfigValueError naming ``key``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(value, dict):
        value = _plain(value)
    if isinstance(value, _YamlValue):
        if value.typed is not None and (annotation is str or (
                origin in (list, typing.List) and args == (str,))):
            value = value.text
        elif origin is not typing.Union:
            value = _plain(value.typed)
    if origin is typing.Union:
        if _plain(value) is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key)
    if origin in (list, typing.List):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigValueError(f"{key}: expected a list, got {value!r}.")
        return [_coerce(v, args[0] if args else Any, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, typing.Dict):
        if not isinstance(value, Mapping):
            raise ConfigValueError(f"{key}: expected a mapping like {{name: value}}, got "
                                   f"{value!r}.")
        key_type, value_type = args if args else (Any, Any)
        return {_coerce(k, key_type, key): _coerce(v, value_type, f"{key}.{k}")
                for k, v in value.items()}
    if annotation is Any:
        return value
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigValueError(f"{key}: expected true/false, got {value!r}.")
    if annotation is int:
        if isinstance(value, bool):
            raise ConfigValueError(f"{key}: expected an integer, got {value!r}.")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(float(value)) if float(value).is_integer() else int(value)
            except ValueError:
                pass
        if isinstance(value, int):
            return value
        raise ConfigValueError(f"{key}: expected an integer, got {value!r}.")
    if annotation is float:
        if isinstance(value, bool):
            raise ConfigValueError(f"{key}: expected a number, got {value!r}.")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigValueError(f"{key}: expected a number, got {value!r}.") from None
        if not math.isfinite(number):
            raise ConfigValueError(f"{key}: expected a finite number, got {value!r}.")
        return number
    if annotation is str:
        if value is None:
            return ""
        if isinstance(value, (dict, list)):
            raise ConfigValueError(f"{key}: expected a string, got {value!r}.")
        return str(value)
    return value


def override_params(config: Any, overrides: Mapping[str, Any] | None, prefix: str = "") -> Any:
    """Applies a nested ``{key: value}`` mapping to a config dataclass (in place).

    Keys may also be dotted (``{"trainer.train_steps": 10}``). Unknown keys raise
    `ConfigKeyError` with the full key and the valid keys at that level.
    """
    if not overrides:
        return config
    overrides = _plain(overrides) if isinstance(overrides, _YamlValue) else overrides
    if not isinstance(overrides, Mapping):
        raise ConfigValueError(f"{prefix[:-1] or 'config'}: expected a mapping of keys, "
                               f"got {overrides!r}.")
    types = _field_types(type(config))
    for raw_key, value in overrides.items():
        key = str(raw_key)
        if "." in key:
            head, rest = key.split(".", 1)
            override_params(config, {head: {rest: value}}, prefix)
            continue
        full = f"{prefix}{key}"
        if key not in types:
            valid = ", ".join(sorted(types))
            raise ConfigKeyError(f"unknown config key {full!r}: "
                                 f"{type(config).__name__} has no field {key!r}; "
                                 f"valid keys{' under ' + prefix[:-1] if prefix else ''}: "
                                 f"{valid}.")
        current = getattr(config, key)
        if dataclasses.is_dataclass(current):
            if _plain(value) is None:
                continue
            override_params(current, value, f"{full}.")
        else:
            setattr(config, key, _coerce(value, types[key], full))
    return config


def _split_top_level(text: str) -> list[str]:
    """Splits ``a=1,b=[2,3],c='x,y'`` on the commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if current:
        parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_params_override(text: str, keep_text: bool = False) -> dict[str, Any]:
    """Parses one ``--params_override`` value into a nested mapping.

    Accepted forms (as TF Model Garden): ``"task.name=sst2,trainer.train_steps=100"``,
    a YAML or JSON mapping string (``"{trainer: {train_steps: 100}}"``), or the
    path of a YAML file. ``keep_text``: values are `_YamlValue` (typed + as written) for
    `override_params`, which gives string fields the written text.
    """
    text = (text or "").strip()
    if not text:
        return {}
    if os.path.isfile(text):
        return load_yaml_file(text, keep_text)
    if "=" in text and not text.startswith("{"):
        result: dict[str, Any] = {}
        for part in _split_top_level(text):
            if "=" not in part:
                raise ConfigValueError(f"params_override: {part!r} is not of the form key=value "
                                       "(e.g. trainer.train_steps=100).")
            key, raw = part.split("=", 1)
            key = key.strip()
            try:
                value = _load_yaml(raw) if raw.strip() else ""
            except yaml.YAMLError:
                value = raw
            result[key] = value
        return result if keep_text else _plain(result)
    try:
        loaded = _load_yaml(text)
    except yaml.YAMLError as e:
        raise ConfigValueError(f"params_override: not key=value pairs nor valid YAML "
                               f"({_one_line(e)}).") from None
    if not isinstance(loaded, dict):
        raise ConfigValueError(f"params_override: expected key=value pairs or a mapping, got "
                               f"{text!r}.")
    return loaded if keep_text else _plain(loaded)


def load_yaml_file(path: str, keep_text: bool = False) -> dict[str, Any]:
    """The mapping of a YAML experiment file; ``keep_text`` as `parse_params_override`.
    Errors are one line naming the file; an empty file (or only comments) is one: it would
    silently run the defaults (``albert-tf-run --experiment=empty.yaml``: the whole default
    pipeline)."""
    if not os.path.exists(path):
        from albert_tf import resources
        raise FileNotFoundError(
            f"config file {path!r} does not exist: give a YAML path or one of the shipped "
            f"experiments: {', '.join(resources.experiment_names())}.")
    with open(path, encoding="utf-8") as f:
        try:
            loaded = _load_yaml(f)
        except yaml.YAMLError as e:
            raise ConfigValueError(f"{path}: invalid YAML ({_one_line(e)}).") from None
        except UnicodeDecodeError as e:
            raise ConfigValueError(f"{path}: not UTF-8 text ({e}).") from None
    if isinstance(loaded, _YamlValue):
        loaded = loaded.typed
    if loaded is None:
        raise ConfigValueError(f"{path}: the file is empty (no settings); give a YAML mapping "
                               "of settings, or leave the file out for the defaults.")
    if not isinstance(loaded, dict):
        raise ConfigValueError(f"{path}: an experiment file must be a YAML mapping.")
    return loaded if keep_text else _plain(loaded)


def resolve_config_file(path: str) -> str:
    """A path as given, or a bare name of a shipped experiment
    (``official_configs/experiments/<name>.yaml``, `albert_tf.resources`)."""
    from albert_tf import resources
    if os.path.exists(path):
        return path
    return resources.experiment_path(path) or path


def apply_config_layers(config, config_files=(), params_overrides=()):
    """Applies each YAML file (a path or a name in ``official_configs/experiments``),
    then each ``params_override``, to the dataclass ``config``; errors name the file or
    the flag. Returns ``config``."""
    for path in config_files or ():
        path = resolve_config_file(path)
        try:
            override_params(config, load_yaml_file(path, keep_text=True))
        except (ConfigKeyError, ConfigValueError) as e:     # named once, not "f: f: ..."
            raise type(e)(str(e) if str(e).startswith(f"{path}: ") else f"{path}: {e}") from None
    for text in params_overrides or ():
        try:
            override_params(config, parse_params_override(text, keep_text=True))
        except (ConfigKeyError, ConfigValueError) as e:
            raise type(e)(f"--params_override: {e}") from None
    return config


def build_config(config, config_files=(), params_overrides=(),
                 validate: Callable[[Any], None] | None = None):
    """`apply_config_layers`, then ``validate(config)`` (the schema's checks)."""
    config = apply_config_layers(config, config_files, params_overrides)
    if validate is not None:
        validate(config)
    return config


# --------------------------------------------------------------------------- output
def as_dict(config) -> dict[str, Any]:
    """The config as nested plain values (what `to_yaml` writes)."""
    return dataclasses.asdict(config)


def to_yaml(config) -> str:
    """YAML that `apply_config_layers` reads back to an equal config (keys in field order)."""
    return yaml.safe_dump(as_dict(config), sort_keys=False)


# ----------------------------------------------------------------- validation helpers
def check_one_of(key: str, value: Any, allowed, error: type[Exception] = ConfigValueError) -> None:
    """``key: 'x' is not one of [...]`` unless ``value`` is in ``allowed``."""
    if value not in allowed:
        raise error(f"{key}: {value!r} is not one of {list(allowed)}.")


def check_positive(key: str, value: Any, error: type[Exception] = ConfigValueError) -> None:
    """``key: must be positive, got v.`` unless ``value > 0``."""
    if not value > 0:
        raise error(f"{key}: must be positive, got {value}.")


# -------------------------------------------------------------------- model section
def model_override_fields() -> list[tuple[str, Any, Any]]:
    """``(name, Optional[type], field(default=None))`` for every `AlbertConfig` field, for
    `dataclasses.make_dataclass`: a schema's model section then sets any of them
    (None = keep the model config's value)."""
    from albert_tf.config import AlbertConfig
    types = typing.get_type_hints(AlbertConfig)
    return [(f.name, typing.Optional[types[f.name]], dataclasses.field(default=None))
            for f in dataclasses.fields(AlbertConfig)]


def model_overrides(section: Any) -> dict[str, Any]:
    """The `AlbertConfig` fields that ``section`` (a model section dataclass) sets."""
    from albert_tf.config import AlbertConfig
    return {f.name: getattr(section, f.name) for f in dataclasses.fields(AlbertConfig)
            if getattr(section, f.name, None) is not None}


def check_model_overrides(section: Any, prefix: str = "model") -> None:
    """Each override on its own (type and range, by AlbertConfig's rules);
    `ConfigValueError` naming ``<prefix>.<field>``. The rules between fields need the
    base config: `apply_model_overrides`."""
    from albert_tf.config import ConfigError, check_field
    for name, value in model_overrides(section).items():
        try:
            check_field(name, value)
        except ConfigError as e:
            raise ConfigValueError(f"{prefix}.{e}") from None


def apply_model_overrides(albert, section: Any, prefix: str = "model"):
    """``albert`` (an AlbertConfig) with the overrides of ``section``, validated as a new
    config; `ConfigValueError` naming ``<prefix>.<field>`` otherwise."""
    from albert_tf.config import ConfigError
    changes = model_overrides(section)
    if not changes:
        return albert
    check_model_overrides(section, prefix)
    try:
        return albert.replace(**changes)
    except ConfigError as e:
        message = str(e)
        field = message.split(":", 1)[0]
        if field in changes:
            raise ConfigValueError(f"{prefix}.{message}") from None
        keys = ", ".join(f"{prefix}.{k}" for k in changes)
        raise ConfigValueError(f"{keys}: with the model config's other values, {message}") \
            from None


__all__ = ["ConfigKeyError", "ConfigValueError", "apply_config_layers",
           "apply_model_overrides", "as_dict", "build_config", "check_model_overrides",
           "check_one_of", "check_positive", "load_yaml_file", "model_override_fields",
           "model_overrides", "override_params", "parse_params_override",
           "resolve_config_file", "to_yaml"]
