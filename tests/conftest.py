"""Shared pytest fixtures: the real data directory and small configs."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The binaries the tests start (and the xdist workers) write the bytecode they compile into
# .venv: with PYTHONDONTWRITEBYTECODE (set in some CI images) and the venv installed
# --no-compile, each of them would compile TensorFlow again (~10 CPU-s each; Makefile).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The tests (like `make main`) read ../shared/data beside the checkout unless
# ALBERT_TF_DATA_DIR names another copy; exported so that the binaries the tests run
# as subprocesses find it the way a user's shell would give it to them.
DATA_DIR = os.path.abspath(os.environ.get("ALBERT_TF_DATA_DIR")
                           or os.path.join(ROOT, "..", "shared", "data"))
os.environ["ALBERT_TF_DATA_DIR"] = DATA_DIR
# Latencies albert-tf-compress --target_speedup times are cached in ~/.cache/albert-tf; the
# tests (and the binaries they start) keep theirs in a directory of their own, removed at exit.
if "ALBERT_TF_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ["ALBERT_TF_CACHE_DIR"] = tempfile.mkdtemp(prefix="albert-tf-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ALBERT_TF_CACHE_DIR"], True)


@pytest.fixture(scope="session")
def data_dir() -> str:
    """``../shared/data`` (read-only real data); tests needing it fail loudly if absent."""
    if not os.path.isdir(DATA_DIR):
        pytest.fail(f"real data not found at {DATA_DIR}; the tests read ../shared/data "
                    "beside the checkout (or set ALBERT_TF_DATA_DIR).")
    return DATA_DIR


# Property-based fuzzing (hypothesis; tests/test_fuzz_*.py). Profile "ci" (the default,
# `make test`): 1,000 examples per entry point unless a test lowers it, derandomized so
# that CI is not flaky (the same examples every run), no example database written into
# the checkout. Profile "fuzz" (`make fuzz`): 20x the examples, random each run.
# Choose one with ALBERT_TF_FUZZ_PROFILE=ci|fuzz.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the package's own tests run without it; the fuzz tests import it
    settings = None
if settings is not None:
    _SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large,
                HealthCheck.function_scoped_fixture]
    settings.register_profile("ci", max_examples=1000, derandomize=True, deadline=None,
                              database=None, print_blob=True, suppress_health_check=_SLOW_OK)
    settings.register_profile("fuzz", max_examples=20_000, deadline=None, database=None,
                              print_blob=True, suppress_health_check=_SLOW_OK)
    settings.load_profile(os.environ.get("ALBERT_TF_FUZZ_PROFILE", "ci"))


# Two tiers (docs/setup.md#the-test-tiers). Tests marked `slow` (over ~5 CPU-s each on the
# 2-core CI machines: training runs, exports of every format, the mobile SDKs, the peers'
# benchmarks, the command tables that start dozens of processes) form the second tier:
# `make test` (CI's `.ci/run`) runs the rest, `make test-all` (`.ci/run full`) all of them.
# `make test-cpu` measures every test and lists the unmarked ones over the limit.
SLOW_MARKER = ("slow: the second tier, left out of `make test` (CI's gate) and run by "
               "`make test-all` (docs/setup.md#the-test-tiers)")

# Test-file order: costliest first. `make test` runs `-n 2 --dist=loadfile`, and xdist
# hands out whole files in collection order, so a long file that starts last makes a
# long tail while the other worker idles. tests/file_costs.json (for each tier, file ->
# seconds of its tests in that tier, from `make test-cpu`: tools/test_costs.py) sets the
# order; files not in it go last, in alphabetical order. Tests within a file keep their
# order. The table only steers the order: a stale one costs time, never a test.
COSTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_costs.json")


def _file_costs(tier: str) -> dict[str, float]:
    import json

    try:
        with open(COSTS_FILE, encoding="utf-8") as handle:
            return {os.path.normpath(os.path.join(ROOT, path)): float(seconds)
                    for path, seconds in json.load(handle)[tier].items()}
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        return {}


def pytest_configure(config):
    config.addinivalue_line("markers", SLOW_MARKER)
    # xdist (3.x) by default reorders --dist=loadfile/loadscope work units by their
    # number of tests, which would ignore the cost order below.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)  # after `-m` has deselected: order what runs
def pytest_collection_modifyitems(session, config, items):
    tier = "all" if any(item.get_closest_marker("slow") for item in items) else "gate"
    costs = _file_costs(tier)
    if not costs:
        return

    def key(item):
        path = os.path.normpath(str(item.path))
        cost = costs.get(path)
        return (0, -cost, path) if cost is not None else (1, 0.0, path)

    items.sort(key=key)  # stable: within a file the order is unchanged


# CPU accounting (`make test-cpu`): with ALBERT_TF_TEST_CPU=DIR each xdist worker writes
# DIR/<worker>.jsonl, one line per test phase: wall seconds, the worker's own CPU seconds and
# its finished subprocesses' CPU seconds (the binaries the tests start). Off by default.
_CPU_DIR = os.environ.get("ALBERT_TF_TEST_CPU")
if _CPU_DIR:
    import json as _json
    import resource as _resource
    import time as _time

    def _cpu_now() -> tuple[float, float, float]:
        children = _resource.getrusage(_resource.RUSAGE_CHILDREN)
        return (_time.perf_counter(), _time.process_time(),
                children.ru_utime + children.ru_stime)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        before = _cpu_now()
        yield
        after = _cpu_now()
        os.makedirs(_CPU_DIR, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(_CPU_DIR, f"{worker}.jsonl"), "a", encoding="utf-8") as out:
            out.write(_json.dumps({"test": item.nodeid,
                                   "wall": round(after[0] - before[0], 3),
                                   "self_cpu": round(after[1] - before[1], 3),
                                   "child_cpu": round(after[2] - before[2], 3),
                                   "slow": item.get_closest_marker("slow") is not None})
                      + "\n")
