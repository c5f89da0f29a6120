"""Training tasks: ``build_task`` (the task of ``task.type``: its head's), the task types
of albert-tf-finetune (`resolve_task_type`) and the tasks' interface (`Task`, in
`albert_tf.training.task_base`, which lists it).
"""

from __future__ import annotations

from typing import Any

from albert_tf import resources
import albert_tf.heads.registry as heads
from albert_tf.lazy import lazy_exports
from albert_tf.training.experiment_config import ExperimentConfig
from albert_tf.training.preflight import (TASK_FILES, InputDataError,  # noqa: F401
                                         check_task_name, needs_data_dir, no_match_error,
                                         task_file)
# The tasks' base (public here too: the trainer, the binaries and tests import them here).
from albert_tf.training.task_base import (DEFAULT_VOCAB, MODEL_INPUTS,  # noqa: F401
                                          VOCAB_FILE_HINT, Task, TextTask, custom_task_files,
                                          model_config, resolve_path)


def custom_task_type(task) -> str | None:
    """The ``task.type`` a custom task's train file's header asks for (multiple choice or
    token classification, `albert_tf.data.task_data.detect_task_type`), else None."""
    from albert_tf.data import task_data as data_tasks
    if not task.train_file:
        return None
    try:
        train, _, _ = custom_task_files(task)
    except (data_tasks.TaskDataError, resources.DataDirError):
        return None
    return data_tasks.detect_task_type(train)


def resolve_task_type(task) -> str:
    """The ``task.type`` that trains ``task`` (the ``task`` section of a finetuning
    experiment), decided once here for albert-tf-finetune:

    - a task name a head claims (``task_names``: the SQuAD names, any case): that head's
      type (``squad``), whatever the type says;
    - the default type ``classification`` on a custom task whose train file's header asks
      for another head (`custom_task_type`, the heads' ``file_header``: multiple choice,
      token classification): that head's type;
    - else ``task.type`` as given (an explicit ``task.type`` is kept).

    Relative custom files are read from ``task.data_dir``: resolve it first.
    """
    named = heads.for_task_name(task.name)            # the heads' ``task_names``
    if named is not None:
        return named.task_type
    if task.type == "classification":
        return custom_task_type(task) or task.type
    return task.type


# Moved beside their heads (`albert_tf.heads`); the old names still resolve (PEP 562).
_MOVED = {"PretrainingTask": "albert_tf.heads.pretraining",
          "ClassificationTask": "albert_tf.heads.classification",
          "load_task_data": "albert_tf.heads.classification",
          "MultipleChoiceTask": "albert_tf.heads.multiple_choice",
          "TokenClassificationTask": "albert_tf.heads.token_classification"}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED, globals())


def build_task(config: ExperimentConfig, **kwargs: Any) -> Task:
    """The task object for ``config.task.type`` (its head in `albert_tf.heads`)."""
    import albert_tf.heads.registry as heads
    return heads.for_task_type(config.task.type).training_task(config, **kwargs)
