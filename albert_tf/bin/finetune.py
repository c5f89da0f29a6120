"""albert-tf-finetune: finetune ALBERT on GLUE, SentEval, custom TSV tasks or SQuAD.

    albert-tf-finetune --task=sst2 --config_file=finetune_sst2_albert_mini \\
        --model_dir=/tmp/sst2 [--init_checkpoint=/tmp/albert_mini_imdb/final]
    albert-tf-finetune --task=cola --mode=eval --model_dir=/tmp/cola
    albert-tf-finetune --task=rte --mode=predict --model_dir=/tmp/rte

``--task`` is a name of `albert_tf.data.tasks.load_task` (sst2, rte, cola, stsb, mr,
subj, cr, mpqa, imdb, ...) or ``squad``; ``--data_dir`` defaults to ``../shared/data``.
The dev split is evaluated every ``validation_interval`` steps; the best weights by
the task's metric (accuracy, Matthews correlation for CoLA, Pearson/Spearman for
STS-B, F1 for SQuAD) go to ``<model_dir>/best``, the last to ``<model_dir>/final``.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags

from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    training_flags.define_common_flags()
    flags.DEFINE_string("task", None, "Task name (sst2, rte, cola, stsb, mr, ..., squad).")
    flags.DEFINE_string("data_dir", None, "Root of the task data (default ../shared/data).")
    flags.DEFINE_string("vocab_file", None, "SentencePiece model "
                        "(default official_configs/vocab/imdb_pydocs_8k.model).")
    flags.DEFINE_boolean("do_lower_case", None, "Lower-case inputs.")
    flags.DEFINE_string("predict_output", None, "Where --mode=predict writes its TSV.")


EXTRA_KEYS = {"task": "task.name", "data_dir": "task.data_dir", "vocab_file": "task.vocab_file",
              "do_lower_case": "task.do_lower_case", "predict_output": "task.predict_output"}


def defaults():
    from albert_tf.training.config import ExperimentConfig
    config = ExperimentConfig()
    config.task.type = "classification"
    config.task.data_dir = os.environ.get("ALBERT_TF_DATA", os.path.join("..", "shared", "data"))
    config.task.max_seq_length = 128
    config.optimizer.type = "adamw"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.warmup_fraction = 0.1
    return config


def main(argv) -> None:
    del argv
    from albert_tf.training.trainer import main_guard, run_experiment

    def body():
        config = training_flags.experiment_from_flags(defaults(), EXTRA_KEYS)
        if config.task.name.lower() in ("squad", "squad1", "squad2", "squad_v2"):
            config.task.type = "squad"
        run_experiment(config, FLAGS.mode)

    sys.exit(main_guard(body))


def run() -> None:
    define_flags()
    app.run(main)


if __name__ == "__main__":
    run()
