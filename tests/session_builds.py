"""Artifacts built once per pytest session and shared by every test module that builds
them the same way (and by both xdist workers of `make test`), e.g. `tests/sst2_tiny.py`'s
finetuned classifier.

`build_once` builds under the session's own base temporary directory (with xdist: the
directory the workers' ``popen-gwN`` directories share; never the user-wide
``pytest-of-USER``), one process at a time (an ``fcntl.flock``: one worker builds while
the other waits), into a staging sibling renamed into place, so that a half-built artifact
is never seen. The artifact is made read-only: a test that needs to change it works on
`writable_copy`.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
from collections.abc import Callable

import pytest

__all__ = ["build_once", "session_base", "writable_copy"]


def session_base(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This session's shared temporary directory: with xdist the parent of the worker's
    base temp (``pytest-N``, which both workers of one run share), else the base temp."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return str(base)


def build_once(tmp_path_factory: pytest.TempPathFactory, key: str, leaf: str,
               build: Callable[[str], object]) -> str:
    """The path ``<session base>/session_builds/<key>/<leaf>``, made by ``build(path)``
    the first time any process of this session asks for ``key`` (a builder must be
    deterministic: every caller of ``key`` gets the first one's artifact)."""
    root = os.path.join(session_base(tmp_path_factory), "session_builds")
    os.makedirs(root, exist_ok=True)
    done = os.path.join(root, key)
    with open(os.path.join(root, f"{key}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # released when the file is closed
        if not os.path.isdir(done):
            staging = os.path.join(root, f"{key}.building-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            os.makedirs(staging)
            build(os.path.join(staging, leaf))
            _read_only(staging)
            os.rename(staging, done)
    path = os.path.join(done, leaf)
    assert os.path.exists(path), f"{key}'s builder wrote no {leaf}"
    return path


def writable_copy(source: str, target: str) -> str:
    """A copy of a shared artifact that the caller may change."""
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for directory, _, files in os.walk(target):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    return target


def _read_only(top: str) -> None:
    """Files r--, directories r-x (bottom up), so that a test writing into a shared
    artifact fails instead of changing what the other modules read. pytest's clean-up
    of old base temps restores write permission before it removes them."""
    keep = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
    for directory, _, files in os.walk(top, topdown=False):
        for name in files:
            os.chmod(os.path.join(directory, name), keep)
        if directory != top:
            os.chmod(directory, keep | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
