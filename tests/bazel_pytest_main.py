"""The `main` of every Bazel py_test (BUILD, tools/update_build.py): runs pytest on the test
files given as arguments.

Bazel runs a py_test's main as a script from the runfiles tree (cwd: the workspace's
directory there); a pytest file has no `__main__`, so each py_test names this file as main and
its own test file in `args`. Bazel's test protocol is mapped onto pytest's: XML_OUTPUT_FILE
(JUnit XML), TESTBRIDGE_TEST_ONLY (`--test_filter`: a -k expression), TEST_TMPDIR (HOME, TMPDIR).
"""

import os
import sys


def _pytest_args(argv: list[str]) -> list[str]:
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + os.environ["XML_OUTPUT_FILE"])
    if os.environ.get("TESTBRIDGE_TEST_ONLY"):
        args += ["-k", os.environ["TESTBRIDGE_TEST_ONLY"]]
    return args + argv


def main() -> int:
    here = os.path.dirname(os.path.realpath(__file__))
    # Python puts the real (symlink-resolved) directory of the script first on sys.path: the
    # source tree's tests/, outside the runfiles. Modules must come from the runfiles only.
    if sys.path and os.path.realpath(sys.path[0]) == here:
        del sys.path[0]
    # The virtualenv's editable install of the checkout (`pip install -e .`: a finder on
    # sys.meta_path mapping albert_tf, albert_tf.official_configs and albert_tflite to the
    # source tree it was installed from) would supply any module the runfiles lack; without
    # it a missing BUILD dep fails the test instead.
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "__module__", "").startswith("__editable__")]
    tmp = os.environ.get("TEST_TMPDIR")
    if tmp:
        # Bazel's test-setup.sh leaves HOME unset (and / is read-only in the sandbox).
        os.environ.setdefault("HOME", tmp)
        os.environ.setdefault("TMPDIR", tmp)
    # The tests read ../shared/data beside the checkout unless ALBERT_TF_DATA_DIR names it
    # (tests/conftest.py); beside the checkout means beside the source tree, not the runfiles.
    os.environ.setdefault("ALBERT_TF_DATA_DIR",
                          os.path.join(os.path.dirname(os.path.dirname(here)), "shared", "data"))
    import pytest

    args = _pytest_args(sys.argv[1:])
    status = pytest.main(args)
    _report_modules_outside_runfiles()
    if status == pytest.ExitCode.NO_TESTS_COLLECTED and ("-m" in args or "-k" in args):
        print("bazel_pytest_main: every test of the file was deselected (-m / -k): passed")
        return 0
    return status


def _report_modules_outside_runfiles() -> None:
    """Names the project modules the test imported from outside its runfiles: BUILD deps the
    generator missed, which the virtualenv's editable install of the checkout (its finder
    maps albert_tf, albert_tf.official_configs and albert_tflite to the source tree) hid."""
    runfiles = os.environ.get("RUNFILES_DIR", os.getcwd())
    roots = tuple({os.path.abspath(runfiles) + os.sep, os.path.realpath(runfiles) + os.sep})
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}
    outside = sorted(
        f"{name} ({os.path.realpath(m.__file__)})" for name, m in list(sys.modules.items())
        if getattr(m, "__file__", None) and name.split(".")[0] in ("albert_tf", "albert_tflite", "tests")
        and not os.path.abspath(m.__file__).startswith(roots)
        and not any(os.path.realpath(m.__file__).startswith(p + os.sep) for p in prefixes))
    if outside:
        print("bazel_pytest_main: modules imported from outside the runfiles (missing BUILD "
              "deps?):\n  " + "\n  ".join(outside), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
