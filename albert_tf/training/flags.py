"""absl flags shared by ``albert-tf-pretrain`` and ``albert-tf-finetune``.

Precedence (lowest to highest): the binary's defaults, each ``--config_file`` in
order, each ``--params_override`` in order (`albert_tf.hyperparams`; every
`AlbertConfig` field is ``model.<field>``, e.g. ``--params_override=model.sharing=none``),
then the explicit common flags below. A common flag left unset changes nothing.

``--mode=eval`` and ``--mode=predict`` of a training run (a ``--model_dir`` holding its
checkpoints and the ``experiment.yaml`` its training recorded) start from that record
instead of the defaults (`recorded_experiment`): the model, task and data settings it was
trained with, so ``--mode=eval --model_dir=runs/tiny`` needs no other flag.
"""

from __future__ import annotations

import copy
import os

from absl import flags

from albert_tf.hyperparams import ConfigValueError, override_params
from albert_tf.training.experiment_config import ExperimentConfig, build_experiment

FLAGS = flags.FLAGS


def define_common_flags() -> None:
    """Defines the flags common to the training binaries (from their ``define_flags``)."""
    flags.DEFINE_enum("mode", "train_and_eval", ["train", "eval", "train_and_eval", "predict"],
                      "What to run.")
    flags.DEFINE_multi_string("config_file", [], "Experiment YAML (repeatable; later files win). "
                              "A bare name is looked up in official_configs/experiments/.")
    flags.DEFINE_multi_string("params_override", [],
                              "Overrides, 'a.b=1,c.d=x', a YAML mapping string or a YAML file "
                              "(repeatable; applied after --config_file).")
    flags.DEFINE_string("model_dir", None, "Checkpoints, summaries and exported models; a run "
                        "resumes from the latest checkpoint here.")
    flags.DEFINE_string("init_checkpoint", None, "Model directory (config.json + weights) or "
                        "weights prefix to initialize from (when model_dir has no checkpoint).")
    flags.DEFINE_string("model_config", None, "Model config name (albert_mini) or JSON path.")
    flags.DEFINE_integer("train_batch_size", None, "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", None, "Global evaluation batch size.")
    flags.DEFINE_float("learning_rate", None, "Peak learning rate.")
    flags.DEFINE_integer("num_train_steps", None, "Total training steps.")
    flags.DEFINE_integer("warmup_steps", None, "Linear warmup steps.")
    flags.DEFINE_enum("optimizer", None, ["lamb", "adamw"], "Optimizer.")
    flags.DEFINE_integer("max_seq_length", None, "Sequence length.")
    flags.DEFINE_integer("steps_per_loop", None, "Steps per progress line / tf.function call.")
    flags.DEFINE_integer("checkpoint_interval", None, "Steps between checkpoints.")
    flags.DEFINE_integer("validation_interval", None, "Steps between evaluations.")
    flags.DEFINE_float("max_seconds", None, "Stop training after this wall time (seconds).")
    flags.DEFINE_enum("distribution_strategy", None,
                      ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                      "Distribution strategy; multi_worker_mirrored reads TF_CONFIG.")
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (for --distribution_strategy"
                        "=tpu; empty = local/Colab TPU).")
    flags.DEFINE_integer("num_gpus", None, "GPUs to use.")
    flags.DEFINE_integer("num_cpu_devices", None, "Logical CPU devices (mirrored without GPUs).")
    flags.DEFINE_enum("mixed_precision_dtype", None,
                      ["float32", "mixed_bfloat16", "mixed_float16"], "Precision policy.")
    flags.DEFINE_integer("seed", None, "Random seed.")


COMMON_FLAG_KEYS = {
    "model_dir": "model_dir",
    "init_checkpoint": "model.init_checkpoint",
    "model_config": "model.config",
    "train_batch_size": "task.train_data.global_batch_size",
    "eval_batch_size": "task.validation_data.global_batch_size",
    "learning_rate": "optimizer.learning_rate",
    "num_train_steps": "trainer.train_steps",
    "warmup_steps": "optimizer.warmup_steps",
    "optimizer": "optimizer.type",
    "max_seq_length": "task.max_seq_length",
    "steps_per_loop": "trainer.steps_per_loop",
    "checkpoint_interval": "trainer.checkpoint_interval",
    "validation_interval": "trainer.validation_interval",
    "max_seconds": "trainer.max_seconds",
    "distribution_strategy": "runtime.distribution_strategy",
    "tpu": "runtime.tpu",
    "num_gpus": "runtime.num_gpus",
    "num_cpu_devices": "runtime.num_cpu_devices",
    "mixed_precision_dtype": "runtime.mixed_precision_dtype",
    "seed": "runtime.seed",
}


RECORD_FILE = "experiment.yaml"      # what a training run records in its run directory


def experiment_from_flags(base: ExperimentConfig, extra_keys: dict[str, str]) -> ExperimentConfig:
    """The experiment of the command line (see the module docstring for precedence)."""
    config = _layered(copy.deepcopy(base), extra_keys)
    recorded = recorded_experiment(base, config.model_dir, FLAGS.mode)
    if recorded is not None:
        _check_same_task(recorded, config.model_dir, extra_keys)
        config = _layered(recorded, extra_keys)
    elif config.model_dir and FLAGS.mode in ("train", "train_and_eval"):
        _check_resumes_the_same_task(base, config)
    if not config.model_dir:
        raise ConfigValueError("--model_dir is required (or model_dir: in a --config_file).")
    return build_experiment(config)


def recorded_experiment(base: ExperimentConfig, model_dir: str | None,
                        mode: str) -> ExperimentConfig | None:
    """For ``--mode=eval`` / ``predict`` of a training run, the experiment its training
    recorded (``<model_dir>/experiment.yaml``, over ``base``), made to evaluate that run
    here: the data directory and ``--init_checkpoint`` left to this command (its
    checkpoints are the weights), the model config the run's own model directory's
    (``best/``, ``final/``) when the record names none (trained from a model directory),
    and its vocabulary when the recorded one is gone. None for any other mode, or a
    ``model_dir`` without checkpoints or record."""
    if mode not in ("eval", "predict") or not model_dir:
        return None
    from albert_tf import user_inputs       # (no TensorFlow: this runs before it loads)
    from albert_tf.text.vocabulary import FILE_NAMES
    record = os.path.join(model_dir, RECORD_FILE)
    if not os.path.isfile(record) or not user_inputs.checkpoint_step_files(model_dir):
        return None
    config = build_experiment(copy.deepcopy(base), [record])
    _check_same_command(base, config, model_dir)
    config.task.data_dir = ""
    config.model.init_checkpoint = ""
    models = user_inputs.run_models(model_dir)
    if not config.model.config and models:
        config.model.config = os.path.join(models[0], user_inputs.CONFIG_FILE)
    vocab = config.task.vocab_file
    if vocab and not os.path.exists(vocab) and models:
        shipped = [os.path.join(models[0], n) for n in FILE_NAMES.values()]
        config.task.vocab_file = next((p for p in shipped if os.path.isfile(p)), vocab)
    return config


def _check_resumes_the_same_task(base: ExperimentConfig, config: ExperimentConfig) -> None:
    """Training in a run directory resumes its checkpoints: a run of another task (its
    recorded ``task.name``) is refused, before its ``best/`` gets another task's model."""
    from albert_tf import user_inputs
    record = os.path.join(config.model_dir, RECORD_FILE)
    if not os.path.isfile(record) or not user_inputs.checkpoint_step_files(config.model_dir):
        return
    trained = build_experiment(copy.deepcopy(base), [record]).task
    given = config.task
    if trained.name and given.name and not _same_task_name(trained.name, given.name):
        raise ConfigValueError(
            f"--model_dir={config.model_dir} is a run of task {trained.name} (its "
            f"{RECORD_FILE}); training --task={given.name} there would resume its checkpoints "
            f"and replace its best/ and final/ with another task's model: pass a new "
            "--model_dir.")


def _same_task_name(a: str, b: str) -> bool:
    """Whether two task names name one task (``SST-2`` and ``sst2``: `task_data.task_key`)."""
    from albert_tf.data.task_data import task_key
    return task_key(a) == task_key(b)


def _check_same_command(base: ExperimentConfig, recorded: ExperimentConfig,
                        model_dir: str) -> None:
    """A pretraining run is evaluated by albert-tf-pretrain, a finetuning run by
    albert-tf-finetune (``base``: this binary's defaults)."""
    pretraining = base.task.type == "pretraining"
    if pretraining != (recorded.task.type == "pretraining"):
        trained_by = "albert-tf-pretrain" if not pretraining else "albert-tf-finetune"
        raise ConfigValueError(
            f"--model_dir={model_dir} is a run of {trained_by} (its {RECORD_FILE}: task.type="
            f"{recorded.task.type}); evaluate it with {trained_by} --mode=eval "
            f"--model_dir={model_dir}.")


def _check_same_task(recorded: ExperimentConfig, model_dir: str,
                     extra_keys: dict[str, str]) -> None:
    """A ``--task`` other than the one the run trained is refused: its head answers the
    recorded task's labels."""
    given = FLAGS["task"].value if "task" in extra_keys and "task" in FLAGS else None
    trained = recorded.task.name
    if given and trained and not _same_task_name(given, trained):
        raise ConfigValueError(
            f"--task={given}: the run in --model_dir={model_dir} was trained on {trained} "
            f"(its {RECORD_FILE}); leave --task out to use its own, or score its model on "
            f"another task with --init_checkpoint={os.path.join(model_dir, 'best')} and a new "
            "--model_dir.")


def _layered(config: ExperimentConfig, extra_keys: dict[str, str]) -> ExperimentConfig:
    """``config`` with the config files, the overrides, then the set flags applied."""
    config = build_experiment(config, FLAGS.config_file, FLAGS.params_override)
    overrides = {}
    for flag, key in {**COMMON_FLAG_KEYS, **extra_keys}.items():
        value = getattr(FLAGS, flag)
        if value is not None:
            overrides[key] = value
    if FLAGS.warmup_steps is not None:
        overrides["optimizer.warmup_fraction"] = 0.0
    if FLAGS.eval_batch_size is not None:
        overrides["task.predict_data.global_batch_size"] = FLAGS.eval_batch_size
    override_params(config, overrides)
    return config
