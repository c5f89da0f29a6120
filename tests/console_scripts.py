"""The installed console scripts run as a user runs them, for the command-line tests
(`tests/test_cli.py`, `tests/test_command_failures.py`): from a directory outside the
repository, without ``ALBERT_TF_DATA_DIR`` unless a test sets it.

Each process that imports TensorFlow takes ~5-10 s: start several, then finish them.
"""

from __future__ import annotations

import os
import subprocess
import sys

BIN = os.path.dirname(sys.executable)       # the virtualenv's bin/ (pip install -e .)
NOISE = ("onednn", "cuda", "absl", "cpu_feature_guard", "traceback")


def env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no data directory, default verbosity."""
    environment = dict(os.environ)
    for name in ("ALBERT_TF_DATA_DIR", "ALBERT_TF_VERBOSE", "TF_CPP_MIN_LOG_LEVEL"):
        environment.pop(name, None)
    environment.update(extra)
    return environment


def path(script: str) -> str:
    """The installed console script ``script`` (a test failure when it is not installed)."""
    found = os.path.join(BIN, script)
    if not os.path.exists(found):
        import pytest
        pytest.fail(f"console script {script} is not installed in {BIN} (pip install -e .)")
    return found


def start(cwd, script: str, *args: str, **extra_env: str) -> subprocess.Popen:
    """Starts ``script args`` in ``cwd`` (stdout and stderr captured as text)."""
    return subprocess.Popen([path(script), *args], cwd=cwd, env=env(**extra_env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of a started script."""
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def one_error_line(err: str) -> str:
    """The one non-empty line of ``err`` (an assertion error otherwise, or with noise)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{err}"
    assert not any(word in lines[0].lower() for word in NOISE if word != "absl"), lines[0]
    return lines[0]
