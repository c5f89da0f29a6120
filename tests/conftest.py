"""Shared pytest fixtures: the real data directory and small configs."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.environ.get("ALBERT_TF_DATA", os.path.join(ROOT, "..", "shared", "data"))


@pytest.fixture(scope="session")
def data_dir() -> str:
    """``../shared/data`` (read-only real data); tests needing it fail loudly if absent."""
    if not os.path.isdir(DATA_DIR):
        pytest.fail(f"real data not found at {DATA_DIR}; tests read ../shared/data "
                    "(or set ALBERT_TF_DATA).")
    return DATA_DIR
