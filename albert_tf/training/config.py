"""Experiment configuration: dataclasses, YAML files and ``params_override``.

An experiment is an `ExperimentConfig`, built the TF Model Garden way, in order:

1. the defaults of the dataclasses (``ExperimentConfig()``, or the per-binary
   defaults of `pretraining_defaults` / `finetuning_defaults`);
2. each ``--config_file`` YAML, in the order given (later files win);
3. ``--params_override``: either ``"a.b=1,c.d=[x,y]"`` (values parsed as YAML
   scalars/lists), a YAML/JSON mapping string, or the path of a YAML file;
4. the flags for common settings (``--model_dir``, ``--learning_rate``...),
   applied by the binaries with `override_params`.

Every key is checked against the dataclasses: an unknown key raises
`ConfigKeyError` naming the full dotted key and the valid keys at that level,
and a value of the wrong type raises `ConfigValueError` naming the key.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from typing import Any, Mapping

import yaml


class ConfigKeyError(KeyError):
    """An override or YAML file names a key that the config does not have."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0])


class ConfigValueError(ValueError):
    """A config value has the wrong type or an invalid value; the message names the key."""


# ------------------------------------------------------------------ the config dataclasses
@dataclasses.dataclass
class RuntimeConfig:
    """Where and how to run.

    Attributes:
      distribution_strategy: ``one_device``, ``mirrored``, ``multi_worker_mirrored``
        or ``tpu``. The training code is the same for all; TPU only adds its cluster
        resolver and system initialization, multi-worker reads ``TF_CONFIG``.
      tpu: TPU address for ``tpu`` (``""`` = the local/Colab TPU, a name or
        ``grpc://host:port``).
      num_gpus: GPUs to use (``one_device`` uses GPU 0 when >= 1; ``mirrored`` uses
        ``num_gpus`` GPUs, or the CPU devices when 0).
      num_cpu_devices: split the CPU into this many logical devices before TF
        initializes (``mirrored`` without GPUs uses them as replicas).
      mixed_precision_dtype: ``float32``, ``mixed_bfloat16`` or ``mixed_float16``
        (the latter with dynamic loss scaling unless ``loss_scale`` is a number).
      loss_scale: ``dynamic`` or a fixed float, for ``mixed_float16`` only.
      seed: global seed (weights init, shuffling).
      deterministic: enable TF op determinism (slower; bitwise-reproducible runs).
      jit_compile: XLA-compile the train step.
      intra_op_threads / inter_op_threads: TF thread pools (0 = TF default).
    """

    distribution_strategy: str = "one_device"
    tpu: str = ""
    num_gpus: int = 0
    num_cpu_devices: int = 1
    mixed_precision_dtype: str = "float32"
    loss_scale: str = "dynamic"
    seed: int = 42
    deterministic: bool = False
    jit_compile: bool = False
    intra_op_threads: int = 0
    inter_op_threads: int = 0


@dataclasses.dataclass
class ModelParams:
    """The network: an official config name or a JSON path, optional init weights.

    Attributes:
      config: ``albert_mini`` (a name in ``official_configs/models``) or a path to an
        ``albert_config.json``; ignored when ``init_checkpoint`` is a model directory
        and ``config`` is empty.
      init_checkpoint: a model directory (``config.json`` + name-keyed weights, as
        written by ``albert-tf-convert`` or a previous training run) or a weights
        prefix; loaded once, before step 0, when ``model_dir`` has no checkpoint yet.
      hidden_dropout_prob / attention_probs_dropout_prob / classifier_dropout_prob:
        override the model config's dropout (None = keep).
      vocab_size: override the vocabulary size (None = keep), e.g. a tiny model
        with the 8k vocabulary.
    """

    config: str = "albert_mini"
    init_checkpoint: str = ""
    vocab_size: typing.Optional[int] = None
    hidden_dropout_prob: typing.Optional[float] = None
    attention_probs_dropout_prob: typing.Optional[float] = None
    classifier_dropout_prob: typing.Optional[float] = None


@dataclasses.dataclass
class DataConfig:
    """One input split.

    Attributes:
      input_path: file pattern(s) of pretraining TFRecords (comma-separated), or, for
        finetuning, unused (the task reads ``task.data_dir``).
      global_batch_size: examples per step over all replicas.
      is_training: shuffle and repeat.
      shuffle_seed: seed of the shuffle (defaults to ``runtime.seed``).
      split: finetuning split for this input (``train``, ``dev``, ``test``).
    """

    input_path: str = ""
    global_batch_size: int = 32
    is_training: bool = True
    shuffle_seed: typing.Optional[int] = None
    split: str = "train"


@dataclasses.dataclass
class TaskConfig:
    """What to learn.

    Attributes:
      type: ``pretraining`` (MLM + SOP), ``classification`` (GLUE classification and
        regression, custom TSV tasks) or ``squad``.
      name: finetuning task name for `albert_tf.data.tasks.load_task` (``sst2``,
        ``rte``, ``cola``, ``stsb``, ``mr``... or ``tsv:/path/to/dir``).
      data_dir: root of the task data (``$ALBERT_TF_DATA_DIR`` layout; empty: that variable).
      vocab_file: SentencePiece model of the tokenizer.
      do_lower_case: lower-case the text before SentencePiece.
      max_seq_length: sequence length (pretraining: of the TFRecords).
      max_predictions_per_seq: masked positions per sequence (pretraining).
      mlm_loss_weight / sop_loss_weight: pretraining loss weights.
      length_bucketing: finetuning: batch examples of similar length and cut each
        batch to its longest sequence (much faster on short inputs).
      train_data / validation_data / predict_data: the input splits.
      predict_output: file for ``--mode=predict`` (default
        ``<model_dir>/predictions_<split>.tsv``).
      doc_stride / max_query_length / max_answer_length / n_best_size: SQuAD.
      train_file / dev_file / test_file: custom TSV/CSV task files (``name`` is then
        the task's name); relative paths are under ``data_dir``.
      text_a_column / text_b_column / label_column / has_header / is_regression /
        label_list / metric: columns (header names or 0-based indices) and labels of
        a custom TSV task (see `albert_tf.data.tasks.load_tsv_task`).
    """

    type: str = "pretraining"
    name: str = ""
    data_dir: str = ""
    vocab_file: str = ""
    do_lower_case: bool = True
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    mlm_loss_weight: float = 1.0
    sop_loss_weight: float = 1.0
    length_bucketing: bool = True
    train_data: DataConfig = dataclasses.field(default_factory=DataConfig)
    validation_data: DataConfig = dataclasses.field(
        default_factory=lambda: DataConfig(is_training=False, split="dev"))
    predict_data: DataConfig = dataclasses.field(
        default_factory=lambda: DataConfig(is_training=False, split="test"))
    predict_output: str = ""
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best_size: int = 20
    train_file: str = ""
    dev_file: str = ""
    test_file: str = ""
    text_a_column: str = "sentence"
    text_b_column: str = ""
    label_column: str = "label"
    has_header: bool = True
    is_regression: bool = False
    label_list: typing.List[str] = dataclasses.field(default_factory=list)
    metric: str = ""


@dataclasses.dataclass
class OptimizerConfig:
    """Optimizer and learning-rate schedule (linear warmup, then polynomial decay).

    Attributes:
      type: ``lamb`` or ``adamw``.
      learning_rate: peak learning rate (reached at the end of warmup).
      end_learning_rate: learning rate at ``decay_steps``.
      warmup_steps: linear warmup from 0 (an int), or a fraction of train_steps when
        ``warmup_fraction`` > 0.
      warmup_fraction: warmup as a fraction of ``trainer.train_steps`` (overrides
        ``warmup_steps`` when > 0).
      decay_steps: polynomial decay horizon (0 = ``trainer.train_steps``).
      power: polynomial power (1.0 = linear decay, the original).
      weight_decay_rate: decoupled weight decay.
      exclude_from_weight_decay: regexes of weight names without decay (and, for
        LAMB, without layer adaptation), as the original.
      beta_1 / beta_2 / epsilon: moment hyperparameters.
      bias_correction: Adam bias correction (the original ALBERT/BERT optimizers
        have none).
      clip_norm: clip gradients by this global norm (0 = no clipping).
    """

    type: str = "lamb"
    learning_rate: float = 1e-3
    end_learning_rate: float = 0.0
    warmup_steps: int = 0
    warmup_fraction: float = 0.0
    decay_steps: int = 0
    power: float = 1.0
    weight_decay_rate: float = 0.01
    exclude_from_weight_decay: typing.List[str] = dataclasses.field(
        default_factory=lambda: ["LayerNorm", "layer_norm", "bias"])
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    bias_correction: bool = False
    clip_norm: float = 1.0


@dataclasses.dataclass
class TrainerConfig:
    """The training loop.

    Attributes:
      train_steps: total optimizer steps.
      steps_per_loop: steps per `tf.function` call (and per progress line).
      summary_interval: steps between TensorBoard summaries (a multiple of
        ``steps_per_loop`` is used).
      checkpoint_interval: steps between training-state checkpoints.
      max_to_keep: checkpoints kept by the CheckpointManager.
      validation_interval: steps between evaluations in ``train_and_eval``.
      validation_steps: evaluation batches (-1 = the whole split).
      best_checkpoint_metric: eval metric for best-model export ("" = the task's
        main metric); the best weights go to ``<model_dir>/best``.
      best_checkpoint_metric_comp: ``higher`` or ``lower`` is better.
      max_seconds: stop training (with a checkpoint) after this wall time (0 = none).
    """

    train_steps: int = 1000
    steps_per_loop: int = 100
    summary_interval: int = 100
    checkpoint_interval: int = 500
    max_to_keep: int = 3
    validation_interval: int = 1000
    validation_steps: int = -1
    best_checkpoint_metric: str = ""
    best_checkpoint_metric_comp: str = "higher"
    max_seconds: float = 0.0


@dataclasses.dataclass
class ExperimentConfig:
    """Everything one training run needs (see the module docstring for the layering)."""

    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    model: ModelParams = dataclasses.field(default_factory=ModelParams)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    trainer: TrainerConfig = dataclasses.field(default_factory=TrainerConfig)
    runtime: RuntimeConfig = dataclasses.field(default_factory=RuntimeConfig)
    model_dir: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.as_dict(), sort_keys=False)


# ----------------------------------------------------------------------- overriding
def _field_types(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


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
        return {}
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


def build_experiment(base: ExperimentConfig | None = None, config_files=(),
                     params_overrides=()) -> ExperimentConfig:
    """Defaults, then each YAML file, then each ``params_override`` string, in order."""
    config = apply_config_layers(base if base is not None else ExperimentConfig(),
                                 config_files, params_overrides)
    validate(config)
    return config


def apply_config_layers(config, config_files=(), params_overrides=()):
    """Applies each YAML file (a path or a name in ``official_configs/experiments``),
    then each ``params_override``, to the dataclass ``config``; errors name the file or
    the flag. Returns ``config``."""
    for path in config_files or ():
        path = resolve_config_file(path)
        try:
            override_params(config, load_yaml_file(path, keep_text=True))
        except (ConfigKeyError, ConfigValueError) as e:
            raise type(e)(f"{path}: {e}") from None
    for text in params_overrides or ():
        try:
            override_params(config, parse_params_override(text, keep_text=True))
        except (ConfigKeyError, ConfigValueError) as e:
            raise type(e)(f"--params_override: {e}") from None
    return config


STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
TASK_TYPES = ("pretraining", "classification", "squad")


def validate(config: ExperimentConfig) -> None:
    """Checks enumerated values and ranges, naming the key."""
    checks = [
        ("runtime.distribution_strategy", config.runtime.distribution_strategy, STRATEGIES),
        ("runtime.mixed_precision_dtype", config.runtime.mixed_precision_dtype, PRECISIONS),
        ("task.type", config.task.type, TASK_TYPES),
        ("optimizer.type", config.optimizer.type, ("lamb", "adamw")),
        ("trainer.best_checkpoint_metric_comp", config.trainer.best_checkpoint_metric_comp,
         ("higher", "lower")),
    ]
    for key, value, allowed in checks:
        if value not in allowed:
            raise ConfigValueError(f"{key}: {value!r} is not one of {list(allowed)}.")
    positive = [("trainer.train_steps", config.trainer.train_steps),
                ("trainer.steps_per_loop", config.trainer.steps_per_loop),
                ("task.train_data.global_batch_size", config.task.train_data.global_batch_size),
                ("task.validation_data.global_batch_size",
                 config.task.validation_data.global_batch_size),
                ("task.max_seq_length", config.task.max_seq_length)]
    for key, value in positive:
        if value <= 0:
            raise ConfigValueError(f"{key}: must be positive, got {value}.")
    if config.optimizer.learning_rate <= 0:
        raise ConfigValueError(f"optimizer.learning_rate: must be positive, got "
                               f"{config.optimizer.learning_rate}.")
    loss_scale = config.runtime.loss_scale
    if loss_scale != "dynamic":
        try:
            float(loss_scale)
        except ValueError:
            raise ConfigValueError(f"runtime.loss_scale: 'dynamic' or a number, got "
                                   f"{loss_scale!r}.") from None
