"""Where albert-tf finds its files: the configs it ships, and the user's data.

Shipped files (``official_configs/`` of the repository, package data
``albert_tf.official_configs`` of the wheel) are found with `importlib.resources`, so
they work the same from a source checkout, an editable install and an installed wheel::

    resources.model_config_path("albert_base")    # .../official_configs/models/albert_base.json
    resources.experiment_path("run_quick")         # .../official_configs/experiments/run_quick.yaml
    resources.DEFAULT_VOCAB                        # "official_configs/vocab/imdb_pydocs_8k.model"
    resources.resolve("official_configs/vocab/imdb_pydocs_8k.model")   # a real path

Config files name shipped files as ``official_configs/...`` paths; `resolve` turns such
a path into the installed file when it does not exist relative to the working directory.

The task data (GLUE, IMDB, the corpora) is the user's: every command takes
``--data_dir``, defaulting to the environment variable ``ALBERT_TF_DATA_DIR``
(`data_dir`). Nothing assumes a checkout beside the package.
"""

from __future__ import annotations

import os
from importlib import resources

CONFIGS_PACKAGE = "albert_tf.official_configs"
CONFIGS_PREFIX = "official_configs"
DEFAULT_VOCAB = f"{CONFIGS_PREFIX}/vocab/imdb_pydocs_8k.model"
DATA_DIR_ENV = "ALBERT_TF_DATA_DIR"


class DataDirError(ValueError):
    """No task data directory was given, or it does not exist; the message names the
    flag and the environment variable that set it."""


# ----------------------------------------------------------------------- shipped files
def official_configs_dir() -> str:
    """The directory holding ``models/``, ``experiments/`` and ``vocab/``."""
    return str(resources.files(CONFIGS_PACKAGE))


def official_file(*parts: str) -> str:
    """Path of a shipped file, e.g. ``official_file("vocab", "imdb_pydocs_8k.model")``
    (it may not exist: callers check)."""
    return os.path.join(official_configs_dir(), *parts)


def _names(folder: str, suffix: str) -> list[str]:
    directory = official_file(folder)
    if not os.path.isdir(directory):
        return []
    return sorted(f[:-len(suffix)] for f in os.listdir(directory) if f.endswith(suffix))


def model_config_names() -> list[str]:
    """Names of the shipped model configs (``albert_base``, ``bert_base``, ...)."""
    return _names("models", ".json")


def experiment_names() -> list[str]:
    """Names of the shipped experiment files (``run_quick``, ``finetune_sst2_albert_mini``, ...)."""
    return _names("experiments", ".yaml")


def model_config_path(name: str) -> str:
    """``models/<name>.json``; `FileNotFoundError` listing the shipped names otherwise."""
    path = official_file("models", f"{name}.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"no official model config named {name!r}; the shipped ones are "
            f"{', '.join(model_config_names())} (or give the path of a config JSON).")
    return path


def experiment_path(name: str) -> str | None:
    """``experiments/<name>.yaml`` (``name`` with or without ``.yaml``), or None."""
    base = name[:-len(".yaml")] if name.endswith(".yaml") else name
    if os.path.sep in base or "/" in base:
        return None
    path = official_file("experiments", f"{base}.yaml")
    return path if os.path.isfile(path) else None


def resolve(path: str) -> str:
    """``path`` as given when it exists (or is empty or absolute); an
    ``official_configs/...`` path that does not exist here is the shipped file."""
    if not path or os.path.isabs(path) or os.path.exists(path):
        return path
    parts = path.replace("\\", "/").split("/")
    if parts[0] == CONFIGS_PREFIX and len(parts) > 1:
        candidate = official_file(*parts[1:])
        if os.path.exists(candidate):
            return candidate
    return path


# -------------------------------------------------------------------------- user data
def data_dir_fix(flag: str = "--data_dir") -> str:
    """What every missing-data error tells the user to do."""
    return f"pass {flag}=DIR or set {DATA_DIR_ENV}=DIR"


# The fix for a data directory that lacks a file a task reads.
DATA_DIR_FIX = f"{data_dir_fix()} to the data directory (the layout of the project's shared data)"


def data_dir(value: str | None = None, flag: str = "--data_dir") -> str:
    """The task data root: ``value`` (a flag), else ``$ALBERT_TF_DATA_DIR``.

    Raises `DataDirError` naming ``flag`` and the variable when neither is set or the
    directory does not exist.
    """
    chosen = value or os.environ.get(DATA_DIR_ENV, "")
    source = flag if value else f"${DATA_DIR_ENV}"
    if not chosen:
        raise DataDirError(
            f"no data directory: {data_dir_fix(flag)} (a directory in "
            "the layout of the project's shared data: glue/SST-2/train.tsv, corpus/, ...).")
    if not os.path.isdir(chosen):
        raise DataDirError(f"data directory {chosen!r} (from {source}) does not exist: "
                           f"{data_dir_fix(flag)} to an existing directory.")
    return chosen


def data_dir_or_none(value: str | None = None) -> str | None:
    """``value``, else ``$ALBERT_TF_DATA_DIR``, else None (for code with another fallback)."""
    return value or os.environ.get(DATA_DIR_ENV) or None
