"""The shape of rstreams.flow: no import cycles, and Flow on top of the operators (README,
"Architecture"): the operators are plain Publishers that do not know Flow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from testkit.imports import find_cycle, import_graph, package_imports

FLOW = Path(__file__).resolve().parents[2] / "src" / "rstreams" / "flow"
MODULES = sorted(FLOW.glob("*.py"))
TOP = {"rstreams.flow._flow", "rstreams.flow._public"}
"""The modules that know Flow: Flow itself, and the public functions and classes that make Flows."""

pytestmark = pytest.mark.timeout(60)


def _imports(path: Path) -> set[str]:
    return package_imports(path, "rstreams.flow")


def _graph() -> dict[str, set[str]]:
    return import_graph(FLOW, "rstreams.flow")


_cycle = find_cycle


def test_the_cycle_finder_finds_cycles() -> None:
    """The check below can fail: a two-module and a three-module circle are found."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_walk_sees_function_level_imports(tmp_path: Path) -> None:
    """An import inside a function counts like one at the top."""
    module = tmp_path / "_m.py"
    module.write_text("def f():\n    from rstreams.flow._map import MapFlow\n    return MapFlow\n")
    assert _imports(module) == {"rstreams.flow._map"}


def test_no_import_cycles_in_flow() -> None:
    """No module of rstreams.flow imports one that imports it back, wherever the import is."""
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_only_the_top_knows_flow() -> None:
    """Operators and sources never import the Flow module (or what stands above it)."""
    knowing = {
        module: sorted(imported & TOP)
        for module, imported in _graph().items()
        if module not in TOP and imported & TOP
    }
    assert knowing == {}


def test_no_imports_inside_functions() -> None:
    """Every rstreams import in flow/ is at module level (TYPE_CHECKING blocks are module level too)."""
    inside = []
    for path in MODULES:
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                if any(name.startswith("rstreams") for name in names):
                    inside.append(f"{path.name}:{node.lineno}")
    assert inside == []
