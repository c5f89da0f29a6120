"""albert-tf-pretrain: ALBERT pretraining (masked LM + sentence-order prediction).

Reads the TFRecords of ``albert-tf-create-pretraining-data`` (its ``--help`` writes these)::

    albert-tf-pretrain --config_file=pretrain_albert_mini_imdb --model_dir=runs/pretrain \\
        --train_files='pretraining/tutorial.tfrecord-*' --num_train_steps=2000

or raw text (one sentence per line, a blank line between documents), masked in the input
pipeline each epoch (dynamic masking, `albert_tf.data.dynamic_masking`)::

    albert-tf-pretrain --config_file=pretrain_albert_mini_imdb --model_dir=runs/pretrain_text \\
        --train_source=text --train_files=$ALBERT_TF_DATA_DIR/corpus/imdb-unsup.txt \\
        --num_train_steps=2000

--eval_files (records, or text with --eval_source=text) adds held-out MLM / SOP scores.
Any experiment key can be set with ``--params_override=trainer.train_steps=100,...``;
``--distribution_strategy={one_device,mirrored,multi_worker_mirrored,tpu}``.
The run resumes from the latest checkpoint of ``--model_dir``; the final weights are
written to ``<model_dir>/final`` (a model directory for ``albert-tf-finetune
--init_checkpoint``).
"""

from __future__ import annotations

import sys

from absl import flags

from albert_tf import cli
from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the flags. Called by `run`, not at import: every binary shares absl's
    one flag registry, and several define the same names."""
    training_flags.define_common_flags()
    flags.DEFINE_string("train_files", None, "Training TFRecord pattern(s), comma-separated "
                        "(raw text files with --train_source=text).")
    flags.DEFINE_string("eval_files", None, "Held-out TFRecord pattern(s) for evaluation "
                        "(raw text files with --eval_source=text).")
    flags.DEFINE_enum("train_source", None, ["records", "text"],
                      "--train_files are TFRecords of albert-tf-create-pretraining-data "
                      "(records, the default) or raw text masked in the input pipeline "
                      "(text): task.train_data.source.")
    flags.DEFINE_enum("eval_source", None, ["records", "text"],
                      "The kind of --eval_files: task.validation_data.source.")
    flags.DEFINE_integer("max_predictions_per_seq", None, "Masked positions per sequence.")


EXTRA_KEYS = {"train_files": "task.train_data.input_path",
              "eval_files": "task.validation_data.input_path",
              "max_predictions_per_seq": "task.max_predictions_per_seq",
              "train_source": "task.train_data.source",
              "eval_source": "task.validation_data.source"}


def defaults():
    from albert_tf.training.experiment_config import ExperimentConfig
    config = ExperimentConfig()
    config.task.type = "pretraining"
    config.task.validation_data.input_path = ""
    config.trainer.best_checkpoint_metric = "mlm_loss"
    config.trainer.best_checkpoint_metric_comp = "lower"
    return config


def preflight():
    """The experiment from the flags and the mode it runs, checked where no TensorFlow is
    needed (`albert_tf.training.preflight`): nothing to evaluate, a run directory that may
    not be written, training files that match nothing."""
    from albert_tf.training import preflight as checks
    config = training_flags.experiment_from_flags(defaults(), EXTRA_KEYS)
    mode = FLAGS.mode
    if mode in ("train_and_eval", "eval") and not config.task.validation_data.input_path:
        if mode == "eval":
            raise FileNotFoundError("--mode=eval needs --eval_files (held-out TFRecords).")
        mode = "train"
    checks.check_weights_to_run(config, mode)
    checks.check_sequence_length(config)
    checks.check_run_directory(config)
    checks.check_training_files(config, mode)
    return config, mode


def main(argv) -> None:
    del argv
    from albert_tf.training.preflight import guard
    config, mode = guard(preflight)     # before TensorFlow loads
    from albert_tf.training.trainer import main_guard, run_experiment

    def body():
        run_experiment(config, mode)

    sys.exit(main_guard(body))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
