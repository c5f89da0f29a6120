"""Shared pytest fixtures: the real data directory and small configs."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The tests (like `make main`) read ../shared/data beside the checkout unless
# ALBERT_TF_DATA_DIR names another copy; exported so that the binaries the tests run
# as subprocesses find it the way a user's shell would give it to them.
DATA_DIR = os.path.abspath(os.environ.get("ALBERT_TF_DATA_DIR")
                           or os.path.join(ROOT, "..", "shared", "data"))
os.environ["ALBERT_TF_DATA_DIR"] = DATA_DIR


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

