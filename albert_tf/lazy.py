"""Lazy public names for a package's ``__init__`` (PEP 562): each name is imported from
its module on first use, so importing the package stays cheap and TensorFlow-free.

    _EXPORTS = {"export_tflite": "albert_tf.export.tflite", ...}
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name of ``exports`` (name -> module) is
    imported on first access and cached in ``namespace`` (the package's globals)."""

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
