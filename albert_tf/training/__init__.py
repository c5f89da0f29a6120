"""The shared training library behind ``albert-tf-pretrain`` and ``albert-tf-finetune``.

``config``        the experiment dataclasses (their YAML files and ``params_override``:
                  the package's configuration layer, `albert_tf.hyperparams`)
``distribute``    distribution-strategy factory (one_device, mirrored,
                  multi_worker_mirrored, tpu)
``optimization``  LAMB, AdamW, warmup + polynomial decay, clipping, mixed precision
``metrics``       losses and task metrics (accuracy, F1, MCC, Pearson/Spearman, SQuAD)
``tasks``         pretraining (MLM + SOP) and finetuning tasks
``trainer``       the custom training loop, checkpoints, summaries, progress line
"""

from albert_tf.hyperparams import (ConfigKeyError, ConfigValueError, override_params,
                                   parse_params_override)
from albert_tf.training.experiment_config import ExperimentConfig, build_experiment
from albert_tf.training.distribute import DistributionError, get_strategy
from albert_tf.training.tasks import InputDataError, build_task
from albert_tf.training.trainer import Trainer, run_experiment

__all__ = ["ConfigKeyError", "ConfigValueError", "DistributionError", "ExperimentConfig",
           "InputDataError", "Trainer", "build_experiment", "build_task", "get_strategy",
           "override_params", "parse_params_override", "run_experiment"]
