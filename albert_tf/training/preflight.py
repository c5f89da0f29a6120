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
    import albert_tf.heads.registry as heads
    if name in data_tasks.SENTEVAL_TASKS or heads.for_task_name(name) is not None \
            or data_tasks.glue_task_key(name):     # a head's own task names: SQuAD's
        return
    raise data_tasks.TaskDataError(f"unknown task {task.name!r}. Known tasks: {known()}.")


TASK_FILES = ("train_file", "dev_file", "test_file")


def needs_data_dir(task) -> bool:
    """False only for a custom task whose files are all found without one: absolute paths,
    or relative paths to files in the current directory (`task_file`)."""
    if not task.train_file:
        return True
    return not all(os.path.isabs(p) or os.path.isfile(p)
                   for p in (getattr(task, key) for key in TASK_FILES) if p)


def task_file(task, key: str, data_dir: str | None) -> str | None:
    """``task.<key>`` (a custom task's ``train_file``, ``dev_file`` or ``test_file``) as the
    absolute path to read, None when unset: an absolute path as given; a relative one
    against the current directory (where the user stands) when the file is there, else
    against ``data_dir`` when it is there. A `TaskDataError` naming every place looked in
    otherwise."""
    from albert_tf.data import task_data as data_tasks
    path = getattr(task, key)
    if not path:
        return None
    places = [os.path.abspath(path)]
    if not os.path.isabs(path) and data_dir:
        places.append(os.path.join(os.path.abspath(data_dir), path))
    found = next((p for p in places if os.path.isfile(p)), None)
    if found:
        return found
    where = f"task {task.name or 'custom'!r}: task.{key}={path}"
    if os.path.isabs(path):
        raise data_tasks.TaskDataError(f"{where}: no such file; pass an existing file.")
    looked = (f"is neither in the current directory ({places[0]}) nor in the data directory "
              f"({places[1]})" if data_dir else
              f"is not in the current directory ({places[0]}), and there is no data directory "
              f"to look in ({resources.data_dir_fix()})")
    raise data_tasks.TaskDataError(f"{where} {looked}; pass a path relative to the current "
                                   "directory (or to the data directory), or an absolute one.")


def resolve_task_files(task) -> None:
    """A custom task's files (``task.train_file``, ...) made absolute in place
    (`task_file`: the current directory first, then the data directory), so that the
    run's ``experiment.yaml`` names the files it read; a task without them is left alone."""
    if not task.train_file:
        return
    data_dir = resources.data_dir_or_none(resources.resolve(task.data_dir) or None)
    for key in TASK_FILES:
        setattr(task, key, task_file(task, key, data_dir) or "")


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
    convert = model_dir and user_inputs.needs_conversion(
        config.model_dir, "--model_dir", what="not a training run",
        then=f", then {verb} DIR with --init_checkpoint=DIR and a new --model_dir")
    if convert:
        raise user_inputs.InputError(f"--mode={mode}: {convert}")
    if model_dir and user_inputs.artifact_kind(model_dir) == "model":
        raise user_inputs.InputError(
            f"--mode={mode}: --model_dir={config.model_dir} is a model directory, not a training "
            f"run: to {verb} it pass --init_checkpoint={config.model_dir} and a new --model_dir.")
    raise user_inputs.InputError(
        f"--mode={mode}: --model_dir={config.model_dir or '(none)'} holds no training checkpoint "
        f"(ckpt-N) and no --init_checkpoint was given, so there are no trained weights to "
        f"{verb}: train first (--mode=train_and_eval), or pass --init_checkpoint=<a trained "
        "model directory: a run's best/ or final/>.")


# What a training run writes inside its run directory and replaces there.
RUN_OUTPUTS = (("best", outputs.MODEL_DIRECTORY), ("final", outputs.MODEL_DIRECTORY))


def run_kind(config) -> str:
    """The kind of the run directory ``config`` trains in (`albert_tf.outputs.RUN_KINDS`)."""
    command = "albert-tf-pretrain" if config.task.type == "pretraining" else "albert-tf-finetune"
    return outputs.RUN_KINDS[command]


def reads_only(config, mode: str) -> bool:
    """Whether ``mode`` writes nothing into the run directory: ``--mode=predict`` with a
    ``--predict_output`` elsewhere (a read-only run can be predicted with)."""
    return mode == "predict" and bool(config.task.predict_output)


def check_run_directory(config, model_dir: str | None = None,
                        mode: str = "train") -> str | None:
    """The checks of the run directory (``model_dir``, default ``config.model_dir``) that
    `Trainer` makes before writing into it, before any work
    (`albert_tf.outputs.check_run_directory`: not '/', '~', the current directory or above
    it, not holding the ``--init_checkpoint``, a place that can be written, new or empty
    or a run of the same command, and ``best/`` and ``final/`` albert-tf's or absent);
    returns its absolute path."""
    model_dir = model_dir or config.model_dir
    if not model_dir:
        return None
    if reads_only(config, mode):
        return outputs.check_location(model_dir, flag="--model_dir", writable=False)
    return outputs.check_run_directory(
        model_dir, kind=run_kind(config), writes=RUN_OUTPUTS, flag="--model_dir",
        inputs=[("--init_checkpoint", config.model.init_checkpoint)])


def check_predict_output(config, mode: str) -> None:
    """``--predict_output`` of ``--mode=predict`` must be a new file in a place a file can
    be written (`albert_tf.outputs.check_output_file`): albert-tf does not write over a
    file it cannot tell it wrote."""
    path = config.task.predict_output
    if mode == "predict" and path:
        outputs.check_output_file(path, flag="--predict_output")


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


def model_config_of(config):
    """The `AlbertConfig` ``config`` trains (``model.config`` with the ``model.*``
    overrides, else the ``--init_checkpoint`` model directory's ``config.json``, else the
    default ``model.config``), read as JSON without TensorFlow; None when it cannot be read
    here (the task reports why)."""
    from albert_tf.config import AlbertConfig, load_config
    from albert_tf.hyperparams import apply_model_overrides
    from albert_tf.training.experiment_config import ExperimentConfig
    try:
        init = resources.resolve(config.model.init_checkpoint or "")
        if config.model.config or not init:
            name = config.model.config or ExperimentConfig().model.config
            base = load_config(resources.resolve(name))
        else:
            path = os.path.join(init, user_inputs.CONFIG_FILE)
            if not os.path.isfile(path):
                return None
            base = AlbertConfig.from_json(path)
        return apply_model_overrides(base, config.model, "model")
    except Exception:  # noqa: BLE001  (reported, first, where the model is built)
        return None


def check_sequence_length(config) -> None:
    """``task.max_seq_length`` (``--max_seq_length``) fits the model's position embeddings:
    a longer one trains on short texts and fails at the first long one, or at export."""
    model = model_config_of(config)
    length = config.task.max_seq_length
    if model is not None and length > model.max_position_embeddings:
        from albert_tf.hyperparams import ConfigValueError
        raise ConfigValueError(
            f"task.max_seq_length={length} (--max_seq_length): longer than the model's "
            f"{model.max_position_embeddings} positions (max_position_embeddings); pass at "
            f"most {model.max_position_embeddings}.")


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
    """``fn()``; an expected error (`albert_tf.cli.expected_error`: the line `trainer.main_guard`
    prints too) is printed as ``<command>: error: <line>`` and the process exits 2."""
    from albert_tf import cli
    try:
        return fn()
    except KeyboardInterrupt:
        cli.interrupted()
    except Exception as e:  # noqa: BLE001  (re-raised unless expected)
        line = cli.expected_error(e)
        if line is None:
            raise
        cli.fail(line)


__all__ = ["InputDataError", "RUN_OUTPUTS", "check_predict_output", "check_record_files",
           "check_run_directory", "check_sequence_length", "check_task_name",
           "model_config_of", "reads_only", "run_kind",
           "check_text_files", "check_text_vocabulary", "check_training_files",
           "check_weights_to_run", "guard", "needs_data_dir", "no_match_error",
           "resolve_task_files", "task_file"]
