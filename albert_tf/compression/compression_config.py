"""Compression configuration: dataclasses read from YAML and ``--params_override``.

A compression experiment starts from a finetuned model directory (``config.json``,
weights, ``task.json``, ``vocab.model`` or ``vocab.txt``, as written by
``albert-tf-finetune``) and runs *stages* in the order listed in ``stages``; each stage
trains with Keras ``fit`` on the task's training split and hands its model to the next::

    init_model: /tmp/sst2/best
    model_dir: /tmp/sst2_pruned
    stages: [pruning, qat]          # prune, then quantization-aware training
    pruning: {final_sparsity: 0.8, begin_step: 0, end_step: 1500, frequency: 50,
              train_steps: 2000}
    qat: {activation_ranges: per_depth, train_steps: 1000}

The YAML layering, ``--params_override`` syntax and key checks are the package's
configuration layer, `albert_tf.hyperparams` (the same as training and the pipeline);
`validate` rejects bad values with the key's name before any model is built or trained.
Steps are always *optimizer* steps.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from typing import Any

from albert_tf import hyperparams, outputs
from albert_tf.config import AlbertConfig
from albert_tf.compression.errors import CompressionConfigError
from albert_tf.hyperparams import ConfigValueError  # noqa: F401  (the config layer's, re-exported)
from albert_tf.compression.speedup_space import (SPEEDUP_PARTS, SpeedupConfig, check_runtime,
                                                 check_space, check_target)
from albert_tf.training.experiment_config import OptimizerConfig

STAGES = ("structured", "distillation", "pruning", "qat")
PRUNE_GROUPS = ("attention", "ffn", "embedding_projection", "embeddings", "pooler", "head")




@dataclasses.dataclass
class StageTraining:
    """Training of one stage (fields shared by every stage).

    Attributes:
      train_steps: optimizer steps of the stage (0 = no training, e.g. one-shot).
      learning_rate: peak learning rate of the stage (warmup + linear decay as
        ``optimizer``); 0 = ``optimizer.learning_rate``.
    """

    train_steps: int = 1000
    learning_rate: float = 0.0


@dataclasses.dataclass
class PruningConfig(StageTraining):
    """Magnitude pruning with TF-MOT (`albert_tf.compression.pruning`): unstructured,
    N:M (``m_by_n``) or whole blocks (``block_size``).

    Attributes:
      schedule: ``polynomial_decay`` (TF-MOT ``PolynomialDecay``) or ``constant``
        (``ConstantSparsity``).
      initial_sparsity / final_sparsity: the polynomial curve's ends, in [0, 1).
      target_sparsity: the constant schedule's sparsity, in [0, 1).
      begin_step / end_step: optimizer steps where pruning starts / stops (the
        constant schedule accepts end_step -1: until training ends).
      power: exponent of the polynomial curve (TF-MOT default 3).
      frequency: optimizer steps between mask updates. TF-MOT's default of 100
        leaves a run shorter than that dense; here ``end_step - begin_step`` must be
        a multiple of it so that the final sparsity is really reached.
      m_by_n: ``"2:4"`` for N:M structured sparsity (m zeros in every n consecutive
        input weights) instead of magnitude thresholds; kernels whose input width is
        not a multiple of n keep the unstructured schedule (reported).
      block_size: ``"RxC"``: prune whole blocks of R consecutive inputs x C consecutive
        outputs of each targeted Keras kernel ``[in, out]`` (TF-MOT's ``block_size``;
        ``"1x1"`` = unstructured). TFLite's sparse FULLY_CONNECTED kernels take 1x4
        (float) or 1x16 (int8) blocks of the ``[out, in]`` weight, i.e. ``"4x1"`` /
        ``"16x1"`` here. Every targeted kernel must be a whole number of blocks (an
        error naming the layer and shape otherwise, before training); not with m_by_n.
      block_pooling: ``AVG`` or ``MAX``: a block's score is the mean or the largest
        ``|w|`` in it (TF-MOT's ``block_pooling_type``); the schedule's sparsity is then
        the fraction of blocks removed.
      targets: what to prune: groups (``attention`` q/k/v/output kernels, ``ffn``
        kernels, ``embedding_projection``, ``embeddings`` word table, ``pooler``,
        ``head`` task-head Dense) or exact layer names.
    """

    schedule: str = "polynomial_decay"
    initial_sparsity: float = 0.0
    final_sparsity: float = 0.8
    target_sparsity: float = 0.5
    begin_step: int = 0
    end_step: int = 1000
    power: float = 3.0
    frequency: int = 100
    m_by_n: str = ""
    block_size: str = "1x1"
    block_pooling: str = "AVG"
    targets: typing.List[str] = dataclasses.field(
        default_factory=lambda: ["attention", "ffn", "embedding_projection"])


@dataclasses.dataclass
class QATConfig(StageTraining):
    """Quantization-aware training with TF-MOT (`albert_tf.compression.qat`).

    Attributes:
      activation_ranges: ``per_depth`` (each of the L applications of a shared block
        keeps its own activation ranges; one weight set, one weight quantizer) or
        ``shared`` (one range per quantization point for all depths, what wrapping
        the shared layer once gives).
      activation_quantizer: ``moving_average`` (EMA of batch min/max, initialised from
        the first batch) or ``last_value``.
      ema_decay: decay of that EMA (TF-MOT's 0.999 barely moves in a short run).
      quantize_head: fake-quantize the pooler and the task head too.
      calibration_examples: representative examples for the TFLite converter
        (ranges of tensors QAT does not cover: embeddings, LayerNorm internals).
      per_channel_weights: int8 kernels per output channel instead of per tensor (the
        TFLite converter only converts that for kernels shared across depths).
      keep_sparsity: keep the zeros of kernels pruned before (by a ``pruning`` stage or
        an earlier run: kernels with >= 30% exact zeros) through QAT.
    """

    activation_ranges: str = "per_depth"
    activation_quantizer: str = "moving_average"
    ema_decay: float = 0.99
    quantize_head: bool = True
    calibration_examples: int = 200
    per_channel_weights: bool = False
    keep_sparsity: bool = True


@dataclasses.dataclass
class DistillationConfig(StageTraining):
    """Knowledge distillation (`albert_tf.compression.distillation`).

    The *current* model of the pipeline is the teacher unless ``teacher`` names a
    model directory; the student is built from ``student_config``.

    Attributes:
      teacher: a finetuned model directory ("" = the pipeline's current model).
      student_config: official config name or JSON path of the student encoder.
      student_init: ``random`` or ``teacher`` (copy embeddings and, where shapes
        match, every k-th teacher layer: needs the same H and E).
      temperature: softmax temperature of the soft targets.
      alpha: weight of the soft-target loss (times T^2); ``1 - alpha`` weighs the
        hard-label cross entropy.
      hidden_weight: weight of the MSE between matched hidden states (needs the same
        H in teacher and student).
      attention_weight: weight of the KL between matched attention distributions
        (needs the same number of heads).
      layer_map: teacher layer (1-based) matched by each student layer; empty = the
        uniform map ``round((i + 1) * L_t / L_s)``.
    """

    teacher: str = ""
    student_config: str = ""
    student_init: str = "random"
    temperature: float = 2.0
    alpha: float = 0.5
    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    layer_map: typing.List[int] = dataclasses.field(default_factory=list)


# the unit importances of `albert_tf.compression.structured` (its module docstring)
STRUCTURED_IMPORTANCES = ("magnitude", "gradient", "movement")


@dataclasses.dataclass
class StructuredConfig(StageTraining):
    """Structured pruning of heads and FFN neurons (`albert_tf.compression.structured`).

    Attributes:
      head_fraction: fraction of attention heads removed from every attention block.
      ffn_fraction: fraction of FFN neurons removed from every feed-forward block.
      importance: ``magnitude`` (weight norms), ``gradient`` (first-order Taylor
        ``|sum w * dL/dw|`` over ``importance_batches`` training batches) or ``movement``
        (the signed ``-sum w * dL/dw``, summed over batches and, on the schedule, over
        every mask update: Sanh et al. 2020's score per unit).
      importance_batches: batches for the gradient and movement importance (with the
        ``polynomial_decay`` schedule: at every mask update).
      schedule: ``one_shot`` (importance once, the units removed, then fine-tuning) or
        ``polynomial_decay``: TF-MOT's ``PolynomialDecay`` (from 0 to ``head_fraction`` /
        ``ffn_fraction``, ``begin_step`` .. ``end_step``, ``power``, a mask update every
        ``frequency`` optimizer steps: the pruning stage's schedule and semantics) masks
        the units of lowest importance, recomputed at every update, while the model
        trains; the masked units are removed at the end
        (`albert_tf.compression.structured_schedule`).
      begin_step / end_step / power / frequency: the schedule's (``polynomial_decay``).
      num_layers: keep this many of the L layers (evenly spaced, the last kept; ALBERT:
        passes of the shared block) before the heads and neurons; 0 keeps every layer.
      distill_alpha: with ``polynomial_decay``, distil from the unpruned model (frozen)
        throughout: the weight of the soft-target loss (``1 - alpha`` weighs the labels);
        0 trains on the labels alone.
      distill_temperature: the soft targets' temperature.
      distill_hidden_weight: weight of the MSE between the hidden states of matched
        layers (the hidden size is unchanged by structured pruning).
    """

    head_fraction: float = 0.25
    ffn_fraction: float = 0.5
    importance: str = "gradient"
    importance_batches: int = 32
    schedule: str = "one_shot"
    begin_step: int = 0
    end_step: int = 1000
    power: float = 3.0
    frequency: int = 100
    num_layers: int = 0
    distill_alpha: float = 0.0
    distill_temperature: float = 2.0
    distill_hidden_weight: float = 0.0


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
        fix = (f"pass --params_override=structured.head_fraction={1 / heads:.4g} (removes 1 "
               f"head) or more" if heads > 1 else "a model with one head keeps it")
        raise CompressionConfigError(
            f"structured.head_fraction: {cfg.head_fraction} of {heads} heads rounds to none "
            f"removed; {fix}, or structured.head_fraction=0 to keep every head.")
    return config.replace(num_attention_heads=keep_heads, attention_head_size=config.head_size,
                          intermediate_size=keep_neurons)


def structured_stage_config(config: AlbertConfig, cfg: StructuredConfig) -> AlbertConfig:
    """The config the structured stage ends with: ``cfg.num_layers`` of the layers kept
    (`fewer_layers_config`, when set), then the heads and neurons removed (`pruned_config`)."""
    if cfg.num_layers and cfg.num_layers != config.num_hidden_layers:
        config = fewer_layers_config(config, cfg.num_layers)
    return pruned_config(config, cfg)


def fewer_layers_config(config: AlbertConfig, num_layers: int) -> AlbertConfig:
    """``config`` with ``num_hidden_layers=num_layers`` (fewer, at least one and at least
    ``num_hidden_groups``); a `CompressionConfigError` otherwise."""
    if not max(1, config.num_hidden_groups) <= num_layers < config.num_hidden_layers:
        raise CompressionConfigError(
            f"structured: keeping {num_layers} of {config.num_hidden_layers} layers "
            f"({config.num_hidden_groups} hidden groups) removes none or leaves a group "
            "without a layer.")
    return config.replace(num_hidden_layers=num_layers)


@dataclasses.dataclass
class CompressionDataConfig:
    """The task data (the finetuned model's task.json gives task name and seq length).

    Attributes:
      task: task name for `albert_tf.data.task_data.load_task` ("" = task.json's).
      data_dir: root of the task data ("" = ``$ALBERT_TF_DATA_DIR``); for a head read from
        a custom file of its own format (multiple choice, token classification), the folder
        of its ``train.tsv`` and ``dev.tsv``.
      max_seq_length: training/eval length (0 = task.json's).
      batch_size / eval_batch_size: examples per training / evaluation batch.
      length_bucketing: batch training examples of similar length, cut to the longest.
    """

    task: str = ""
    data_dir: str = ""
    max_seq_length: int = 0
    batch_size: int = 32
    eval_batch_size: int = 128
    length_bucketing: bool = True


@dataclasses.dataclass
class ExportConfig:
    """TFLite files written at the end (``model_dir/model.tflite``, ``model_int8.tflite``).

    Attributes:
      tflite: write a float TFLite model (and an int8 one after QAT).
      seq_length: fixed sequence length of the TFLite model (0 = dynamic).
    """

    tflite: bool = True
    seq_length: int = 128


@dataclasses.dataclass
class CompressionConfig:
    """One compression experiment (see the module docstring).

    ``run_eagerly`` trains without ``tf.function`` (debugging, tiny models: tracing a
    pruned or fake-quantized graph takes tens of seconds on a small CPU).
    """

    init_model: str = ""
    model_dir: str = ""
    stages: typing.List[str] = dataclasses.field(default_factory=list)
    seed: int = 42
    run_eagerly: bool = False
    data: CompressionDataConfig = dataclasses.field(default_factory=CompressionDataConfig)
    optimizer: OptimizerConfig = dataclasses.field(
        default_factory=lambda: OptimizerConfig(type="adamw", learning_rate=5e-5,
                                                warmup_fraction=0.1, weight_decay_rate=0.01,
                                                bias_correction=True))
    pruning: PruningConfig = dataclasses.field(default_factory=PruningConfig)
    qat: QATConfig = dataclasses.field(default_factory=QATConfig)
    distillation: DistillationConfig = dataclasses.field(default_factory=DistillationConfig)
    structured: StructuredConfig = dataclasses.field(default_factory=StructuredConfig)
    speedup: SpeedupConfig = dataclasses.field(default_factory=SpeedupConfig)
    export: ExportConfig = dataclasses.field(default_factory=ExportConfig)

    def as_dict(self) -> dict[str, Any]:
        return hyperparams.as_dict(self)

    def to_yaml(self) -> str:
        return hyperparams.to_yaml(self)


def parse_m_by_n(text: str) -> tuple[int, int] | None:
    """``"2:4"`` -> ``(2, 4)``: 2 zeros in every 4 consecutive weights."""
    if not text:
        return None
    parts = str(text).replace("x", ":").replace("/", ":").split(":")
    try:
        m, n = (int(p) for p in parts)
    except ValueError:
        raise CompressionConfigError(f"pruning.m_by_n: expected 'M:N' such as '2:4', "
                                     f"got {text!r}.") from None
    if not 0 < m < n:
        raise CompressionConfigError(f"pruning.m_by_n: needs 0 < M < N (M zeros in every N "
                                     f"weights), got {text!r}.")
    return m, n


BLOCK_POOLINGS = ("AVG", "MAX")


def parse_block_size(text: str, key: str = "pruning.block_size") -> tuple[int, int]:
    """``"16x1"`` -> ``(16, 1)``: blocks of 16 consecutive inputs x 1 output of a Keras
    kernel ``[in, out]``; ``""`` and ``"1x1"`` -> ``(1, 1)`` (unstructured)."""
    text = str(text).strip()
    if not text:
        return 1, 1
    parts = text.lower().split("x")
    try:
        rows, cols = (int(p) for p in parts)
    except ValueError:
        raise CompressionConfigError(
            f"{key}: expected 'RxC' such as '16x1' (R inputs x C outputs of the Keras "
            f"[in, out] kernel; '1x1' = unstructured), got {text!r}.") from None
    if rows < 1 or cols < 1:
        raise CompressionConfigError(f"{key}: both sides of 'RxC' must be >= 1, got {text!r}.")
    return rows, cols


def _one_of(key: str, value, allowed) -> None:
    hyperparams.check_one_of(key, value, allowed, CompressionConfigError)


def _fraction(key: str, value: float, upper_open: bool = True) -> None:
    ok = 0.0 <= value < 1.0 if upper_open else 0.0 <= value <= 1.0
    if not ok:
        bound = "[0, 1)" if upper_open else "[0, 1]"
        raise CompressionConfigError(f"{key}: must be in {bound}, got {value}.")


def validate_pruning(cfg: PruningConfig, key: str = "pruning") -> None:
    """Rejects impossible schedules (before TF-MOT would, and with the key's name)."""
    _one_of(f"{key}.schedule", cfg.schedule, ("polynomial_decay", "constant"))
    if cfg.schedule == "polynomial_decay":
        _fraction(f"{key}.initial_sparsity", cfg.initial_sparsity)
        _fraction(f"{key}.final_sparsity", cfg.final_sparsity)
    else:
        _fraction(f"{key}.target_sparsity", cfg.target_sparsity)
    validate_schedule_steps(cfg, key, f"final_sparsity {cfg.final_sparsity}")
    parse_m_by_n(cfg.m_by_n)
    block = parse_block_size(cfg.block_size, f"{key}.block_size")
    _one_of(f"{key}.block_pooling", cfg.block_pooling, BLOCK_POOLINGS)
    if block != (1, 1) and cfg.m_by_n:
        raise CompressionConfigError(
            f"{key}.block_size: {cfg.block_size!r} and {key}.m_by_n {cfg.m_by_n!r} are two "
            f"different sparsity patterns; set only one ({key}.block_size=1x1 or "
            f"{key}.m_by_n='').")
    if not cfg.targets:
        raise CompressionConfigError(f"{key}.targets: empty; name what to prune, e.g. "
                                     f"{list(PRUNE_GROUPS[:3])}.")


def validate_schedule_steps(cfg, key: str, final: str) -> None:
    """The steps of a TF-MOT schedule (``begin_step``, ``end_step``, ``frequency``, within
    ``train_steps``): the pruning stage's and the scheduled structured stage's. ``final``
    names what the last update reaches (for the message)."""
    polynomial = cfg.schedule == "polynomial_decay"
    if polynomial and cfg.end_step < 0:
        raise CompressionConfigError(f"{key}.end_step: polynomial_decay needs an end step "
                                     f">= begin_step, got {cfg.end_step}.")
    if cfg.begin_step < 0:
        raise CompressionConfigError(f"{key}.begin_step: must be >= 0, got {cfg.begin_step}.")
    if cfg.end_step != -1 and cfg.end_step < cfg.begin_step:
        raise CompressionConfigError(
            f"{key}.end_step: {cfg.end_step} is before begin_step {cfg.begin_step}; pruning "
            "runs from begin_step to end_step (optimizer steps).")
    if cfg.frequency <= 0:
        raise CompressionConfigError(f"{key}.frequency: must be >= 1, got {cfg.frequency}.")
    if polynomial and (cfg.end_step - cfg.begin_step) % cfg.frequency:
        raise CompressionConfigError(
            f"{key}.frequency: masks are updated every {cfg.frequency} steps from begin_step "
            f"{cfg.begin_step}, so end_step {cfg.end_step} is never an update step and "
            f"{final} would not be reached; make end_step - begin_step a multiple of "
            "frequency.")
    if cfg.train_steps and cfg.end_step > cfg.train_steps:
        raise CompressionConfigError(
            f"{key}.end_step: {cfg.end_step} is after the last training step "
            f"({key}.train_steps={cfg.train_steps}); {final} would never be reached.")
    if cfg.train_steps and cfg.begin_step >= cfg.train_steps:
        raise CompressionConfigError(f"{key}.begin_step: {cfg.begin_step} is not before the "
                                     f"end of training ({key}.train_steps={cfg.train_steps}).")


def set_train_steps(config: CompressionConfig, steps: int) -> None:
    """``albert-tf-compress --num_train_steps=N``: every stage trains ``N`` optimizer steps,
    and the pruning schedule is scaled to the new length so that it stays valid.

    The schedule's steps (``begin_step``, ``end_step``, ``frequency``) are scaled by
    ``N / pruning.train_steps`` (``end_step`` when ``train_steps`` is 0): pruning starts and
    stops at the same fractions of training, masks are updated about as often per step,
    ``end_step - begin_step`` stays a whole number of ``frequency`` (so ``final_sparsity``
    is reached) and ``end_step`` is at most ``N``. ``compress_sst2_pruning`` (begin 0, end
    1500, every 50 of 2000 steps) at ``N=100``: end 74, every 2 steps.
    """
    if steps < 1:
        raise CompressionConfigError(f"--num_train_steps: must be >= 1, got {steps} (every "
                                     "stage trains that many optimizer steps).")
    scale_schedule(config.pruning, steps)
    if config.structured.schedule == "polynomial_decay":
        scale_schedule(config.structured, steps)
    for name in STAGES:
        getattr(config, name).train_steps = steps


def scale_schedule(p, steps: int) -> None:
    """`set_train_steps`'s scaling of one schedule (``begin_step``, ``end_step``,
    ``frequency`` of a `PruningConfig` or a scheduled `StructuredConfig`) to ``steps``."""
    old = p.train_steps or max(p.end_step, p.begin_step + 1, 1)
    scale = steps / old
    begin = min(max(0, int(round(p.begin_step * scale))), steps - 1)
    frequency = max(1, int(round(p.frequency * scale)))
    if p.end_step == -1:          # the constant schedule: until training ends
        end = -1
    else:
        span = min(max(1, int(round((p.end_step - p.begin_step) * scale))), steps - begin)
        frequency = min(frequency, span)
        end = begin + frequency * max(1, span // frequency)
    p.begin_step, p.end_step, p.frequency = begin, end, frequency


def check_run(config: CompressionConfig) -> None:
    """What a run needs before it reads anything (no TensorFlow: ``albert-tf-compress``
    checks it before TensorFlow loads, `compressor.run` again): ``init_model``,
    ``model_dir`` and ``stages`` given, and ``model_dir`` a run directory albert-tf may write
    (`albert_tf.outputs.check_run_directory`: not the current directory or above it, not
    equal to, containing or inside ``--init_model``, writable, new or empty or an earlier
    compress run, its ``model/``, ``tflite/`` and ``tflite_int8/`` albert-tf's)."""
    validate(config)
    if not config.init_model:
        raise CompressionConfigError("init_model: pass the finetuned model directory "
                                     "(--init_model=DIR, written by albert-tf-finetune).")
    if not config.model_dir:
        raise CompressionConfigError("model_dir: pass where to write the compressed model.")
    if not config.stages:
        raise CompressionConfigError(f"stages: empty; choose some of "
                                     f"{list(STAGES)} (e.g. --stages=pruning,qat).")
    outputs.check_run_directory(config.model_dir, kind=RUN_KIND, writes=RUN_OUTPUTS,
                                inputs=run_inputs(config), flag="--model_dir")
    check_same_init_model(config)
    check_model_fits(config)


def check_same_init_model(config: CompressionConfig) -> None:
    """A compress run directory holds the compression of one ``init_model`` (its
    `RUN_RECORD`, written when the run starts): compressing another model there would
    replace its ``model/`` and exports with another model's (or another task's)."""
    import json
    path = os.path.join(config.model_dir, RUN_RECORD)
    try:
        with open(path, encoding="utf-8") as f:
            earlier = json.load(f).get("init_model")
    except (OSError, ValueError, AttributeError):
        return                      # a new run, or one from before the record
    given = os.path.realpath(config.init_model)
    if earlier and os.path.realpath(earlier) != given:
        raise CompressionConfigError(
            f"--model_dir={config.model_dir} holds the compression of --init_model={earlier} "
            f"(its {RUN_RECORD}); compressing --init_model={config.init_model} there would "
            "replace that model: pass a new --model_dir.")


def record_init_model(config: CompressionConfig) -> None:
    """Writes `RUN_RECORD` (the ``init_model`` this run compresses) into ``model_dir``."""
    import json
    outputs.write_text(os.path.join(config.model_dir, RUN_RECORD),
                       json.dumps({"init_model": os.path.abspath(config.init_model),
                                   "stages": list(config.stages)}, indent=1) + "\n")


# The run directory of albert-tf-compress and the outputs it replaces inside it.
RUN_KIND = outputs.RUN_KINDS["albert-tf-compress"]
MODEL_DIR, FLOAT_DIR, INT8_DIR = "model", "tflite", "tflite_int8"   # inside --model_dir
RUN_RECORD = "run.json"            # the init_model a compress run directory compresses
RUN_OUTPUTS = ((MODEL_DIR, outputs.MODEL_DIRECTORY), (FLOAT_DIR, outputs.export_kind("tflite")),
               (INT8_DIR, outputs.export_kind("tflite")))


def check_model_fits(config: CompressionConfig) -> None:
    """The stages' checks that need only the ``init_model``'s ``config.json`` (plain JSON,
    no TensorFlow), before any model loads: structured pruning removes at least one head
    (`pruned_config`) and keeps one of each. Skipped when the directory has no
    ``config.json`` (the model-directory check says so)."""
    from albert_tf.config import load_config
    path = os.path.join(config.init_model, "config.json")
    if "structured" not in config.stages or not os.path.isfile(path):
        return
    s = config.structured
    head = _task_head(config.init_model)
    if (s.distill_alpha or s.distill_hidden_weight) and head and \
            head.distill_output is None:
        raise CompressionConfigError(
            f"structured.distill_alpha: distillation of {head.name} tasks is not supported "
            "yet; pass --params_override=structured.distill_alpha=0,structured.distill_"
            "hidden_weight=0.")
    try:
        model_config = load_config(path)
    except ValueError:          # a broken config.json: loading the model says what is wrong
        return
    if config.speedup.active:   # the search chooses the shape; what it may remove is checked
        check_space(model_config, config.speedup)
        return
    structured_stage_config(model_config, config.structured)


def _task_head(model_dir: str):
    """The registered head (`albert_tf.heads.base.Head`) ``model_dir``'s task.json names
    (None when it cannot be read or names no head: loading the model says why)."""
    import json

    import albert_tf.heads.registry as heads
    try:
        with open(os.path.join(model_dir, "task.json"), encoding="utf-8") as f:
            return heads.every_head().get(str(json.load(f).get("head", "")))
    except (OSError, ValueError, AttributeError):
        return None


def run_inputs(config: CompressionConfig) -> list[tuple[str, str | None]]:
    """What compression reads: ``--model_dir`` may not equal, contain or lie inside it."""
    return [("--init_model", config.init_model)]


def validate(config: CompressionConfig) -> None:
    """Checks every enumerated value and range, naming the key; builds nothing."""
    for stage in config.stages:
        if stage not in STAGES:
            raise CompressionConfigError(f"stages: unknown stage {stage!r}; use some of "
                                         f"{list(STAGES)} (applied in the order given).")
    if len(set(config.stages)) != len(config.stages):
        raise CompressionConfigError(f"stages: {config.stages} lists a stage twice.")
    if "qat" in config.stages and config.stages[-1] != "qat":
        raise CompressionConfigError("stages: qat must be the last stage (the fake-quantized "
                                     "model is what gets converted to int8).")
    for name in STAGES:
        stage = getattr(config, name)
        if stage.train_steps < 0:
            raise CompressionConfigError(f"{name}.train_steps: must be >= 0.")
        if stage.learning_rate < 0:
            raise CompressionConfigError(f"{name}.learning_rate: must be >= 0.")
    if "pruning" in config.stages:
        validate_pruning(config.pruning)
    q = config.qat
    _one_of("qat.activation_ranges", q.activation_ranges, ("per_depth", "shared"))
    _one_of("qat.activation_quantizer", q.activation_quantizer,
            ("moving_average", "last_value"))
    if not 0.0 <= q.ema_decay < 1.0:
        raise CompressionConfigError(f"qat.ema_decay: must be in [0, 1), got {q.ema_decay}.")
    d = config.distillation
    if "distillation" in config.stages and not d.student_config:
        raise CompressionConfigError("distillation.student_config: name the student, e.g. "
                                     "albert_mini or a config JSON path.")
    _one_of("distillation.student_init", d.student_init, ("random", "teacher"))
    if d.temperature <= 0:
        raise CompressionConfigError(f"distillation.temperature: must be > 0, got "
                                     f"{d.temperature}.")
    _fraction("distillation.alpha", d.alpha, upper_open=False)
    for key in ("hidden_weight", "attention_weight"):
        if getattr(d, key) < 0:
            raise CompressionConfigError(f"distillation.{key}: must be >= 0.")
    validate_structured(config.structured)
    validate_speedup(config)
    if config.data.batch_size <= 0 or config.data.eval_batch_size <= 0:
        raise CompressionConfigError("data.batch_size and data.eval_batch_size must be >= 1.")


def validate_structured(s: StructuredConfig) -> None:
    _fraction("structured.head_fraction", s.head_fraction)
    _fraction("structured.ffn_fraction", s.ffn_fraction)
    _one_of("structured.importance", s.importance, STRUCTURED_IMPORTANCES)
    if s.importance != "magnitude" and s.importance_batches <= 0:
        raise CompressionConfigError("structured.importance_batches: must be >= 1.")
    _one_of("structured.schedule", s.schedule, ("one_shot", "polynomial_decay"))
    if s.num_layers < 0:
        raise CompressionConfigError(f"structured.num_layers: must be >= 0 (0 keeps every "
                                     f"layer), got {s.num_layers}.")
    if s.schedule == "polynomial_decay":
        validate_schedule_steps(s, "structured", f"head_fraction {s.head_fraction} / "
                                f"ffn_fraction {s.ffn_fraction}")
    _fraction("structured.distill_alpha", s.distill_alpha, upper_open=False)
    if s.distill_temperature <= 0:
        raise CompressionConfigError(f"structured.distill_temperature: must be > 0, got "
                                     f"{s.distill_temperature}.")
    if s.distill_hidden_weight < 0:
        raise CompressionConfigError("structured.distill_hidden_weight: must be >= 0.")
    if (s.distill_alpha or s.distill_hidden_weight) and s.schedule != "polynomial_decay":
        raise CompressionConfigError(
            "structured.distill_alpha / distill_hidden_weight: distillation runs with the "
            "polynomial_decay schedule; set structured.schedule=polynomial_decay.")


def validate_speedup(config: CompressionConfig) -> None:
    """The latency target's values (the target's name against the registry of deployment
    targets, TensorFlow-free)."""
    p = config.speedup
    if p.target_speedup < 0 or (p.target_speedup and p.target_speedup <= 1):
        raise CompressionConfigError(f"--target_speedup: must be > 1 (times faster than the "
                                     f"init model's export), got {p.target_speedup:g}.")
    if p.latency_budget_ms < 0:
        raise CompressionConfigError(f"--latency_budget_ms: must be > 0, got "
                                     f"{p.latency_budget_ms:g}.")
    if p.target_speedup and p.latency_budget_ms:
        raise CompressionConfigError("--target_speedup and --latency_budget_ms: give one (a "
                                     "speedup over the init model, or a latency).")
    check_target(p.target)
    for part in p.parts:
        _one_of("speedup.parts", part, SPEEDUP_PARTS)
    if not p.parts:
        raise CompressionConfigError(f"speedup.parts: empty; name what the search may remove: "
                                     f"{list(SPEEDUP_PARTS)}.")
    for key in ("batch_size", "seq_length", "ffn_steps", "threads", "rounds"):
        if getattr(p, key) < 1:
            raise CompressionConfigError(f"speedup.{key}: must be >= 1, got "
                                         f"{getattr(p, key)}.")
    if p.round_seconds <= 0:
        raise CompressionConfigError("speedup.round_seconds: must be > 0.")
    if p.active:
        check_runtime(p.target)
    if p.active and "structured" not in config.stages:
        raise CompressionConfigError(
            "--target_speedup / --latency_budget_ms: the structured stage removes what the "
            "target asks for; add it (--stages=structured or "
            "--config_file=compress_sst2_speedup).")


def build_compression_config(config_files=(), params_overrides=(),
                             base: CompressionConfig | None = None) -> CompressionConfig:
    """Defaults, then each YAML file, then each ``params_override``, then `validate`."""
    return hyperparams.build_config(base if base is not None else CompressionConfig(),
                                    config_files, params_overrides, validate)
