"""mypy's configuration: strict over src, tests and fuzz, one answer with or without the optional extras.

An optional extra that mypy follows when it is installed types its callers differently from a
machine without it (real types there, import-not-found or Any here), so every extra's modules
are skipped (typed as Any) on every machine. scripts/test.sh runs mypy itself.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(10)

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MYPY: dict[str, Any] = PYPROJECT["tool"]["mypy"]

IMPORT_NAMES = {"opentelemetry_api": "opentelemetry"}
"""Distributions whose import name differs from their name."""


def extra_modules() -> set[str]:
    """The top-level import names of every requirement in [project.optional-dependencies]."""
    names = set()
    for requirements in PYPROJECT["project"]["optional-dependencies"].values():
        for requirement in requirements:
            distribution = re.match(r"[A-Za-z0-9_.-]+", requirement)
            assert distribution is not None, requirement
            name = distribution.group().lower().replace("-", "_")
            names.add(IMPORT_NAMES.get(name, name))
    return names


def skipped_modules() -> set[str]:
    skipped: set[str] = set()
    for override in MYPY.get("overrides", []):
        skips = override.get("follow_imports") == "skip" and override.get("follow_imports_for_stubs")
        if skips and override.get("ignore_missing_imports"):
            modules = override["module"]
            skipped.update([modules] if isinstance(modules, str) else modules)
    return skipped


def test_mypy_is_strict_over_src_tests_and_fuzz() -> None:
    assert MYPY["strict"] is True and MYPY["warn_unreachable"] is True
    assert set(MYPY["files"]) == {"src/rstreams", "tests", "fuzz"}
    assert "tests" in MYPY["mypy_path"]  # `import testkit`, as pytest's pythonpath makes it
    assert "fuzz" in MYPY["mypy_path"]  # the drivers import each other (`import fuzz_net`)


def test_atheris_is_typed_the_same_installed_or_not() -> None:
    """fuzz/fuzz_connection.py imports atheris, which is installed by hand, when it runs under it."""
    assert {"atheris", "atheris.*"} <= skipped_modules()


def test_every_optional_extra_is_typed_the_same_installed_or_not() -> None:
    skipped = skipped_modules()
    missing = sorted(name for name in extra_modules() if not {name, f"{name}.*"} <= skipped)
    assert missing == [], (
        f"add {missing} (the module and its submodules) to the mypy override with "
        'follow_imports = "skip", follow_imports_for_stubs and ignore_missing_imports in pyproject.toml'
    )


def test_the_extras_are_read_from_pyproject() -> None:
    """The check above is not vacuous: it sees the extras rstreams declares today."""
    declared = {"websockets", "uvloop", "reactivex", "msgpack", "pyspark", "pyarrow", "pandas"}
    declared |= {"prometheus_client", "opentelemetry"}
    assert declared <= extra_modules()
