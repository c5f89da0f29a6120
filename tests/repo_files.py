"""What several tests read beside the package: a repository script loaded as a module
(`load_script`; tools/tour.py: `load_tour`), and the first whole documents of the shared
IMDB corpus (`imdb_head`)."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_script(relative_path: str, name: str | None = None) -> ModuleType:
    """The script at ``ROOT/relative_path`` (``examples/...``) as a module, without
    installing or importing it as a package. Never a ``studies/`` script: those drive
    package code, which the tests import."""
    name = name or os.path.splitext(os.path.basename(relative_path))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_tour() -> ModuleType:
    """tools/tour.py as a module, loaded once (registered in ``sys.modules`` first: its
    dataclasses look it up)."""
    if "tour_script" not in sys.modules:
        spec = importlib.util.spec_from_file_location("tour_script",
                                                      os.path.join(ROOT, "tools", "tour.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["tour_script"]


def imdb_head(data_dir: str, n_bytes: int) -> bytes:
    """The first whole documents within ``n_bytes`` of ``corpus/imdb-unsup.txt``."""
    with open(os.path.join(data_dir, "corpus", "imdb-unsup.txt"), "rb") as f:
        data = f.read(n_bytes)
    return data[: data.rfind(b"\n\n") + 2]
