"""What the commands check about their command-line inputs before any work: one line each.

Every albert-tf command refuses bad input with one line naming the problem and the fix, a
non-zero exit and nothing written (docs/robustness.md, "Bad input: one line, nothing
written"). The checks here import no TensorFlow, so the commands run them first:

- `artifact_kind` tells what an albert-tf path is: a model directory, a training run
  directory (checkpoints, its models in ``best/``, ``final/`` or ``model/``), a TFLite / ONNX
  / OpenVINO export, a SavedModel or a TF Serving base directory; `describe` names it.
- `model_dir` accepts a model directory (``config.json`` + weights) and otherwise says what
  the path is and which path to pass instead (``runs/sst2`` -> ``runs/sst2/best``).
- `edge_export` does the same for the edge tools (``albert-tflite-*``): a TFLite, ONNX or
  OpenVINO export directory (or its model file).
- `int_list`, `at_least`, `text`, `input_file`: malformed numbers and lists, empty text,
  missing, empty or whitespace-only input files.

Each raises `InputError` (a ``ValueError``) whose message is the one line.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Iterable, Sequence

CONFIG_FILE = "config.json"           # albert_tf.checkpoints.CONFIG_FILE
TASK_FILE = "task.json"
WEIGHTS_INDEX = "weights.index"
METADATA_FILE = "metadata.json"       # albert_tf.export.metadata.METADATA_FILE
# The model directories a training run writes inside its model_dir: finetune and pretrain
# write best/ and final/, albert-tf-compress model/.
RUN_MODEL_DIRS = ("best", "final", "model")


def _export_formats():
    """The export formats' records (`albert_tf.export.formats`: their metadata ``format``,
    model-file suffixes, and the package that runs them with the extra installing it)."""
    from albert_tf.export import formats   # no TensorFlow
    return formats.every_format()


def _format_of_metadata(name) -> str | None:
    return next((f.name for f in _export_formats() if f.metadata_format == name), None)


def _format_of_file(path: str) -> str | None:
    suffix = os.path.splitext(path)[1].lower()
    return next((f.name for f in _export_formats() if suffix in f.model_files), None)


def _runtime(kind: str) -> tuple[str, str] | None:
    return next((f.runtime for f in _export_formats() if f.name == kind), None)

KINDS = {
    "model": "an albert-tf model directory",
    "run": "the run directory of albert-tf-finetune, -pretrain or -compress",
    "tflite": "a TFLite export (albert-tf-export --format=tflite)",
    "onnx": "an ONNX export (albert-tf-export --format=onnx)",
    "openvino": "an OpenVINO export (albert-tf-export --format=openvino)",
    "saved_model": "a SavedModel (albert-tf-export --format=saved_model)",
    "serving": "a TF Serving base directory of SavedModels (albert-tf-export "
               "--format=saved_model)",
}


class InputError(ValueError):
    """A command-line input albert-tf refuses; the message is one line naming the fix."""


# ------------------------------------------------------------------------ what a path is
def _is_model_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, CONFIG_FILE))


def _has_checkpoint(path: str) -> bool:
    """A TF checkpoint state file (``checkpoint``) or ``ckpt-N.index`` files."""
    if os.path.isfile(os.path.join(path, "checkpoint")):
        return True
    try:
        return any(n.startswith("ckpt-") and n.endswith(".index") for n in os.listdir(path))
    except OSError:
        return False


def run_models(path: str) -> list[str]:
    """The model directories a training run directory holds (``best``, ``final``, ``model``)."""
    return [os.path.join(path, name) for name in RUN_MODEL_DIRS
            if _is_model_dir(os.path.join(path, name))]


def _export_format(directory: str) -> str | None:
    try:
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    return _format_of_metadata(meta.get("format")) if isinstance(meta, dict) else None


def _is_serving_base(path: str) -> bool:
    """``<base>/<version>/saved_model.pb`` or ``<base>/<name>/<version>/saved_model.pb``."""
    try:
        for name in os.listdir(path):
            sub = os.path.join(path, name)
            if not os.path.isdir(sub):
                continue
            if name.isdigit() and os.path.isfile(os.path.join(sub, "saved_model.pb")):
                return True
            for version in os.listdir(sub):
                if version.isdigit() and os.path.isfile(
                        os.path.join(sub, version, "saved_model.pb")):
                    return True
    except OSError:
        return False
    return False


def artifact_kind(path: str) -> str | None:
    """What ``path`` is among `KINDS` (a model file inside an export counts as the export);
    None: something else, or nothing."""
    if os.path.isfile(path):
        kind = _format_of_file(path)
        fmt = _export_format(os.path.dirname(os.path.abspath(path)))
        return fmt if kind and fmt == kind else None
    if not os.path.isdir(path):
        return None
    fmt = _export_format(path)
    if fmt:
        return fmt
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return "saved_model"
    if _is_model_dir(path):
        return "model"
    if run_models(path) or _has_checkpoint(path):
        return "run"
    if _is_serving_base(path):
        return "serving"
    return None


def describe(kind: str) -> str:
    return KINDS[kind]


def _run_hint(path: str, flag: str) -> str:
    """``its models are in run/best and run/final: pass --flag=run/best``."""
    models = run_models(path)
    if not models:
        return ("it holds no model directory yet (best/, final/: a run writes them as it "
                "trains)")
    where = " or ".join(models)
    return f"the model is in {where}: pass {flag}={models[0]}"


# ------------------------------------------------------------------------ model directories
def model_dir(path: str | None, flag: str, *, finetuned: bool = False,
              purpose: str = "", weights: bool = True) -> str:
    """``path`` when it is an albert-tf model directory (``config.json`` and, unless
    ``weights=False`` (a command that checks the config first), weights; with ``finetuned``
    also ``task.json``), else an `InputError` saying what it is and what to pass instead.
    ``purpose`` (e.g. ``"to export"``) completes the messages."""
    doing = f" {purpose}" if purpose else ""
    if not path:
        raise InputError(f"{flag} is required: pass an albert-tf model directory{doing}.")
    if not os.path.exists(path):
        raise InputError(f"{flag}={path}: no such directory; pass an albert-tf model directory "
                         "(config.json, weights.*: written by albert-tf-finetune, -pretrain, "
                         "-compress or -convert).")
    kind = artifact_kind(path)
    if kind == "run":
        raise InputError(f"{flag}={path} is {describe('run')}, not a model directory: "
                         f"{_run_hint(path, flag)}.")
    if kind in ("tflite", "onnx", "openvino", "saved_model", "serving"):
        raise InputError(f"{flag}={path} is {describe(kind)}, not a model directory: pass the "
                         "model directory it was exported from.")
    if os.path.isfile(path):
        raise InputError(f"{flag}={path} is a file; pass an albert-tf model directory "
                         "(config.json, weights.*).")
    if kind != "model":
        raise InputError(f"{flag}={path} is not an albert-tf model directory (no {CONFIG_FILE}); "
                         "pass one written by albert-tf-finetune, -pretrain, -compress or "
                         "-convert.")
    if weights and not os.path.isfile(os.path.join(path, WEIGHTS_INDEX)) \
            and not _has_checkpoint(path):
        raise InputError(f"{flag}={path} has {CONFIG_FILE} but no weights ({WEIGHTS_INDEX}): "
                         f"there is no model{doing}; pass a complete model directory.")
    if finetuned and not os.path.isfile(os.path.join(path, TASK_FILE)):
        raise InputError(f"{flag}={path} is a pretrained model directory (no {TASK_FILE}); "
                         f"pass a finetuned one{doing} (albert-tf-finetune "
                         f"--init_checkpoint={path} writes one).")
    return path


def init_checkpoint(path: str | None, flag: str = "--init_checkpoint") -> str | None:
    """``path`` when training can start from it: a checkpoint prefix (``PREFIX.index``) or
    a directory with name-keyed weights (``weights.index``); else the `model_dir` error
    saying what it is (a run directory's object-graph checkpoints do not restore by name)."""
    if not path or os.path.isfile(path + ".index"):
        return path
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, WEIGHTS_INDEX)):
        return path
    if not os.path.exists(path):
        raise InputError(f"{flag}={path}: no such model directory or checkpoint prefix (looked "
                         f"for {path}.index too); pass a model directory (config.json, "
                         "weights.*) or a checkpoint prefix.")
    model_dir(path, flag, purpose="to start from")
    if not os.path.isfile(os.path.join(path, WEIGHTS_INDEX)):
        raise InputError(f"{flag}={path} has no name-keyed weights ({WEIGHTS_INDEX}); pass a "
                         "model directory written by albert-tf (convert other checkpoints with "
                         "albert-tf-convert).")
    return path


def checkpoint_step_files(path: str) -> bool:
    """Whether ``path`` holds training checkpoints (``checkpoint`` / ``ckpt-N.index``)."""
    return os.path.isdir(path) and _has_checkpoint(path)


def missing_hf_model(path: str) -> str | None:
    """The message for a Hugging Face source (``albert-tf-convert --from=hf --input``) that
    does not exist, else None (`albert_tf.interop.readers.read_hf` reads the rest)."""
    if os.path.exists(path):
        return None
    return (f"{path!r} does not exist; pass a Hugging Face model directory "
            "(config.json + model.safetensors or pytorch_model.bin).")


# ------------------------------------------------------------------------ edge exports
def edge_export(path: str, flag: str = "--model",
                formats: Sequence[str] = ("tflite", "onnx", "openvino"),
                other_formats: str = "") -> str:
    """The format of the export at ``path`` (one of ``formats``: a directory with
    ``metadata.json``, or its model file), else an `InputError` saying what ``path`` is and
    what runs it (``other_formats``: what to do with an export of another format). A format
    whose runtime package is missing names its pip extra."""
    if not os.path.exists(path):
        raise InputError(f"{flag}={path}: no such file or directory; pass an export directory "
                         "written by albert-tf-export --format=tflite (or its model.tflite).")
    kind = artifact_kind(path)
    if kind in ("saved_model", "serving"):
        where = path if kind == "saved_model" else f"{os.path.join(path, '<name>', '<version>')}"
        raise InputError(f"{flag}={path} is {describe(kind)}: serve it with TF Serving, or run "
                         f"it with albert-tf-saved-model-cli run --dir {where} --tag_set serve "
                         "--signature_def serving_default --input_exprs 'text=[\"...\"]'; the "
                         "albert-tflite tools run TFLite, ONNX and OpenVINO exports.")
    if kind == "model":
        raise InputError(f"{flag}={path} is {describe('model')}, not an export: export it first "
                         f"(albert-tf-export --model_dir={path} --format=tflite --output=DIR).")
    if kind == "run":
        models = run_models(path)
        model = models[0] if models else os.path.join(path, "best")
        raise InputError(f"{flag}={path} is {describe('run')}, not an export: export one of its "
                         f"model directories first (albert-tf-export --model_dir={model} "
                         "--format=tflite --output=DIR).")
    if kind is None and os.path.isfile(path) and _export_format(os.path.dirname(
            os.path.abspath(path))):
        directory = os.path.dirname(path) or "."
        what = describe(_export_format(directory)).split(" (")[0]
        raise InputError(f"{flag}={path} is a file of {what}, not its model: pass the "
                         f"export directory, {flag}={directory}.")
    if kind is None:
        where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        raise InputError(f"{flag}={path} is not an albert-tf export (no readable "
                         f"{os.path.join(where, METADATA_FILE)}): export with albert-tf-export, "
                         "or write the metadata of a .tflite with albert-tflite-metadata.")
    if kind not in formats:
        allowed = " or ".join(describe(f).split(" (")[0] for f in formats)
        raise InputError(f"{flag}={path} is {describe(kind)}; this tool takes {allowed}"
                         + (f": {other_formats}" if other_formats else "") + ".")
    if _runtime(kind):
        import importlib.util
        if importlib.util.find_spec(_runtime(kind)[0]) is None:
            raise missing_runtime(path, kind, flag)
    return kind


def missing_runtime(path: str, kind: str, flag: str = "--model",
                    error: Exception | None = None) -> InputError:
    """The error for an export whose runtime package is not installed (or fails to import:
    ``error``), naming the pip extra that installs it."""
    package, extra = _runtime(kind)
    why = f"it fails to import ({one_line(error)})" if error else "it is not installed"
    return InputError(f"{flag}={path} is {describe(kind)}; running it needs {package}, and "
                      f"{why}: pip install 'albert-tf[{extra}]'.")


# ------------------------------------------------------------------------ argparse tools
class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line, ``PROG: error: MESSAGE (see
    --help)`` and exit status 2, as the absl binaries' (`albert_tf.cli.run_app`), instead of
    the usage block followed by the message. ``doc`` (the tool's module docstring) is its
    ``--help`` description as written, examples included, as the absl binaries show theirs."""

    def __init__(self, *args, doc: str | None = None, **kwargs):
        if doc:
            kwargs.update(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):   # noqa: D102  (argparse's hook)
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def one_line(message) -> str:
    """``message`` (or an exception's text) with its line breaks and runs of spaces folded."""
    return " ".join(str(message).split())


# ------------------------------------------------------------------------ values
def int_list(values: Iterable[str] | None, flag: str, minimum: int = 1,
             maximum: int | None = None, why_maximum: str = "") -> list[int]:
    """``--flag=32,64`` as integers, each in ``[minimum, maximum]`` (``why_maximum``: what
    sets the maximum, for the message)."""
    out = []
    for value in values or ():
        try:
            number = int(str(value).strip())
        except ValueError:
            raise InputError(f"{flag}: {str(value)!r} is not an integer (e.g. "
                             f"{flag}={max(minimum, 32)},{max(minimum, 64)}).") from None
        out.append(number)
    bad = [n for n in out if n < minimum or (maximum is not None and n > maximum)]
    if bad:
        bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        why = f" ({maximum}: {why_maximum})" if maximum is not None and why_maximum else ""
        raise InputError(f"{flag}={','.join(map(str, out))}: each must be {bounds}{why}.")
    return out


def at_least(value, flag: str, minimum=1):
    """``value`` unless it is below ``minimum`` (None passes: the flag was not given)."""
    if value is not None and value < minimum:
        raise InputError(f"{flag}={value}: must be >= {minimum}.")
    return value


def text(value: str | None, flag: str) -> str:
    """A non-blank text input."""
    if value is None or not value.strip():
        what = "only whitespace" if value else "empty"
        raise InputError(f"{flag} is {what}: pass the text to run (a blank text has no "
                         "answer).")
    return value


def input_file(path: str | None, flag: str, what: str = "text") -> str:
    """An existing, readable file with something other than whitespace in it."""
    if not path:
        raise InputError(f"{flag} is empty: pass a file.")
    if os.path.isdir(path):
        raise InputError(f"{flag}={path} is a directory; pass a file of {what}.")
    if not os.path.isfile(path):
        raise InputError(f"{flag}={path}: no such file.")
    try:
        with open(path, "rb") as f:
            blank = not f.read(1 << 20).strip()
            if blank and f.read(1):
                blank = False    # more than 1 MiB of leading whitespace: let the reader judge
    except OSError as e:
        raise InputError(f"{flag}={path}: cannot be read ({e.strerror}).") from None
    if blank:
        only = " (only whitespace)" if os.path.getsize(path) else ""
        raise InputError(f"{flag}={path} is empty{only}: pass a file of {what}.")
    return path


__all__ = ["ArgumentParser", "InputError", "KINDS", "artifact_kind", "at_least",
           "checkpoint_step_files", "describe", "edge_export", "init_checkpoint", "input_file",
           "int_list", "missing_hf_model", "missing_runtime", "model_dir", "one_line",
           "run_models", "text"]
