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

Shapes of the rules, as a table: docs/robustness.md ("Output directories").
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import shutil
from typing import Iterable, Iterator

MARKER_FILE = ".albert-tf-output.json"


class OutputError(ValueError):
    """An output path albert-tf refuses to write; the message names the path and the fix."""


def is_albert_tf_output(directory: str) -> bool:
    """Whether ``directory`` holds the marker albert-tf writes into its outputs."""
    return os.path.isfile(os.path.join(directory, MARKER_FILE))


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


def check_output(path: str, *, inputs: Iterable[tuple[str, str | None]] = (),
                 overwrite: bool = False, flag: str = "--output") -> str:
    """The absolute path albert-tf may write ``path`` as, or an `OutputError` saying why not.

    Args:
      path: the output directory as the user gave it (``~`` is expanded).
      inputs: ``(flag, path)`` of each input of the command (None paths are skipped).
      overwrite: whether an earlier albert-tf output at ``path`` may be replaced.
      flag: the flag ``path`` came from, for the message.
    """
    final = check_location(path, inputs=inputs, flag=flag)
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
            if not overwrite:
                raise OutputError(f"{flag}={path} already exists (an earlier albert-tf output); "
                                  "pass --overwrite to replace it.")
    return final


def check_location(path: str, *, inputs: Iterable[tuple[str, str | None]] = (),
                   flag: str = "--output") -> str:
    """The absolute form of ``path`` after the checks of `check_output` that do not depend
    on what is there: not empty, not ``/``, ``~``, the current
    directory or above it, no clash with an input. For a directory albert-tf writes inside
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
    return final


def write_marker(directory: str, kind: str) -> None:
    """Writes `MARKER_FILE` into ``directory``: what wrote it and when."""
    from albert_tf import __version__
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


def _swap_into_place(stage: str, final: str, flag: str) -> None:
    """Renames ``stage`` to ``final``; an earlier albert-tf output there is renamed aside
    first and removed after (an empty directory is simply replaced)."""
    if os.path.lexists(final) and not (os.path.isdir(final) and not os.path.islink(final)
                                       and (is_albert_tf_output(final)
                                            or not os.listdir(final))):
        raise OutputError(f"{flag}={final} changed while albert-tf was writing (it now holds "
                          "files albert-tf did not write); nothing was touched.")
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
    final = check_output(path, inputs=inputs, overwrite=overwrite, flag=flag)
    created = missing_parents(final)
    stage = make_sibling(final, "tmp")
    try:
        yield stage
        write_marker(stage, kind)
        _swap_into_place(stage, final, flag)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for parent in created:             # deepest first; only while still empty
            with contextlib.suppress(OSError):
                os.rmdir(parent)
        raise


def missing_parents(final: str) -> list[str]:
    """The parent directories of ``final`` that do not exist yet, deepest first."""
    missing = []
    parent = os.path.dirname(final)
    while parent and not os.path.lexists(parent) and parent != os.path.dirname(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


__all__ = ["MARKER_FILE", "OutputError", "check_location", "check_output", "is_albert_tf_output",
           "make_sibling", "missing_parents", "staged_output", "write_marker"]
