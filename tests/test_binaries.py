"""Every command-line binary: importable together, and its flags parse.

Binaries define their absl flags in ``define_flags()`` (called by ``run()``), not at import:
absl has one flag registry per process, so a module-level definition in two binaries
(``--model_dir``, ``--data_dir``...) breaks any program or test that imports both.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARIES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "albert_tf", "bin"))
                  if name.endswith(".py") and name != "__init__.py")
# Binaries that wrap another tool's command line: its flags are the tool's own, defined by
# the tool's module when the wrapper imports it at run time (never at our import).
WRAPPERS = {"saved_model_cli": "tensorflow.python.tools.saved_model_cli"}


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_importing_every_binary_defines_no_flag():
    modules = ", ".join(f"albert_tf.bin.{name}" for name in BINARIES)
    result = _python(
        "from absl import flags\n"
        "before = set(flags.FLAGS)\n"
        f"import {modules}\n"
        "print(sorted(f for f in set(flags.FLAGS) - before\n"
        "             if flags.FLAGS.find_module_defining_flag(f, '').startswith('albert_tf')))\n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]", f"flags defined at import: {result.stdout}"


def test_wrappers_are_binaries():
    assert set(WRAPPERS) <= set(BINARIES)


@pytest.mark.parametrize("name", [b for b in BINARIES if b not in WRAPPERS])
def test_each_binary_defines_its_flags_once(name):
    result = _python(
        "from absl import flags\n"
        f"from albert_tf.bin import {name} as binary\n"
        "binary.define_flags()\n"
        "ours = [f for f in flags.FLAGS if flags.FLAGS[f].help and "
        "flags.FLAGS.find_module_defining_flag(f, None) == binary.__name__]\n"
        "print(len(ours))\n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.strip().splitlines()[-1]) > 0
