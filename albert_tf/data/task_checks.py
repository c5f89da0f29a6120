"""Checks of a finetuning or compression run's task data and vocabulary that need no
TensorFlow: ``albert-tf-finetune`` (`check_finetune_inputs`, from its ``preflight``) and
``albert-tf-compress`` (`check_compression_task`) run them before it loads, so that what
would otherwise fail after seconds of loading, or run on the wrong data, is one line first.

* a GLUE task is read only from its own folder: a data directory that is another task's
  folder (``--data_dir=.../glue/CoLA`` for sst2) is refused
  (`albert_tf.data.task_data.other_task_folder`);
* the split a mode reads exists: ``--mode=eval`` (and ``train_and_eval``) the dev file,
  ``--mode=predict`` the test file; a custom task names the ``task.*_file`` to pass;
* the vocabulary fits the model: a model directory's (``--init_checkpoint``) embedding has
  exactly the vocabulary's rows (`albert_tf.text.vocabulary.check_vocab_size`, what
  ``albert-tf-export`` checks); a new model (``--model_config``) has at least as many;
* compression reads GLUE tasks only: a model of another task is refused, saying so.
"""

from __future__ import annotations

import json
import os

from albert_tf import resources
from albert_tf.data import task_data as data_tasks

SPLIT_FILES = {"train": "train_file", "dev": "dev_file", "test": "test_file"}
MODE_SPLITS = {"train_and_eval": "dev", "eval": "dev", "predict": "test"}


def missing_split(task_name: str, split: str, mode: str) -> str:
    """The problem of a custom task without the file of ``split`` that ``mode`` reads."""
    key = SPLIT_FILES[split]
    train_only = (" (or --mode=train to train without evaluating)"
                  if mode == "train_and_eval" else "")
    return (f"--mode={mode} reads the {split} split, and task {task_name!r} has none: pass "
            f"its file with --params_override=task.{key}=FILE (a TSV/CSV with the columns of "
            f"task.train_file){train_only}.")


def check_split_files(task, mode: str) -> None:
    """The split ``mode`` reads exists (`MODE_SPLITS`): a custom task's ``task.dev_file``
    / ``task.test_file`` is set; a GLUE task's folder holds its dev / test file; a SentEval
    task has no test split. GLUE tasks are read from their own folder only
    (`albert_tf.data.task_data.find_glue_task_dir`)."""
    split = MODE_SPLITS.get(mode)
    name = task.name or "custom"
    if task.train_file:
        if split and not getattr(task, SPLIT_FILES[split], ""):
            raise data_tasks.TaskDataError(missing_split(name, split, mode))
        return
    import albert_tf.heads.registry as heads
    lower = name.lower()
    if heads.for_task_name(lower) is not None:   # a head's own task (SQuAD): its own files
        return
    data_dir = resources.data_dir_or_none(resources.resolve(task.data_dir) or None)
    if not data_dir or not os.path.isdir(data_dir):
        return                              # the data directory's own check says why
    if lower in data_tasks.SENTEVAL_TASKS:
        if split == "test":
            raise data_tasks.TaskDataError(
                f"--mode=predict reads the test split, and the SentEval task {name!r} has "
                f"none (DATA_DIR/extra/{name.upper()}_{{train,dev}}.tsv): predict with the "
                "edge tools (albert-tflite-run --input_file=FILE), or define it as a custom "
                "task with a task.test_file.")
        return
    key = data_tasks.glue_task_key(name)
    if key is None:
        return
    task_dir = data_tasks.find_glue_task_dir(data_dir, name)   # another task's folder: raised
    if task_dir is None or not split:
        return                              # not found: the task says where it looked
    spec = data_tasks.GLUE_TASKS[key]
    names = spec.dev_files if split == "dev" else spec.test_files
    if not any(os.path.isfile(os.path.join(task_dir, n)) for n in names):
        raise data_tasks.TaskDataError(
            f"--mode={mode} reads the {split} split of task {name}, and {task_dir} has no "
            f"{' or '.join(names)}; copy it there"
            + (" (or --mode=train to train without evaluating)." if mode == "train_and_eval"
               else "."))


def _tokens(vocab: str, do_lower_case) -> int | None:
    """The number of ids of the vocabulary at ``vocab`` (a file that is no vocabulary: the
    tokenizer's one-line `VocabularyError`, now rather than after TensorFlow loads), None
    when it cannot be read here (the task reports why)."""
    from albert_tf.text.spm_training import VocabularyError
    from albert_tf.text.vocabulary import load_tokenizer
    try:
        return load_tokenizer(vocab, do_lower_case=do_lower_case is not False).vocab_size
    except VocabularyError:
        raise
    except Exception:  # noqa: BLE001  (unreadable here: the tokenizer's own error, later)
        return None


def _init_model_dir(config) -> str | None:
    init = resources.resolve(config.model.init_checkpoint or "")
    return init if init and os.path.isfile(os.path.join(init, "config.json")) else None


def training_vocabulary(config) -> tuple[str, str] | None:
    """``(the vocabulary file finetuning tokenizes with, how it was chosen)``: ``task.
    vocab_file``, else the ``--init_checkpoint`` model directory's, else the project's
    (`albert_tf.bin.finetune.init_directory_defaults` decides the same later); None when
    it is not a readable file here."""
    from albert_tf.text.vocabulary import FILE_NAMES, VocabularyError, find_vocabulary
    init = _init_model_dir(config)
    given = config.task.vocab_file
    shipped = init and any(os.path.isfile(os.path.join(init, n)) for n in FILE_NAMES.values())
    path = resources.resolve(given) if given else init if shipped else \
        resources.resolve(resources.DEFAULT_VOCAB)
    try:
        if os.path.isdir(path):
            path = find_vocabulary(path)[1]
    except VocabularyError:
        return None                         # both or neither: the model directory's error
    if not os.path.isfile(path):
        return None
    how = (f"task.vocab_file={given}" if given else
           f"the vocabulary {path} (the --init_checkpoint's)" if shipped else
           f"the default vocabulary {resources.DEFAULT_VOCAB}")
    return path, how


def check_model_vocabulary(config) -> None:
    """The vocabulary finetuning tokenizes with fits the model it trains or evaluates
    (before TensorFlow loads): from an ``--init_checkpoint`` model directory, its weights'
    rows are exactly the vocabulary's ids (`albert_tf.text.vocabulary.check_vocab_size`,
    the check of ``albert-tf-export``: a vocabulary swapped for another one scored 0.50
    and exited 0); a new model (``--model_config``) needs at least as many rows as the
    vocabulary has tokens."""
    from albert_tf.text.vocabulary import check_vocab_size
    from albert_tf.training.preflight import model_config_of
    model = model_config_of(config)
    found = training_vocabulary(config)
    if model is None or found is None:
        return
    vocab, how = found
    tokens = _tokens(vocab, config.task.do_lower_case)
    if tokens is None:
        return
    rows = model.vocab_size
    init = _init_model_dir(config)
    if init:
        try:
            check_vocab_size(tokens, rows, vocab)
        except Exception as e:  # noqa: BLE001  (VocabularyError: named, one line)
            raise type(e)(f"--init_checkpoint={config.model.init_checkpoint}: {e}") from None
        return
    if tokens > rows:
        from albert_tf.hyperparams import ConfigValueError
        model_name = config.model.config or "the default model config"
        raise ConfigValueError(
            f"{how} has {tokens} tokens but the model's embedding "
            f"({model_name}: model.vocab_size) has {rows} rows: ids from {rows} on would "
            f"index past it; for a new model pass --params_override=model.vocab_size={tokens}, "
            f"or a vocabulary of at most {rows} tokens (--vocab_file).")


def check_finetune_inputs(config, mode: str) -> None:
    """``albert-tf-finetune``'s checks of this module (see its docstring), before
    TensorFlow loads."""
    check_split_files(config.task, mode)
    check_model_vocabulary(config)


# ---------------------------------------------------------------------------- compression

def check_compression_task(init_model: str, task_name: str, data_dir: str) -> None:
    """What ``albert-tf-compress`` trains and scores on, before TensorFlow loads: a GLUE
    task (``data.task``, else the ``task.json`` of ``init_model``), read from its own
    folder under ``data_dir``. A model of a custom TSV task or a SentEval task is refused,
    saying compression reads GLUE tasks only. A model of a head read from a custom file of
    its own format (``Head.file_header``: multiple choice, token classification) trains on
    ``data_dir``'s ``train.tsv`` and ``dev.tsv``, which must exist."""
    import albert_tf.heads.registry as heads
    name, head = task_name, None
    try:
        with open(os.path.join(init_model, "task.json"), encoding="utf-8") as f:
            info = json.load(f)
        name = name or info.get("task") or ""
        head = heads.HEADS.get(info.get("head"))
    except (OSError, ValueError, AttributeError):
        if not name:
            return                          # the model directory's own check says why
    if head is not None and head.file_header:
        for split in ("train", "dev"):
            if not os.path.isfile(os.path.join(data_dir, f"{split}.tsv")):
                raise data_tasks.TaskDataError(
                    f"--init_model={init_model} is a {head.name} model: albert-tf-compress "
                    f"trains it on {os.path.join(data_dir, split + '.tsv')}, which does not "
                    "exist; pass --data_dir=DIR, the folder of its train.tsv and dev.tsv.")
        return
    if not name or name.lower() == "pretraining":
        return
    if data_tasks.glue_task_key(name) is None:
        kind = ("SentEval task" if name.lower() in data_tasks.SENTEVAL_TASKS
                else "custom task")
        source = "data.task" if task_name else "its task.json"
        raise data_tasks.TaskDataError(
            f"--init_model={init_model} was finetuned on the {kind} {name!r} ({source}); "
            f"albert-tf-compress trains and scores on GLUE tasks only "
            f"(DATA_DIR/glue/<Task>/: {', '.join(data_tasks.task_names())}), so it cannot "
            "compress this model (pass a model finetuned on a GLUE task).")
    if os.path.isdir(data_dir):
        if data_tasks.find_glue_task_dir(data_dir, name) is None:
            raise data_tasks.TaskDataError(
                f"task {name!r}: {data_tasks.expected_glue_file(data_dir, name)} not found; "
                f"{resources.data_dir_fix()} to the data directory.")


__all__ = ["check_compression_task", "check_finetune_inputs", "check_model_vocabulary",
           "check_split_files", "missing_split", "training_vocabulary"]
