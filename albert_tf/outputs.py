"""The one way albert-tf writes an output directory: staged, marked, never over a user's files.

Every command that writes a directory (each export format, ``albert-tf-convert``, the model
directories of finetune / compress / the pipeline) goes through `staged_output`:

1. `check_output` refuses, before anything is written, a target that could cost the user
   data: ``/``, the home directory, the current directory or any directory above it, a path
   equal to, inside or containing one of the command's inputs, a file or a symbolic link
   where the directory goes, and an existing non-empty directory that albert-tf did not
   write. An existing directory that albert-tf wrote (it holds `MARKER_FILE`) is replaced
   only with ``overwrite``; an empty one is simply used.
2. Everything is written into a hidden sibling, ``.<name>.tmp-<random>`` (not a number, so
   TF Serving, which loads numeric version directories, never sees a half-written export),
   created with the umask's modes like any ``mkdir`` (``tempfile.mkdtemp`` would make it
   0700, unreadable to a server running as another user).
3. On success the marker is written into the stage and the stage is renamed into place;
   a replaced earlier output (checked again at that moment: it must still be albert-tf's)
   is renamed aside and then removed. On any error the stage is removed and the target is
   left as it was.

Every output records its kind in the marker (`MODEL_DIRECTORY`, `export_kind` of a format,
`RUN_KINDS`...), and ``overwrite`` replaces an output only with one of the same kind: an
export never replaces a trained model directory, a conversion never replaces a run.

Run directories (``--model_dir`` of training and compression, ``--output_dir`` of the
pipeline) are written into, not replaced: `check_run_directory` takes a new or empty
directory, or one albert-tf's same command wrote (its marker, or the checkpoints of a run
written before markers existed), and checks the outputs the run will write inside it
before any work; `mark_run_directory` records the kind when the run starts.

Shapes of the rules, as a table: docs/robustness.md ("Output directories").
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import secrets
import shutil
from typing import Iterable, Iterator

MARKER_FILE = ".albert-tf-output.json"

# The kinds of output, as the marker records them.
MODEL_DIRECTORY = "model directory"             # training's best/ and final/, compress model/
CONVERTED_MODEL = "converted model directory"   # albert-tf-convert --from=...
HF_DIRECTORY = "hugging face directory"         # albert-tf-convert --to=hf
KERAS_HUB_PRESET = "keras-hub preset"           # albert-tf-convert --to=keras_hub
VOCABULARY = "vocabulary"                       # albert-tf-train-vocab ("wordpiece vocabulary")
EXAMPLE_DATA = "example data"                   # python -m albert_tf.data.examples: a task's TSVs
# The run directories, by the command that writes into them.
RUN_KINDS = {"albert-tf-finetune": "finetune run", "albert-tf-pretrain": "pretrain run",
             "albert-tf-compress": "compress run", "albert-tf-run": "pipeline run",
             "albert-tf-benchmark": "benchmark run"}
# Kinds that earlier versions recorded, as they are named now.
_EARLIER_KINDS = {"albert-tf model directory": MODEL_DIRECTORY,
                  "compressed tflite": "tflite export"}
_DESCRIPTIONS = {
    MODEL_DIRECTORY: "an albert-tf model directory (weights written by training or "
                     "compression)",
    CONVERTED_MODEL: "a model directory converted by albert-tf-convert",
    HF_DIRECTORY: "a Hugging Face directory written by albert-tf-convert",
    KERAS_HUB_PRESET: "a keras-hub preset written by albert-tf-convert",
    VOCABULARY: "a vocabulary written by albert-tf-train-vocab",
    EXAMPLE_DATA: "an example task's data written by python -m albert_tf.data.examples",
    **{kind: f"the run directory of {command}" for command, kind in RUN_KINDS.items()},
}


class OutputError(ValueError):
    """An output path albert-tf refuses to write; the message names the path and the fix."""


def is_albert_tf_output(directory: str) -> bool:
    """Whether ``directory`` holds the marker albert-tf writes into its outputs."""
    return os.path.isfile(os.path.join(directory, MARKER_FILE))


def export_kind(format_name: str) -> str:
    """The kind of an export of ``format_name`` (``"tflite export"``)."""
    return f"{format_name} export"


def same_kind(kind: str) -> str:
    """``kind`` as outputs are compared: earlier names mapped to today's, the vocabulary
    types (``wordpiece vocabulary``) to `VOCABULARY`."""
    kind = _EARLIER_KINDS.get(kind, kind)
    return VOCABULARY if kind.endswith(" vocabulary") else kind


def describe_kind(kind: str) -> str:
    """``kind`` in words, with its article (``"a tflite export (albert-tf-export)"``)."""
    kind = same_kind(kind)
    if kind in _DESCRIPTIONS:
        return _DESCRIPTIONS[kind]
    if kind.endswith(" export"):
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} (albert-tf-export)"
    return f"an albert-tf output of kind {kind!r}" if kind else \
        "an albert-tf output that records no kind"


def marker_kind(directory: str) -> str:
    """The kind the marker of ``directory`` records (`same_kind`); ``""`` when it records
    none or cannot be read."""
    try:
        with open(os.path.join(directory, MARKER_FILE), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return ""
    kind = record.get("kind") if isinstance(record, dict) else None
    return same_kind(kind) if isinstance(kind, str) else ""


def _resolved(path: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(path)))


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies below it (both resolved)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _protected(target: str) -> str | None:
    """What ``target`` (resolved) is if it may never be an output directory, or None."""
    cwd = _resolved(os.getcwd())
    if target == os.path.dirname(target):
        return "the file-system root"
    if target == _resolved("~"):
        return "the home directory"
    if _inside(cwd, target):
        return "the current directory" if target == cwd else "a parent of the current directory"
    return None


def _input_clash(target: str, inputs: Iterable[tuple[str, str]]) -> str | None:
    """Why ``target`` clashes with one of the command's ``(flag, path)`` inputs, or None."""
    for in_flag, path in inputs:
        if not path:
            continue
        source = _resolved(path)
        if target == source:
            return f"it is {in_flag}={path}, an input of this command"
        if _inside(source, target):
            return f"it contains {in_flag}={path}, an input of this command"
        if _inside(target, source):
            return f"it lies inside {in_flag}={path}, an input of this command"
    return None


def check_output(path: str, *, kind: str, inputs: Iterable[tuple[str, str | None]] = (),
                 overwrite: bool = False, flag: str = "--output") -> str:
    """The absolute path albert-tf may write ``path`` as, or an `OutputError` saying why not.

    Args:
      path: the output directory as the user gave it (``~`` is expanded).
      kind: what will be written there (`export_kind`, `MODEL_DIRECTORY`, ...): an earlier
        output is replaced only by one of the same kind.
      inputs: ``(flag, path)`` of each input of the command (None paths are skipped).
      overwrite: whether an earlier albert-tf output of ``kind`` at ``path`` may be replaced.
      flag: the flag ``path`` came from, for the message.
    """
    final = check_location(path, inputs=inputs, flag=flag, writable=False)
    check_writable(os.path.dirname(final), flag=flag, path=path)
    if os.path.islink(final):
        raise OutputError(f"{flag}={path} is a symbolic link; pass the directory it points to "
                          "or a new path.")
    if os.path.lexists(final):
        if not os.path.isdir(final):
            raise OutputError(f"{flag}={path} exists and is not a directory; pass a new path.")
        if os.listdir(final):
            if not is_albert_tf_output(final):
                raise OutputError(f"{flag}={path} holds files albert-tf did not write "
                                  f"(no {MARKER_FILE}); nothing was touched: pass a new or "
                                  "empty directory.")
            _check_same_kind(final, path, kind, flag)
            if not overwrite:
                raise OutputError(f"{flag}={path} already exists (an earlier albert-tf output: "
                                  f"{describe_kind(kind)}); pass --overwrite to replace it.")
    return final


def _check_same_kind(final: str, path: str, kind: str, flag: str) -> None:
    """`OutputError` unless the albert-tf output at ``final`` is of ``kind``."""
    theirs = marker_kind(final)
    if theirs != same_kind(kind):
        raise OutputError(f"{flag}={path} is {describe_kind(theirs)}, not "
                          f"{describe_kind(kind)}: albert-tf replaces an output only with one "
                          "of the same kind, with or without --overwrite; nothing was touched: "
                          "pass a new path.")


def check_location(path: str, *, inputs: Iterable[tuple[str, str | None]] = (),
                   flag: str = "--output", writable: bool = True) -> str:
    """The absolute form of ``path`` after the checks of `check_output` that do not depend
    on what is there: not empty, not ``/``, ``~``, the current
    directory or above it, no clash with an input, and (``writable``) a place a directory
    can be written (`check_writable`). For a directory albert-tf writes inside
    of (a TF Serving base directory, a run directory) rather than replaces."""
    if not path or not path.strip():
        raise OutputError(f"{flag} is empty: pass the directory to write.")
    final = os.path.abspath(os.path.expanduser(path))
    target = _resolved(final)
    what = _protected(target)
    if what:
        shown = path if path == target else f"{path} ({target})"
        raise OutputError(f"{flag}={shown} is {what}; albert-tf writes only into a new directory "
                          f"or one it wrote: pass a new path such as "
                          f"{flag}={os.path.join(path, 'export')}.")
    clash = _input_clash(target, [(f, p) for f, p in inputs if p])
    if clash:
        raise OutputError(f"{flag}={path}: {clash}; write the output somewhere else.")
    if writable:
        check_writable(final, flag=flag, path=path)
    return final


def check_base_directory(path: str, *, inputs: Iterable[tuple[str, str | None]] = (),
                         flag: str = "--output") -> str:
    """`check_location` for a base directory albert-tf creates new directories inside (TF
    Serving's ``<base>/<name>/<version>/``), and that it is no albert-tf output itself nor
    inside one that is replaced whole (a later write of that output would delete what is
    written inside it), and not a model's own directory of a serving base
    (``serving/sst2``, whose version directories hold ``saved_model.pb``)."""
    final = check_location(path, inputs=inputs, flag=flag)
    owner = final if is_albert_tf_output(final) else _replaced_whole_output_above(final)
    if owner:
        raise OutputError(f"{flag}={path}: {owner} is {describe_kind(marker_kind(owner))}, not "
                          "a base directory of SavedModels; nothing was touched: pass a new "
                          "directory (e.g. serving) or an existing TF Serving base.")
    if os.path.isdir(final) and any(
            name.isdigit() and os.path.isfile(os.path.join(final, name, "saved_model.pb"))
            for name in os.listdir(final)):
        parent = os.path.dirname(path.rstrip(os.sep)) or "."
        raise OutputError(f"{flag}={path} is one model's directory inside a TF Serving base "
                          f"(it holds version directories): pass the base, {flag}={parent}.")
    return final


def check_writable(directory: str, *, flag: str, path: str | None = None) -> None:
    """`OutputError` unless a directory can be created in ``directory`` or, when it does not
    exist yet, in its nearest existing parent (a read-only file system, a directory of
    another user, a file in the way): tried by creating and removing a hidden directory,
    before any work. ``path`` is the flag's value as given, for the message."""
    shown = path if path is not None else directory
    parent = os.path.abspath(directory)
    while not os.path.lexists(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        if parent == os.path.abspath(os.path.expanduser(shown)):
            raise OutputError(f"{flag}={shown} exists and is not a directory; pass a new path.")
        raise OutputError(f"{flag}={shown}: {parent} is a file, not a directory; pass another "
                          "path.")
    probe = os.path.join(parent, f".albert-tf-probe-{secrets.token_hex(4)}")
    try:
        os.mkdir(probe)
    except OSError as e:
        raise OutputError(f"{flag}={shown}: cannot write in {parent} "
                          f"({e.strerror or e}); pass a directory you can write, nothing "
                          "was written.") from None
    os.rmdir(probe)


def storage_problem(error: BaseException) -> str | None:
    """One line for an error of the storage an output is written to (no space left, a
    read-only file system, no permission, a quota) with the fix, or None for any other
    error; TensorFlow's file errors (``tf.errors.OpError``) are read by their message."""
    reasons = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
               errno.EROFS: "the file system is read-only", errno.EACCES: "no permission",
               errno.EPERM: "no permission"}
    if isinstance(error, OSError) and error.errno in reasons:
        where = f" {error.filename}" if error.filename else ""
        return (f"cannot write{where}: {reasons[error.errno]} ({error.strerror}); free space "
                "or pass a writable directory, then run the command again.")
    message = getattr(error, "message", None)
    if isinstance(message, str) and type(error).__module__.startswith("tensorflow"):
        for text in ("No space left on device", "Read-only file system", "Permission denied",
                     "Disk quota exceeded"):
            if text in message:
                first = " ".join(message.split())[:300]
                return (f"cannot write: {first}; free space or pass a writable directory, "
                        "then run the command again.")
    return None


def check_output_file(path: str, *, overwrite: bool = False, flag: str = "--output_file",
                      inputs: Iterable[tuple[str, str | None]] = ()) -> str:
    """The absolute path of the result file ``path`` (``--json``, ``--output_file``) after
    the checks before any work: not a directory, not one of the command's ``inputs`` nor
    inside one, not inside an albert-tf output that is replaced whole (an export, a model
    directory, a conversion: a file added there is lost with it, or spoils it), a place a
    file can be written (`check_writable`), and no existing file unless ``overwrite``
    (albert-tf cannot tell a file it wrote from a user's: ``--overwrite`` says the user
    means it)."""
    if not path or not path.strip():
        raise OutputError(f"{flag} is empty: pass the file to write.")
    final = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(final) or path.endswith(("/", os.sep)):
        raise OutputError(f"{flag}={path} is a directory; pass a file path.")
    clash = _input_clash(_resolved(final), [(f, p) for f, p in inputs if p])
    if clash:
        raise OutputError(f"{flag}={path}: {clash}; write the file somewhere else.")
    owner = _replaced_whole_output_above(final)
    if owner:
        raise OutputError(f"{flag}={path} lies inside {owner} ({describe_kind(marker_kind(owner))}"
                          "), which albert-tf writes and replaces whole; pass a path outside "
                          "it.")
    if os.path.lexists(final) and not overwrite:
        raise OutputError(f"{flag}={path} exists; pass a new path, or --overwrite to replace "
                          "it.")
    check_writable(os.path.dirname(final), flag=flag, path=path)
    return final


def _replaced_whole_output_above(path: str) -> str | None:
    """The nearest directory above ``path`` that is an albert-tf output of a kind replaced
    whole (not a run directory, which albert-tf writes into), or None."""
    runs = {same_kind(k) for k in RUN_KINDS.values()}
    parent = os.path.dirname(os.path.abspath(path))
    while parent != os.path.dirname(parent):
        if is_albert_tf_output(parent):
            return None if marker_kind(parent) in runs else parent
        parent = os.path.dirname(parent)
    return None


def write_text(path: str, text: str) -> None:
    """``text`` written beside ``path`` and renamed into place (never a half-written file;
    the umask's modes)."""
    parent, name = os.path.split(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    stage = os.path.join(parent, f".{name}.tmp-{secrets.token_hex(4)}")
    try:
        with open(stage, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(stage, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(stage)
        raise


def write_marker(directory: str, kind: str) -> None:
    """Writes `MARKER_FILE` into ``directory``: what wrote it and when."""
    from albert_tf.version import __version__
    record = {"writer": "albert-tf", "version": __version__, "kind": kind,
              "written": datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec="seconds")}
    with open(os.path.join(directory, MARKER_FILE), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def make_sibling(final: str, label: str) -> str:
    """Creates a new hidden directory ``.<name>.<label>-<random>`` beside ``final`` with the
    umask's modes (``os.mkdir``), creating the parent directories first."""
    parent, name = os.path.split(final)
    try:
        os.makedirs(parent, exist_ok=True)
        for _ in range(100):
            candidate = os.path.join(parent, f".{name}.{label}-{secrets.token_hex(4)}")
            try:
                os.mkdir(candidate)
                return candidate
            except FileExistsError:
                continue
    except OSError as e:
        raise OutputError(f"cannot write in {parent}: {e.strerror or e}.") from e
    raise OutputError(f"cannot create a staging directory in {parent}.")


def _swap_into_place(stage: str, final: str, flag: str, kind: str) -> None:
    """Renames ``stage`` to ``final``; an earlier albert-tf output of ``kind`` there is
    renamed aside first and removed after (an empty directory is simply replaced)."""
    if os.path.lexists(final) and not (os.path.isdir(final) and not os.path.islink(final)
                                       and (is_albert_tf_output(final)
                                            or not os.listdir(final))):
        raise OutputError(f"{flag}={final} changed while albert-tf was writing (it now holds "
                          "files albert-tf did not write); nothing was touched.")
    if os.path.lexists(final) and os.listdir(final):
        _check_same_kind(final, final, kind, flag)
    if not os.path.lexists(final) or not os.listdir(final):
        os.replace(stage, final)           # an empty directory is replaced by rename(2)
        return
    aside = make_sibling(final, "old")
    os.replace(final, os.path.join(aside, "previous"))
    try:
        os.replace(stage, final)
    except BaseException:
        os.replace(os.path.join(aside, "previous"), final)
        os.rmdir(aside)
        raise
    shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def staged_output(path: str, *, kind: str, inputs: Iterable[tuple[str, str | None]] = (),
                  overwrite: bool = False, flag: str = "--output") -> Iterator[str]:
    """Yields a new staging directory for the output ``path``; it becomes ``path`` when the
    block ends without an error (see the module docstring for the rules).

    Args:
      path: the output directory.
      kind: what is written (``"tflite export"``, ``"model directory"``...), recorded in
        the marker.
      inputs, overwrite, flag: as in `check_output`.
    """
    final = check_output(path, kind=kind, inputs=inputs, overwrite=overwrite, flag=flag)
    created = missing_parents(final)
    stage = make_sibling(final, "tmp")
    try:
        yield stage
        write_marker(stage, kind)
        _swap_into_place(stage, final, flag, kind)
    except BaseException as e:
        shutil.rmtree(stage, ignore_errors=True)
        for parent in created:             # deepest first; only while still empty
            with contextlib.suppress(OSError):
                os.rmdir(parent)
        problem = storage_problem(e)       # a full or read-only disk: the output named
        if problem:
            raise OutputError(f"{flag}={path}: {problem} (it was staged: nothing half-written "
                              "was left)") from None
        raise


def check_run_directory(path: str, *, kind: str,
                        writes: Iterable[tuple[str, str]] = (),
                        inputs: Iterable[tuple[str, str | None]] = (),
                        flag: str = "--model_dir") -> str:
    """The absolute path of the run directory ``path`` after the checks a run makes before
    any work, or an `OutputError`: `check_location` (which includes `check_writable`), then
    what is there: nothing, an empty directory, a run directory of ``kind`` (its marker,
    or for a run written before markers its checkpoints or model directories), never a
    directory of the user's or another kind of output; and each output ``(name, kind)``
    of ``writes`` the run replaces inside it (``best``, ``final``...), `check_output`'s
    rules with ``overwrite``.

    Args:
      path: the run directory as given.
      kind: one of `RUN_KINDS`' values.
      writes: ``(name, kind)`` of each output directory the run writes inside ``path``.
      inputs, flag: as in `check_output`.
    """
    inputs = list(inputs)
    final = check_location(path, inputs=inputs, flag=flag)
    owner = _replaced_whole_output_above(final)
    if owner:        # an export, a model directory...: the run would be lost with it
        raise OutputError(f"{flag}={path} lies inside {owner} "
                          f"({describe_kind(marker_kind(owner))}), which albert-tf replaces "
                          "whole; nothing was touched: pass a path outside it.")
    if os.path.islink(final) and not os.path.isdir(final):
        raise OutputError(f"{flag}={path} is a symbolic link to no directory; pass a new path.")
    if os.path.lexists(final) and not os.path.isdir(final):
        raise OutputError(f"{flag}={path} exists and is not a directory; pass a new path.")
    names = sorted(os.listdir(final)) if os.path.isdir(final) else []
    if names:
        if is_albert_tf_output(final):
            theirs = marker_kind(final)
            if theirs != same_kind(kind):
                raise OutputError(f"{flag}={path} is {describe_kind(theirs)}, not "
                                  f"{describe_kind(kind)}; nothing was touched: pass a new "
                                  f"{flag}.")
        elif not _earlier_run(final, kind):
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            raise OutputError(f"{flag}={path} holds files albert-tf did not write ({shown}); "
                              f"nothing was touched: pass a new or empty {flag}.")
    for name, output_kind in writes:
        check_output(os.path.join(final, name), kind=output_kind, inputs=inputs,
                     overwrite=True, flag=f"{flag}/{name}")
    return final


def _earlier_run(directory: str, kind: str) -> bool:
    """Whether ``directory`` (no marker) is a run of ``kind`` written before run directories
    had markers: training checkpoints, or a model directory albert-tf wrote (``best``,
    ``final``, ``model``), or for the pipeline its ``stages`` records, for the benchmark its
    results."""
    if same_kind(kind) == RUN_KINDS["albert-tf-run"]:
        return os.path.isdir(os.path.join(directory, "stages"))
    if same_kind(kind) == RUN_KINDS["albert-tf-benchmark"]:   # its results, or its exports
        return any(_benchmark_results(os.path.join(directory, name))
                   for name in ("results.json", "compressed.json")) \
            or _holds_outputs(os.path.join(directory, "artifacts"), depth=4)
    names = os.listdir(directory)
    if "checkpoint" in names or any(n.startswith("ckpt-") and n.endswith(".index")
                                    for n in names):
        return True
    return any(is_albert_tf_output(os.path.join(directory, n)) for n in ("best", "final", "model"))


def _holds_outputs(directory: str, depth: int) -> bool:
    """Whether an albert-tf output lies in ``directory``, at most ``depth`` levels down (the
    exports albert-tf-benchmark builds: ``artifacts/<model>/<target>/<shape>``)."""
    if depth < 0 or not os.path.isdir(directory) or os.path.islink(directory):
        return False
    if is_albert_tf_output(directory):
        return True
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(_holds_outputs(os.path.join(directory, n), depth - 1) for n in names)


def _benchmark_results(path: str) -> bool:
    """Whether ``path`` is the results file of an albert-tf-benchmark run (``meta.cpu``)."""
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and isinstance(record.get("meta"), dict) \
        and "cpu" in record["meta"]


@contextlib.contextmanager
def run_directory(directory: str, kind: str, own_files: Iterable[str] = ()) -> Iterator[str]:
    """`mark_run_directory` for the duration of a run; a run that fails in a directory it
    created, before writing anything but the marker and ``own_files`` (and empty folders),
    removes it again, so that a failed start leaves nothing behind."""
    created = not os.path.lexists(directory)
    mark_run_directory(directory, kind)
    try:
        yield directory
    except BaseException:
        if created:
            remove_if_unused(directory, own_files)
        raise


def remove_if_unused(directory: str, own_files: Iterable[str] = ()) -> None:
    """Removes ``directory`` when it holds nothing but the marker, ``own_files`` (names at
    its top) and empty folders."""
    keep = {MARKER_FILE, *own_files}
    for root, _, files in os.walk(directory):
        if any(root != directory or name not in keep for name in files):
            return
    shutil.rmtree(directory, ignore_errors=True)


def mark_run_directory(directory: str, kind: str) -> None:
    """Records ``kind`` in the run directory ``directory`` (created if needed) unless its
    marker already does; call after `check_run_directory`, when the run starts."""
    os.makedirs(directory, exist_ok=True)
    if marker_kind(directory) != same_kind(kind):
        write_marker(directory, kind)


def missing_parents(final: str) -> list[str]:
    """The parent directories of ``final`` that do not exist yet, deepest first."""
    missing = []
    parent = os.path.dirname(final)
    while parent and not os.path.lexists(parent) and parent != os.path.dirname(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


__all__ = ["CONVERTED_MODEL", "EXAMPLE_DATA", "HF_DIRECTORY", "KERAS_HUB_PRESET", "MARKER_FILE",
           "MODEL_DIRECTORY",
           "OutputError", "RUN_KINDS", "VOCABULARY", "check_base_directory", "check_location",
           "check_output",
           "check_output_file", "check_run_directory", "check_writable", "describe_kind", "export_kind",
           "is_albert_tf_output", "make_sibling", "mark_run_directory", "marker_kind",
           "missing_parents", "remove_if_unused", "run_directory", "same_kind",
           "staged_output", "storage_problem", "write_marker", "write_text"]
