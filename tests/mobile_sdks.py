"""The mobile SDKs' Python builds for tests: `sdk_python` (``.venv-sdk``, built by
``make sdk``; ``make test-all`` builds it first: the tests that run an SDK are in the slow
tier) and `answers` (`albert_tflite.sdk_check`)."""

from __future__ import annotations

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sdk_python() -> str:
    """The SDK environment's interpreter; the test is skipped (naming the fix) without it."""
    from albert_tflite.sdk_check import default_python
    python = default_python(ROOT)
    if not os.path.exists(python):
        pytest.skip(f"the mobile SDK environment is missing ({python}): `make sdk` builds it "
                    "(`make test-all` does first).")
    return python


def answers(model: str, task: str, sdk: str, items: list) -> list[dict]:
    """The SDK's answers for ``items`` (`albert_tflite.sdk_check.call`)."""
    from albert_tflite import sdk_check
    return sdk_check.call(sdk_python(), model, task, sdk, items)
