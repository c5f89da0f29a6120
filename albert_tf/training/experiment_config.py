"""Training experiments: the dataclasses of albert-tf-pretrain and albert-tf-finetune.

An experiment is an `ExperimentConfig`, built the TF Model Garden way, in order:

1. the defaults of the dataclasses (``ExperimentConfig()``, or the per-binary
   defaults of `pretraining_defaults` / `finetuning_defaults`);
2. each ``--config_file`` YAML, in the order given (later files win);
3. ``--params_override``: either ``"a.b=1,c.d=[x,y]"`` (values parsed as YAML
   scalars/lists), a YAML/JSON mapping string, or the path of a YAML file;
4. the flags for common settings (``--model_dir``, ``--learning_rate``...),
   applied by the binaries with `override_params`.

The layering, the YAML reading and the key checks are the package's configuration layer,
`albert_tf.hyperparams` (shared with compression and the pipeline; its names are
re-exported here): an unknown key raises `ConfigKeyError` naming the full dotted key and
the valid keys at that level, a value of the wrong type `ConfigValueError` naming the key.
Every `albert_tf.config.AlbertConfig` field is settable as ``model.<field>``
(``--params_override=model.sharing=none``).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from albert_tf import hyperparams
import albert_tf.heads.registry as heads
# The configuration layer, re-exported: importers of albert_tf.training.experiment_config
# keep working.
from albert_tf.hyperparams import (ConfigKeyError, ConfigValueError,  # noqa: F401
                                   apply_config_layers, load_yaml_file, override_params,
                                   parse_params_override, resolve_config_file)


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


_MODEL_PARAMS_DOC = """The network: an official config name or a JSON path, optional init weights,
    and any `albert_tf.config.AlbertConfig` field changed.

    Attributes:
      config: ``albert_mini`` (a name in ``official_configs/models``) or a path to an
        ``albert_config.json``; ignored when ``init_checkpoint`` is a model directory
        and ``config`` is empty.
      init_checkpoint: a model directory (``config.json`` + name-keyed weights, as
        written by ``albert-tf-convert`` or a previous training run) or a weights
        prefix; loaded once, before step 0, when ``model_dir`` has no checkpoint yet.
      <every AlbertConfig field>: ``vocab_size``, ``embedding_size``, ``hidden_size``,
        ``num_hidden_layers``, ``num_hidden_groups``, ``inner_group_num``,
        ``num_attention_heads``, ``intermediate_size``, ``hidden_act``, the dropout
        probabilities, ``max_position_embeddings``, ``type_vocab_size``,
        ``initializer_range``, ``layer_norm_eps``, ``sharing``, ...: override the model
        config's value (None = keep), e.g. ``model.sharing=none`` for a BERT-style
        unshared encoder, ``model.vocab_size=8000`` for a tiny model with the 8k
        vocabulary. Each is checked by AlbertConfig's own rules (`validate`, then
        `albert_tf.training.tasks.model_config` against the base config); errors name
        ``model.<field>``. The fields are generated from AlbertConfig, so a new
        AlbertConfig field is settable here too.
    """

ModelParams = dataclasses.make_dataclass(
    "ModelParams",
    [("config", str, dataclasses.field(default="albert_mini")),
     ("init_checkpoint", str, dataclasses.field(default=""))]
    + hyperparams.model_override_fields(),
    namespace={"__doc__": _MODEL_PARAMS_DOC, "__module__": __name__})


@dataclasses.dataclass
class DataConfig:
    """One input split.

    Attributes:
      input_path: file pattern(s) of pretraining TFRecords (comma-separated), or of raw
        text with ``source: text``, or, for finetuning, unused (the task reads
        ``task.data_dir``).
      global_batch_size: examples per step over all replicas.
      is_training: shuffle and repeat.
      shuffle_seed: seed of the shuffle (defaults to ``runtime.seed``); with ``source:
        text`` also of the masking.
      split: finetuning split for this input (``train``, ``dev``, ``test``).
      source: pretraining: ``records`` (the TFRecords of
        ``albert-tf-create-pretraining-data``) or ``text`` (raw text, one sentence per
        line, a blank line between documents, made into SOP pairs and masked in the input
        pipeline each epoch: `albert_tf.data.dynamic_masking`; vocabulary and casing from
        ``task.vocab_file`` / ``task.do_lower_case``, lengths from
        ``task.max_seq_length`` / ``task.max_predictions_per_seq``).
      masked_lm_prob / short_seq_prob / ngram / do_whole_word_mask /
        favor_shorter_ngram / split_sentences: ``source: text`` only, the flags of
        ``albert-tf-create-pretraining-data`` of the same names.
      shuffle_buffer: pretraining: instances in the shuffle buffer when training.
      data_service: pretraining: the address of a tf.data service dispatcher
        (``grpc://host:port``) whose workers run this split's input pipeline up to the
        batches (`albert_tf.data.data_service`, ``distributed_epoch`` mode); ``""`` = none,
        the pipeline runs in the trainer.
      data_service_job_name: the tf.data service job the trainers share (each batch to one
        of them); ``""`` = an anonymous job per trainer with one input pipeline, else
        ``albert_tf-<model_dir name>-<split>``.
    """

    input_path: str = ""
    global_batch_size: int = 32
    is_training: bool = True
    shuffle_seed: typing.Optional[int] = None
    split: str = "train"
    source: str = "records"
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    ngram: int = 3
    do_whole_word_mask: bool = True
    favor_shorter_ngram: bool = False
    split_sentences: bool = True
    shuffle_buffer: int = 10_000
    data_service: str = ""
    data_service_job_name: str = ""


@dataclasses.dataclass
class TaskConfig:
    """What to learn.

    Attributes:
      type: a head's training task in `albert_tf.heads` (``heads.for_task_type``):
        ``pretraining`` (MLM + SOP), ``classification`` (GLUE classification and
        regression, custom TSV tasks), ``squad``, ``multiple_choice`` or
        ``token_classification``.
      name: finetuning task name for `albert_tf.data.task_data.load_task` (``sst2``,
        ``rte``, ``cola``, ``stsb``, ``mr``... or ``tsv:/path/to/dir``).
      data_dir: root of the task data (``$ALBERT_TF_DATA_DIR`` layout; empty: that variable).
      vocab_file: the tokenizer's vocabulary, either kind (`albert_tf.text.vocabulary`): a
        SentencePiece model (``vocab.model``) or a WordPiece ``vocab.txt``, or a model
        directory holding one; empty: the project's SentencePiece model
        (albert-tf-finetune: the ``--init_checkpoint`` model directory's vocabulary).
      do_lower_case: lower-case the text before tokenizing (albert-tf-finetune: when not
        given, the casing the ``--init_checkpoint`` model directory records).
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
        the task's name); a relative path is read from the current directory, else
        from under ``data_dir`` (`albert_tf.training.preflight.task_file`).
      text_a_column / text_b_column / label_column / has_header / is_regression /
        label_list / metric: columns (header names or 0-based indices) and labels of
        a custom TSV task (see `albert_tf.data.task_data.load_tsv_task`).
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
        return hyperparams.as_dict(self)

    def to_yaml(self) -> str:
        return hyperparams.to_yaml(self)


# ----------------------------------------------------------------------- building
def build_experiment(base: ExperimentConfig | None = None, config_files=(),
                     params_overrides=()) -> ExperimentConfig:
    """Defaults, then each YAML file, then each ``params_override`` string, in order,
    then `validate`."""
    return hyperparams.build_config(base if base is not None else ExperimentConfig(),
                                    config_files, params_overrides, validate)


STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def validate(config: ExperimentConfig) -> None:
    """Checks enumerated values, ranges and the ``model.<field>`` overrides (each by
    AlbertConfig's rules), naming the key."""
    check = hyperparams.check_one_of
    check("runtime.distribution_strategy", config.runtime.distribution_strategy, STRATEGIES)
    check("runtime.mixed_precision_dtype", config.runtime.mixed_precision_dtype, PRECISIONS)
    check("task.type", config.task.type, heads.task_types())
    check("optimizer.type", config.optimizer.type, ("lamb", "adamw"))
    check("trainer.best_checkpoint_metric_comp", config.trainer.best_checkpoint_metric_comp,
          ("higher", "lower"))
    for key, value in [("trainer.train_steps", config.trainer.train_steps),
                       ("trainer.steps_per_loop", config.trainer.steps_per_loop),
                       ("task.train_data.global_batch_size",
                        config.task.train_data.global_batch_size),
                       ("task.validation_data.global_batch_size",
                        config.task.validation_data.global_batch_size),
                       ("task.max_seq_length", config.task.max_seq_length),
                       ("optimizer.learning_rate", config.optimizer.learning_rate)]:
        hyperparams.check_positive(key, value)
    for name in ("train_data", "validation_data", "predict_data"):
        data = getattr(config.task, name)
        check(f"task.{name}.source", data.source, ("records", "text"))
        hyperparams.check_positive(f"task.{name}.ngram", data.ngram)
        hyperparams.check_positive(f"task.{name}.shuffle_buffer", data.shuffle_buffer)
        if not 0.0 <= data.masked_lm_prob < 1.0:
            raise ConfigValueError(f"task.{name}.masked_lm_prob: must be in [0, 1), got "
                                   f"{data.masked_lm_prob!r}.")
        if not 0.0 <= data.short_seq_prob <= 1.0:
            raise ConfigValueError(f"task.{name}.short_seq_prob: must be in [0, 1], got "
                                   f"{data.short_seq_prob!r}.")
        if data.data_service:
            from albert_tf.data.data_service import check_address
            try:
                data.data_service = check_address(f"task.{name}.data_service",
                                                  data.data_service)
            except ValueError as e:
                raise ConfigValueError(str(e)) from None
            if config.task.type != "pretraining":
                raise ConfigValueError(f"task.{name}.data_service: the tf.data service runs "
                                       "pretraining inputs only (task.type=pretraining), not "
                                       f"{config.task.type!r}.")
    loss_scale = config.runtime.loss_scale
    if loss_scale != "dynamic":
        try:
            float(loss_scale)
        except ValueError:
            raise ConfigValueError(f"runtime.loss_scale: 'dynamic' or a number, got "
                                   f"{loss_scale!r}.") from None
    hyperparams.check_model_overrides(config.model, "model")
