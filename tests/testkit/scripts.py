"""The repository's scripts (examples/, fuzz/, docs/'s generators) as modules, for the tests that
run them: none of those folders is a package, so each file is executed from its path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["ROOT", "load_script"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root (tests/ and examples/ sit in it)."""


def load_script(relative: str, name: str | None = None) -> ModuleType:
    """``ROOT/relative`` executed as a fresh module named ``name`` (its file's stem by default),
    filed in ``sys.modules`` under that name first, as an import would: dataclasses, pickling
    and the scripts' imports of one another look it up there."""
    path = ROOT / relative
    module_name = path.stem if name is None else name
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None, f"{path} is not a Python file"
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
