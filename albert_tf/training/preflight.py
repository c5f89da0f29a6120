"""The checks of a training run that need no TensorFlow, for the binaries to run before it
loads (``albert-tf-finetune``, ``albert-tf-pretrain``): a bad ``--init_checkpoint``, an
unknown task, an eval / predict with no trained weights, a run directory that may not be
written, training files that match nothing, raw text that is not text or a vocabulary
that does not fit the model (``source=text``). Each says what `albert_tf.training.trainer` /
``tasks`` would say later (they run the same checks again, with TensorFlow's file system,
as the library's entry points); a case only TensorFlow can decide (a remote path, a
checkpoint file to read, a strategy to resolve) is left to them."""

from __future__ import annotations

import fnmatch
import os
import sys
from typing import Callable

from albert_tf import outputs, resources, user_inputs


class InputDataError(ValueError):
    """Training data is missing or unreadable; the message names the file."""


def check_task_name(task) -> None:
    """`TaskDataError` (one line listing every known task) unless ``task.name`` is a
    known task or ``task.train_file`` defines a custom one."""
    from albert_tf.data import task_data as data_tasks
    known = data_tasks.known_tasks
    if task.train_file:
        return
    name = (task.name or "").lower()
    if not name:
        raise data_tasks.TaskDataError(f"no task given: pass --task=NAME. Tasks: {known()}.")
    if name in data_tasks.SENTEVAL_TASKS or name in data_tasks.SQUAD_TASKS \
            or data_tasks.glue_task_key(name):
        return
    raise data_tasks.TaskDataError(f"unknown task {task.name!r}. Known tasks: {known()}.")


def needs_data_dir(task) -> bool:
    """False only for a custom task whose files are all absolute paths."""
    if not task.train_file:
        return True
    return not all(os.path.isabs(p) for p in (task.train_file, task.dev_file, task.test_file) if p)


def check_weights_to_run(config, mode: str,
                         latest_checkpoint: Callable[[str], str | None] | None = None) -> None:
    """Refuses, before anything is created, what would silently run on random weights:
    ``--mode=eval`` / ``predict`` with neither a training checkpoint in ``model_dir`` nor an
    ``--init_checkpoint``; and an ``--init_checkpoint`` that is no model directory or
    checkpoint prefix (a run directory, an export, a missing path).

    ``latest_checkpoint`` (``tf.train.latest_checkpoint``) confirms that the checkpoint
    files of ``model_dir`` name a checkpoint; without it their presence is enough (the
    trainer checks again)."""
    init = config.model.init_checkpoint
    if init:
        user_inputs.init_checkpoint(resources.resolve(init))
    if mode not in ("eval", "predict") or init:
        return
    model_dir = os.path.abspath(config.model_dir) if config.model_dir else ""
    if model_dir and user_inputs.checkpoint_step_files(model_dir) \
            and (latest_checkpoint is None or latest_checkpoint(model_dir)):
        return
    verb = "evaluate" if mode == "eval" else "predict with"
    if model_dir and user_inputs.artifact_kind(model_dir) == "model":
        raise user_inputs.InputError(
            f"--mode={mode}: --model_dir={config.model_dir} is a model directory, not a training "
            f"run: to {verb} it pass --init_checkpoint={config.model_dir} and a new --model_dir.")
    raise user_inputs.InputError(
        f"--mode={mode}: --model_dir={config.model_dir or '(none)'} holds no training checkpoint "
        f"(ckpt-N) and no --init_checkpoint was given, so there are no trained weights to "
        f"{verb}: train first (--mode=train_and_eval), or pass --init_checkpoint=<a trained "
        "model directory: a run's best/ or final/>.")


def check_run_directory(config) -> None:
    """The checks of the run directory that `Trainer` makes before writing into it
    (`albert_tf.outputs.check_location`: not '/', '~', the current directory or above it,
    not holding the ``--init_checkpoint``)."""
    if config.model_dir:
        outputs.check_location(config.model_dir, flag="--model_dir",
                               inputs=[("--init_checkpoint", config.model.init_checkpoint)])


def no_match_error(part: str) -> InputDataError:
    return InputDataError(f"no file matches {part!r} (task input_path); create the "
                          "TFRecords with albert-tf-create-pretraining-data.")


def check_record_files(pattern: str) -> None:
    """`no_match_error` for a comma-separated part of ``pattern`` (a TFRecord input_path)
    that is a local path whose directory is missing or holds no match of its last component
    (wildcards elsewhere or a URL: left to ``tf.io.gfile.glob``)."""
    for part in [p.strip() for p in pattern.split(",") if p.strip()]:
        part = resources.resolve(part)
        directory, name = os.path.split(part)
        if "://" in part or any(c in directory for c in "*?["):
            continue
        directory = directory or "."
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        if not any(fnmatch.fnmatchcase(n, name) for n in names):
            raise no_match_error(part)


def _checked_first(config) -> bool:
    """Whether what the trainer checks before it reads the training data passes without
    TensorFlow: the default strategy (one device, no GPU: a TPU, GPUs or workers are
    resolved first, by TensorFlow) and a model config that loads with its overrides (a
    bad one is reported first, by the task)."""
    from albert_tf.config import load_config
    from albert_tf.hyperparams import apply_model_overrides
    runtime = config.runtime
    if (runtime.distribution_strategy or "one_device").lower() != "one_device" \
            or runtime.num_gpus:
        return False
    if not config.model.config:          # the --init_checkpoint's config.json: the task's
        return False
    try:
        apply_model_overrides(load_config(resources.resolve(config.model.config)),
                              config.model, "model")
    except Exception:  # noqa: BLE001  (the task reports it, first)
        return False
    return True


def check_text_files(pattern: str) -> None:
    """For each comma-separated local part of ``pattern`` (a ``source=text`` input_path;
    URLs are left to ``tf.io.gfile``): `InputDataError` when it matches no file or is a
    directory, or when one of the first files is a TFRecord or binary
    (`albert_tf.data.input_checks`: the messages of `albert_tf.data.dynamic_masking`)."""
    import glob
    from albert_tf.data import input_checks
    files: list[str] = []
    for part in [p.strip() for p in pattern.split(",") if p.strip()]:
        part = resources.resolve(part)
        if "://" in part:
            continue
        matches = sorted(m for m in glob.glob(part) if not os.path.isdir(m))
        if not matches:
            raise InputDataError(input_checks.no_text_match(part, os.path.isdir(part)))
        files.extend(matches)
    for path in files[:input_checks.HEAD_FILES]:
        try:
            with open(path, "rb") as f:
                head = f.read(input_checks.HEAD_BYTES)
        except OSError as e:
            raise InputDataError(f"pretraining text {path!r} cannot be read: "
                                 f"{e.strerror or e}") from None
        problem = input_checks.text_head_problem(path, head)
        if problem:
            raise InputDataError(problem)


def check_text_vocabulary(config) -> None:
    """The vocabulary ``source=text`` tokenizes with (``task.vocab_file``, default the
    project's): it exists, is a vocabulary, and has no more tokens than the model's
    ``vocab_size`` (the checks of `albert_tf.training.tasks.PretrainingTask`)."""
    from albert_tf.config import load_config
    from albert_tf.data import input_checks
    from albert_tf.hyperparams import apply_model_overrides
    from albert_tf.text.spm_training import VocabularyError
    from albert_tf.text.vocabulary import find_vocabulary, load_tokenizer
    given = config.task.vocab_file or resources.DEFAULT_VOCAB      # named as given
    vocab = resources.resolve(given)
    try:
        if os.path.isdir(vocab):
            vocab = given = find_vocabulary(vocab)[1]
        if not os.path.exists(vocab):
            raise FileNotFoundError(input_checks.missing_vocabulary(given))
        tokens = load_tokenizer(vocab, do_lower_case=config.task.do_lower_case).vocab_size
    except VocabularyError as e:
        raise InputDataError(input_checks.not_a_vocabulary(e)) from None
    rows = apply_model_overrides(load_config(resources.resolve(config.model.config)),
                                 config.model, "model").vocab_size
    if tokens > rows:
        from albert_tf.hyperparams import ConfigValueError
        raise ConfigValueError(input_checks.vocabulary_too_large(given, tokens, rows))


def check_training_files(config, mode: str) -> None:
    """`check_record_files` for the TFRecord data ``mode`` reads (pretraining);
    `check_text_files` and `check_text_vocabulary` for its raw text (``source=text``); when
    the checks the trainer makes before reading it pass here (`_checked_first`)."""
    task = config.task
    if getattr(task, "type", "") != "pretraining":
        return
    data = []
    if mode in ("train", "train_and_eval"):
        data.append(task.train_data)
    if mode == "eval":          # train_and_eval's eval files: read when it first evaluates
        data.append(task.validation_data)
    data = [d for d in data if d.input_path]
    if data and _checked_first(config):
        if any(getattr(d, "source", "records") == "text" for d in data):
            check_text_vocabulary(config)         # the task checks it before the files
        for data_config in data:
            if getattr(data_config, "source", "records") == "records":
                check_record_files(data_config.input_path)
            else:
                check_text_files(data_config.input_path)


def guard(fn: Callable[[], object]):
    """``fn()``; an expected error (one `trainer.main_guard` turns into a line) is printed as
    that same one line and the process exits 2. The error classes of modules that import
    TensorFlow count when ``fn`` has imported them."""
    from albert_tf.config import ConfigError
    from albert_tf.hyperparams import ConfigKeyError, ConfigValueError
    try:
        return fn()
    except Exception as e:  # noqa: BLE001  (re-raised unless expected)
        expected = [ConfigError, ConfigKeyError, ConfigValueError, resources.DataDirError,
                    InputDataError, FileNotFoundError, outputs.OutputError,
                    user_inputs.InputError]
        for module, name in (("albert_tf.checkpoints", "CheckpointError"),
                             ("albert_tf.training.distribute", "DistributionError"),
                             ("albert_tf.data.pretraining", "PretrainingDataError"),
                             ("albert_tf.data.task_data", "TaskDataError"),
                             ("albert_tf.data.squad", "SquadError")):
            if module in sys.modules and hasattr(sys.modules[module], name):
                expected.append(getattr(sys.modules[module], name))
        if not isinstance(e, tuple(expected)):
            raise
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


__all__ = ["InputDataError", "check_record_files", "check_run_directory", "check_task_name",
           "check_text_files", "check_text_vocabulary", "check_training_files",
           "check_weights_to_run", "guard", "needs_data_dir", "no_match_error"]
