"""What the commands check about their command-line inputs before any work: one line each.

Every albert-tf command refuses bad input with one line naming the problem and the fix, a
non-zero exit and nothing written (docs/robustness.md, "Bad input: one line, nothing
written"). The checks here import no TensorFlow, so the commands run them first:

- `artifact_kind` tells what an albert-tf path is: a model directory, a training run
  directory (checkpoints, its models in ``best/``, ``final/`` or ``model/``), a TFLite / ONNX
  / OpenVINO export, a SavedModel or a TF Serving base directory; and what needs
  ``albert-tf-convert`` first: a Hugging Face directory, a keras-hub preset, an original
  TF1 checkpoint; `describe` names it, `convert_command` says how to convert it.
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


def export_kinds() -> tuple[str, ...]:
    """The `artifact_kind`s that are exports: every ``--format`` of the registry, and a TF
    Serving base directory of SavedModels (``serving``)."""
    return tuple(f.name for f in _export_formats()) + ("serving",)


def edge_formats() -> tuple[str, ...]:
    """The formats the ``albert-tflite-*`` tools run: those with a raw-text runner."""
    return tuple(f.name for f in _export_formats() if f.runner)


# What each kind that is not an export format is (a format is described from its registry
# title: `describe`).
KINDS = {
    "model": "an albert-tf model directory",
    "run": "the run directory of albert-tf-finetune, -pretrain or -compress",
    "serving": "a TF Serving base directory of SavedModels (albert-tf-export "
               "--format=saved_model)",
    "hf": "a Hugging Face directory",
    "keras_hub": "a keras-hub preset",
    "google": "an original ALBERT/BERT TF1 checkpoint",
}
# The kinds albert-tf-convert turns into a model directory, with its --from.
CONVERTIBLE = {"hf": "hf", "keras_hub": "keras_hub", "google": "google"}
# What albert_tf.outputs' markers record for the Hugging Face and keras-hub outputs of
# albert-tf-convert (albert_tf.outputs.HF_DIRECTORY, KERAS_HUB_PRESET).
_MARKER_KINDS = {"hugging face directory": "hf", "keras-hub preset": "keras_hub"}
MARKER_FILE = ".albert-tf-output.json"    # albert_tf.outputs.MARKER_FILE
# Hugging Face weights (albert_tf.interop.readers.HF_WEIGHT_FILES) and original configs.
HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                   "pytorch_model.bin", "pytorch_model.bin.index.json")
GOOGLE_CONFIGS = ("albert_config.json", "bert_config.json")


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


def _json(path: str) -> dict | None:
    """The JSON object in ``path`` (None: no such file, unreadable, or not an object)."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _export_format(directory: str) -> str | None:
    meta = _json(os.path.join(directory, METADATA_FILE))
    # (a keras-hub preset's metadata.json has no "format": it is no export of ours)
    fmt = meta.get("format") if meta else None
    return _format_of_metadata(fmt) if isinstance(fmt, str) else None


def _converted_kind(path: str) -> str | None:
    """``hf``, ``keras_hub`` or ``google`` when ``path`` is a directory albert-tf-convert
    reads (`CONVERTIBLE`), else None. A Hugging Face directory: albert-tf's marker says so,
    or its ``config.json`` has ``model_type`` / ``architectures``, or it holds Hugging Face
    weights beside a ``config.json``; a keras-hub preset (``save_to_preset``): the marker,
    a ``config.json`` of a keras-hub class (``"module": "keras_hub..."``) or a
    ``metadata.json`` with ``keras_version``; an original release: ``albert_config.json``
    / ``bert_config.json``, or a TF-Hub TF1 module (``tfhub_module.pb``)."""
    marked = _MARKER_KINDS.get(_marker_kind(path))
    if marked:
        return marked
    config = _json(os.path.join(path, CONFIG_FILE))
    if config is not None:
        module, registered = config.get("module"), config.get("registered_name")
        if (isinstance(module, str) and module.startswith("keras_hub")) or (
                isinstance(registered, str) and registered.startswith("keras_hub>")):
            return "keras_hub"
        if "model_type" in config or "architectures" in config or any(
                os.path.isfile(os.path.join(path, n)) for n in HF_WEIGHT_FILES):
            return "hf"
    meta = _json(os.path.join(path, METADATA_FILE))
    if meta is not None and ("keras_version" in meta or "keras_hub_version" in meta):
        return "keras_hub"
    if any(os.path.isfile(os.path.join(path, n)) for n in (*GOOGLE_CONFIGS, "tfhub_module.pb")):
        return "google"
    return None


def _marker_kind(directory: str) -> str:
    """The kind albert-tf's output marker in ``directory`` records (``""``: none)."""
    record = _json(os.path.join(directory, MARKER_FILE))
    kind = record.get("kind") if record else None
    return kind if isinstance(kind, str) else ""


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
    """What ``path`` is among `KINDS` and the export formats (a model file inside an export
    counts as the export); None: something else, or nothing."""
    if os.path.isfile(path):
        kind = _format_of_file(path)
        fmt = _export_format(os.path.dirname(os.path.abspath(path)))
        return fmt if kind and fmt == kind else None
    if not os.path.isdir(path):
        return None
    fmt = _export_format(path)
    if fmt:
        return fmt
    converted = _converted_kind(path)
    if converted:
        return converted
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
    """"an ONNX export (albert-tf-export --format=onnx)": what an `artifact_kind` is, for
    messages (`KINDS`, or an export format's registry title)."""
    if kind in KINDS:
        return KINDS[kind]
    title = next(f.title for f in _export_formats() if f.name == kind)
    return f"{title[0].lower()}{title[1:]} (albert-tf-export --format={kind})"


def convert_command(kind: str, path: str, output: str = "DIR") -> str:
    """The albert-tf-convert command that turns ``path`` (of a `CONVERTIBLE` kind) into an
    albert-tf model directory."""
    return f"albert-tf-convert --from={CONVERTIBLE[kind]} --input={path} --output_dir={output}"


def needs_conversion(path: str, flag: str, what: str = "not an albert-tf model directory",
                     then: str = "") -> str | None:
    """The line for a ``path`` that albert-tf-convert must turn into a model directory first
    (`CONVERTIBLE`: ``--model_dir=hf/sst2 is a Hugging Face directory, not an albert-tf model
    directory: convert it first: albert-tf-convert --from=hf ...``), else None. ``then``:
    what to do with the converted directory (``, then export DIR``)."""
    kind = artifact_kind(path) if os.path.isdir(path) else None
    if kind not in CONVERTIBLE:
        return None
    return (f"{flag}={path} is {describe(kind)}, {what}: convert it first: "
            f"{convert_command(kind, path)}{then}.")


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
    if kind in export_kinds():
        raise InputError(f"{flag}={path} is {describe(kind)}, not a model directory: pass the "
                         "model directory it was exported from.")
    if kind in CONVERTIBLE:
        raise InputError(needs_conversion(path, flag))
    if os.path.isfile(path):
        raise InputError(f"{flag}={path} is a file; pass an albert-tf model directory "
                         "(config.json, weights.*).")
    if kind != "model":
        raise InputError(f"{flag}={path} is not an albert-tf model directory (no {CONFIG_FILE}); "
                         "pass one written by albert-tf-finetune, -pretrain, -compress or "
                         "-convert.")
    _check_json(path, CONFIG_FILE, flag)
    if weights and not os.path.isfile(os.path.join(path, WEIGHTS_INDEX)) \
            and not _has_checkpoint(path):
        raise InputError(f"{flag}={path} has {CONFIG_FILE} but no weights ({WEIGHTS_INDEX}): "
                         f"there is no model{doing}; pass a complete model directory.")
    if finetuned and not os.path.isfile(os.path.join(path, TASK_FILE)):
        raise InputError(f"{flag}={path} is a pretrained model directory (no {TASK_FILE}); "
                         f"pass a finetuned one{doing} (albert-tf-finetune "
                         f"--init_checkpoint={path} writes one).")
    return path


def _check_json(directory: str, name: str, flag: str) -> None:
    """An `InputError` unless ``directory``'s file ``name`` (``config.json``) is a JSON
    object: an empty, cut or damaged file is refused here, before TensorFlow loads."""
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 24)
    except OSError as e:
        raise InputError(f"{flag}={directory}: its {name} cannot be read "
                         f"({e.strerror or e}).") from None
    fix = (f"copy the model directory again ({name} is written with its weights by "
           "albert-tf-finetune, -pretrain, -compress or -convert).")
    if not data.strip():
        raise InputError(f"{flag}={directory}: its {name} is empty; {fix}")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(f"{flag}={directory}: its {name} is not valid JSON "
                         f"({one_line(e)[:160]}); {fix}") from None
    if not isinstance(value, dict):
        raise InputError(f"{flag}={directory}: its {name} is a JSON {type(value).__name__}, "
                         f"not an object of model settings; {fix}")


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


# What albert-tf-convert --from=X reads, for the messages of `convert_source_problem`.
_SOURCES = {"google": "an original TF1 checkpoint (model.ckpt-best + albert_config.json)",
            "hf": "a Hugging Face directory (config.json + model.safetensors or "
                  "pytorch_model.bin)",
            "keras_hub": "a keras-hub preset directory (save_to_preset)"}


def convert_source_problem(path: str, source_format: str, flag: str | None = "--input"
                           ) -> str | None:
    """Why ``albert-tf-convert --from=source_format`` cannot read ``path`` when what the
    path is says so without reading it (None: it may be a source of that format, or it is
    for the reader to judge): an albert-tf model directory or run (nothing to convert), an
    export, or a source of another format (the right ``--from``). ``flag`` names the path
    in the message (None: the path alone, for the Python API)."""
    if source_format == "hf":
        missing = missing_hf_model(path)
        if missing:
            return missing
    if not os.path.isdir(path):
        return None
    kind = artifact_kind(path)
    name = f"{flag}={path}" if flag else path
    reads = _SOURCES.get(source_format, "")
    if kind in CONVERTIBLE:
        if CONVERTIBLE[kind] == source_format:
            return None
        return (f"{name} is {describe(kind)}, not {reads}: pass --from={CONVERTIBLE[kind]} "
                f"({convert_command(kind, path)}).")
    if kind == "model" and not (os.path.isfile(os.path.join(path, WEIGHTS_INDEX))
                                or _marker_kind(path)):
        return None    # config.json beside a TF1 checkpoint: --from=google reads it
    if kind == "model":
        return (f"{name} is {describe('model')} already: nothing to convert (export it as it "
                f"is: albert-tf-export --model_dir={path}); to write it as a Hugging Face "
                "directory or a keras-hub preset, drop --from: albert-tf-convert --to=hf (or "
                f"--to=keras_hub) --input={path} --output_dir=DIR.")
    if kind == "run":
        models = " and ".join(run_models(path)) or os.path.join(path, "best")
        return (f"{name} is {describe('run')}: its model directories ({models}) are albert-tf "
                "model directories already, nothing to convert; to write one as a Hugging "
                "Face directory or a keras-hub preset, drop --from: albert-tf-convert --to=hf "
                f"(or --to=keras_hub) --input={models.split(' and ')[0]} --output_dir=DIR.")
    if kind is not None:
        ours = kind not in ("saved_model", "serving") or bool(_marker_kind(path))
        return (f"{name} is {describe(kind)}, not {reads}: albert-tf-convert does not read "
                "exports" + ("; the model directory it was exported from is an albert-tf "
                             "model directory already" if ours else "") + ".")
    return None


def missing_hf_model(path: str) -> str | None:
    """The message for a Hugging Face source (``albert-tf-convert --from=hf --input``) that
    does not exist, else None (`albert_tf.interop.readers.read_hf` reads the rest)."""
    if os.path.exists(path):
        return None
    return (f"{path!r} does not exist; pass a Hugging Face model directory "
            "(config.json + model.safetensors or pytorch_model.bin).")


# ------------------------------------------------------------------------ edge exports
def edge_export(path: str, flag: str = "--model",
                formats: Sequence[str] | None = None,
                other_formats: str = "") -> str:
    """The format of the export at ``path`` (one of ``formats``, default `edge_formats`: a
    directory with
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
    if kind in CONVERTIBLE:
        raise InputError(needs_conversion(
            path, flag, "not an export", then=", then export DIR (albert-tf-export "
            "--model_dir=DIR --format=tflite --output=EXPORT)"))
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
    formats = edge_formats() if formats is None else formats
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


__all__ = ["CONVERTIBLE", "ArgumentParser", "InputError", "KINDS", "artifact_kind", "at_least",
           "checkpoint_step_files", "convert_command", "convert_source_problem", "describe",
           "edge_export", "init_checkpoint", "input_file", "int_list", "missing_hf_model",
           "missing_runtime", "model_dir", "needs_conversion", "one_line", "run_models",
           "text"]
