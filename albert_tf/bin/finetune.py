"""albert-tf-finetune: finetune ALBERT on GLUE, SentEval, custom TSV tasks or SQuAD.

    albert-tf-finetune --task=sst2 --config_file=finetune_sst2_albert_mini \\
        --model_dir=/tmp/sst2 [--init_checkpoint=/tmp/albert_mini_imdb/final]
    albert-tf-finetune --task=cola --mode=eval --model_dir=/tmp/cola
    albert-tf-finetune --task=rte --mode=predict --model_dir=/tmp/rte

``--task`` is a GLUE task (sst2, rte, cola, stsb, ...: ``DATA_DIR/glue/<Task>/``), a
SentEval task (mr, subj, cr, mpqa: ``DATA_DIR/extra/``), ``squad`` (its JSON files in
DATA_DIR) or a custom TSV/CSV task (``--task=NAME --params_override=task.train_file=
train.tsv,task.dev_file=dev.tsv,task.text_a_column=sentence,task.label_column=label``).
A custom task whose train file has the multiple-choice header (``context, choice_0,
choice_1, ..., label``) or the token-classification header (``tokens, tags``) trains that
head (``task.type=multiple_choice`` / ``token_classification``; formats:
`albert_tf.data.task_data.load_multiple_choice_task`, ``load_token_classification_task``;
example data: ``python -m albert_tf.data.examples --output_dir=DIR``)::

    albert-tf-finetune --task=rte_choice --model_config=albert_tiny --model_dir=/tmp/mc \\
        --params_override=task.train_file=DIR/rte_choice/train.tsv,\\
    task.dev_file=DIR/rte_choice/dev.tsv

DATA_DIR is ``--data_dir``, default ``$ALBERT_TF_DATA_DIR``.
The dev split is evaluated every ``validation_interval`` steps; the best weights by
the task's metric (accuracy, Matthews correlation for CoLA, Pearson/Spearman for
STS-B, F1 for SQuAD) go to ``<model_dir>/best``, the last to ``<model_dir>/final``.
"""

from __future__ import annotations

import os
import sys

from absl import flags

from albert_tf import cli
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    training_flags.define_common_flags()
    flags.DEFINE_string("task", None, "Task: sst2, rte, cola, stsb, ... (GLUE), mr, subj, cr, "
                        "mpqa (SentEval), squad, or a name for a custom TSV task.")
    flags.DEFINE_string("data_dir", None, "Root of the task data (default $ALBERT_TF_DATA_DIR).")
    flags.DEFINE_string("vocab_file", None, "SentencePiece model "
                        "(default official_configs/vocab/imdb_pydocs_8k.model).")
    flags.DEFINE_boolean("do_lower_case", None, "Lower-case inputs.")
    flags.DEFINE_string("predict_output", None, "Where --mode=predict writes its TSV.")


EXTRA_KEYS = {"task": "task.name", "data_dir": "task.data_dir", "vocab_file": "task.vocab_file",
              "do_lower_case": "task.do_lower_case", "predict_output": "task.predict_output"}


def defaults():
    from albert_tf.training.experiment_config import ExperimentConfig
    config = ExperimentConfig()
    config.task.type = "classification"
    config.task.data_dir = ""   # --data_dir, else $ALBERT_TF_DATA_DIR (resolved at the start)
    config.task.max_seq_length = 128
    config.optimizer.type = "adamw"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.warmup_fraction = 0.1
    return config


def main(argv) -> None:
    del argv
    from albert_tf.training.trainer import main_guard, run_experiment

    def body():
        from albert_tf import resources
        from albert_tf.training.tasks import (SQUAD_TASKS, check_task_name, custom_task_type,
                                              needs_data_dir)
        config = training_flags.experiment_from_flags(defaults(), EXTRA_KEYS)
        if config.task.name.lower() in SQUAD_TASKS:
            config.task.type = "squad"
        check_task_name(config.task)
        if needs_data_dir(config.task):
            config.task.data_dir = os.path.abspath(
                resources.data_dir(config.task.data_dir or None))
        if config.task.type == "classification":   # a header can ask for another head
            config.task.type = custom_task_type(config.task) or config.task.type
        run_experiment(config, FLAGS.mode)

    sys.exit(main_guard(body))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
