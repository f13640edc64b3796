"""The architecture's arrows point down only (README, "Architecture").

Every ``import rstreams.X`` / ``from rstreams.X import`` inside ``src/rstreams`` is read with
:mod:`ast` (function-level imports included) and checked against the layer order below: a
module may import its own layer and the layers above it in this list, never one below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rstreams"

LAYERS: list[set[str]] = [
    {"api", "errors", "demand", "rules"},
    {"flow"},
    {"tck"},
    {"wire"},
    {"net"},
    {"conformance"},
    {"replay"},
    {"web"},
    {"spark"},
    {"cli", "_cli_publishers", "__init__"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _layer_of(path: Path) -> str:
    part = path.relative_to(SRC).parts[0]
    return part.removesuffix(".py")


def _imported_layers(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "rstreams" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def test_every_top_level_package_has_a_layer() -> None:
    tops = {_layer_of(p) for p in SRC.rglob("*.py")}
    assert tops <= set(RANK), f"give these a layer in tests/test_layers.py: {sorted(tops - set(RANK))}"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down_only(path: Path) -> None:
    own = RANK[_layer_of(path)]
    upward = [
        f"line {line}: rstreams.{layer}"
        for line, layer in _imported_layers(path)
        if RANK.get(layer, len(LAYERS)) > own
    ]
    assert not upward, f"{path.relative_to(SRC)} imports a lower layer: {upward}"


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The reader finds an import inside a function, so a lazy upward import cannot hide."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rstreams.spark import register\n")
    assert _imported_layers(module) == [(2, "spark")]
