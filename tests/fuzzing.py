"""Shared by the property-based fuzz tests (tests/test_fuzz_*.py); profiles in conftest.py."""

from __future__ import annotations

import os


def fuzz_examples(ci_examples: int) -> int:
    """``max_examples`` for a fuzz test whose CI profile is ``ci_examples`` (>= 1,000 per
    entry point across its tests): scaled 20x under ``make fuzz``."""
    scale = 20 if os.environ.get("ALBERT_TF_FUZZ_PROFILE") == "fuzz" else 1
    return ci_examples * scale
