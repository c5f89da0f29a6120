"""The shared training library behind ``albert-tf-pretrain`` and ``albert-tf-finetune``.

``config``        the experiment dataclasses (their YAML files and ``params_override``:
                  the package's configuration layer, `albert_tf.hyperparams`)
``distribute``    distribution-strategy factory (one_device, mirrored,
                  multi_worker_mirrored, tpu)
``optimization``  LAMB, AdamW, warmup + polynomial decay, clipping, mixed precision
``metrics``       losses and task metrics (accuracy, F1, MCC, Pearson/Spearman, SQuAD)
``tasks``         pretraining (MLM + SOP) and finetuning tasks
``trainer``       the custom training loop, checkpoints, summaries, progress line
``preflight``     the run's checks that need no TensorFlow (the binaries run them first)
"""

from albert_tf.lazy import lazy_exports

# Imported on first use: the binaries read their flags and configs (`experiment_config`,
# `flags`) and reject bad input before TensorFlow loads (`distribute`, `tasks`, `trainer`).
_EXPORTS = {
    **{name: "albert_tf.hyperparams" for name in (
        "ConfigKeyError", "ConfigValueError", "override_params", "parse_params_override")},
    "ExperimentConfig": "albert_tf.training.experiment_config",
    "build_experiment": "albert_tf.training.experiment_config",
    "DistributionError": "albert_tf.training.distribute",
    "get_strategy": "albert_tf.training.distribute",
    "InputDataError": "albert_tf.training.preflight",
    "build_task": "albert_tf.training.tasks",
    "Trainer": "albert_tf.training.trainer",
    "run_experiment": "albert_tf.training.trainer",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
