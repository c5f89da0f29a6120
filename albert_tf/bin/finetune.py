"""albert-tf-finetune: finetune ALBERT on GLUE, SentEval, custom TSV tasks or SQuAD.

    albert-tf-finetune --task=sst2 --config_file=finetune_sst2_albert_mini \\
        --model_dir=runs/sst2_mini      # 20 min to >= 80% dev; the tour's run: finetune_sst2_tour
    albert-tf-finetune --task=sst2 --config_file=finetune_sst2_albert_mini \\
        --model_dir=runs/sst2_pretrained --init_checkpoint=runs/pretrain/final
        # from albert-tf-pretrain's model (or a converted one: models/albert_base)
    albert-tf-finetune --task=sst2 --mode=eval --model_dir=runs/sst2     # dev scores again
    albert-tf-finetune --task=sst2 --mode=predict --model_dir=runs/sst2  # predictions_test.tsv
    albert-tf-finetune --task=my_cola --model_dir=runs/my_cola \\
        --params_override=task.train_file=glue/CoLA/train.tsv,task.dev_file=glue/CoLA/dev.tsv \\
        --params_override=task.text_a_column=sentence,task.label_column=label   # a custom TSV

``--task`` is a GLUE task (sst2, rte, cola, stsb, ...: ``DATA_DIR/glue/<Task>/``), a
SentEval task (mr, subj, cr, mpqa: ``DATA_DIR/extra/``), ``squad`` (its JSON files in
DATA_DIR) or a custom TSV/CSV task: any other name with ``task.train_file`` (and
``task.dev_file``, ``task.test_file``), read from the current directory, else from DATA_DIR
(the last example reads DATA_DIR's CoLA files as a custom task; an error names both places
when neither has the file), and the columns of ``task.text_a_column`` (``text_b_column`` for
pairs) and ``task.label_column``. A custom task whose train file has the multiple-choice
header (``context, choice_0, choice_1, ..., label``) or the token-classification header
(``tokens, tags``) trains that head (``task.type=multiple_choice`` /
``token_classification``; formats: `albert_tf.data.task_data.load_multiple_choice_task`,
``load_token_classification_task``; example data of every head:
``python -m albert_tf.data.examples --output_dir=DIR``).

DATA_DIR is ``--data_dir``, default ``$ALBERT_TF_DATA_DIR``.
``--vocab_file`` is a SentencePiece model (``vocab.model``) or a WordPiece ``vocab.txt``;
finetuning from an ``--init_checkpoint`` model directory, the model config, the vocabulary
and the casing default to the ones it holds (``config.json``; ``vocab.model``/``vocab.txt``;
``task.json`` or ``tokenizer_config.json``), so a converted BERT directory finetunes as it
is (without one: ``albert_mini`` and the project's SentencePiece model, lower-cased). The
output model directories get the vocabulary and record its kind (``task.json``
``vocab_type``).
The dev split is evaluated every ``validation_interval`` steps; the best weights by
the task's metric (accuracy, Matthews correlation for CoLA, Pearson/Spearman for
STS-B, F1 for SQuAD) go to ``<model_dir>/best``, the last to ``<model_dir>/final``.
``--mode=eval`` / ``predict`` take a run directory with its checkpoints, or a model
directory as ``--init_checkpoint``; predictions go to
``<model_dir>/predictions_<split>.tsv`` (``--predict_output``). Configs:
``albert-tf-info --configs``.
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
    flags.DEFINE_string("vocab_file", None, "SentencePiece model (vocab.model) or WordPiece "
                        "vocab.txt (default: the --init_checkpoint directory's, else "
                        "official_configs/vocab/imdb_pydocs_8k.model).")
    flags.DEFINE_boolean("do_lower_case", None, "Lower-case inputs (default: the casing the "
                         "--init_checkpoint directory records, else true).")
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


def _init_model_dir(config) -> str | None:
    """The ``--init_checkpoint`` when it is a model directory (not a weights prefix)."""
    from albert_tf import resources
    init = config.model.init_checkpoint
    path = resources.resolve(init) if init else ""
    return path if path and os.path.isdir(path) else None


def _default_casing(model_dir: str | None, vocab_file: str) -> bool:
    """``do_lower_case`` when not given: the model directory's recorded casing, else a
    WordPiece vocabulary's own (uncased: no upper-case token), else lower-cased."""
    from albert_tf import resources
    from albert_tf.checkpoints import recorded_casing
    from albert_tf.text import vocabulary as vocab_lib
    recorded = recorded_casing(model_dir) if model_dir else None
    if recorded is not None:
        return recorded
    path = resources.resolve(vocab_file or resources.DEFAULT_VOCAB)
    if os.path.isfile(path) and vocab_lib.vocabulary_kind(path) == vocab_lib.WORDPIECE:
        return vocab_lib.wordpiece_is_uncased(path)
    return True


def unset_init_defaults(config):
    """``config`` with the values that `init_directory_defaults` fills left unset
    (``model.config`` empty, ``task.do_lower_case`` None), so that the layers (config
    files, overrides, flags) show what was given."""
    config.model.config = ""
    config.task.do_lower_case = None
    return config


def init_directory_defaults(config) -> None:
    """Fills what was not given from the ``--init_checkpoint`` model directory: the model
    config (its ``config.json``), ``task.vocab_file`` (its vocabulary,
    `checkpoints.vocab_path`; a directory holding none keeps the project's) and
    ``task.do_lower_case`` (`_default_casing`); without one, the usual defaults."""
    from albert_tf.checkpoints import vocab_path
    from albert_tf.text.vocabulary import FILE_NAMES
    from albert_tf.training.experiment_config import ExperimentConfig
    task = config.task
    model_dir = _init_model_dir(config)
    if not config.model.config and not model_dir:
        config.model.config = ExperimentConfig().model.config
    if model_dir and any(
            os.path.isfile(os.path.join(model_dir, name)) for name in FILE_NAMES.values()):
        shipped = vocab_path(model_dir)             # a one-line error when it holds both
        if not task.vocab_file:
            task.vocab_file = shipped
        else:
            _check_same_vocabulary(task.vocab_file, shipped)
    if task.do_lower_case is None:
        task.do_lower_case = _default_casing(model_dir, task.vocab_file)


def _check_same_vocabulary(vocab_file: str, shipped: str) -> None:
    """The vocabulary finetuning tokenizes with must be the one the ``--init_checkpoint``
    model was trained with (its embedding rows are that vocabulary's ids)."""
    from albert_tf.data.pretraining_shards import sha256_file
    from albert_tf.text.vocabulary import vocabulary_kind
    from albert_tf.training.tasks import resolve_path
    from albert_tf.training.experiment_config import ConfigValueError
    given = resolve_path(vocab_file)
    if not os.path.isfile(given) or sha256_file(given) == sha256_file(shipped):
        return                                      # a missing file has its own error
    raise ConfigValueError(
        f"task.vocab_file={vocab_file} ({vocabulary_kind(given)}) is not the vocabulary the "
        f"--init_checkpoint model was trained with, {shipped} ({vocabulary_kind(shipped)}): "
        f"its embeddings would get another vocabulary's ids. Pass --vocab_file={shipped} "
        "(a config file's task.vocab_file is overridden by the flag).")


def preflight():
    """The experiment from the flags and its checks that need no TensorFlow
    (`albert_tf.training.preflight`): a run directory, an export or a missing path as
    --init_checkpoint, an unknown task, no data directory, nothing to evaluate, a run
    directory that may not be written."""
    from albert_tf import resources, user_inputs
    from albert_tf.data import task_checks
    from albert_tf.training import preflight as checks
    config = training_flags.experiment_from_flags(unset_init_defaults(defaults()), EXTRA_KEYS)
    # A run directory, an export or a missing path: one line before its files are read.
    user_inputs.init_checkpoint(resources.resolve(config.model.init_checkpoint))
    checks.check_task_name(config.task)
    checks.resolve_task_files(config.task)   # a custom task's files: here, else the data dir
    if checks.needs_data_dir(config.task):
        config.task.data_dir = os.path.abspath(resources.data_dir(config.task.data_dir or None))
    checks.check_weights_to_run(config, FLAGS.mode)
    checks.check_sequence_length(config)
    checks.check_run_directory(config, mode=FLAGS.mode)
    checks.check_predict_output(config, FLAGS.mode)
    task_checks.check_finetune_inputs(config, FLAGS.mode)   # data, splits, vocabulary
    return config


def main(argv) -> None:
    del argv
    from albert_tf.training.preflight import guard
    config = guard(preflight)           # before TensorFlow loads
    from albert_tf.training.trainer import main_guard, run_experiment

    def body():
        from albert_tf.training.tasks import resolve_task_type
        init_directory_defaults(config)
        config.task.type = resolve_task_type(config.task)   # SQuAD, a header's head, ...
        run_experiment(config, FLAGS.mode)

    sys.exit(main_guard(body))


def run() -> None:
    cli.run_app(main, define_flags, __doc__)


if __name__ == "__main__":
    run()
