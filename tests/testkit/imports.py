"""The import graph of one rstreams package, and a cycle finder: the structure tests of net/
and flow/ (tests/net/test_structure.py, tests/flow/test_structure.py) read their package with it."""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["find_cycle", "import_graph", "package_imports", "without_package"]


def package_imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports anywhere: at the top, inside functions,
    under TYPE_CHECKING (``from package import _x`` counts as ``package._x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == package:
                found |= {f"{package}.{alias.name}" for alias in node.names}
            elif node.module.startswith(package + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(package + ".")}
    return found


def import_graph(directory: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` (whose files are ``directory``/*.py) it imports."""
    return {
        package if path.stem == "__init__" else f"{package}.{path.stem}": package_imports(path, package)
        for path in sorted(directory.glob("*.py"))
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph`` (a path that ends where it starts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def without_package(package: str) -> str:
    """Python source to begin a child interpreter's script with (``python -c``): from there on,
    importing ``package`` or a module of it fails with ModuleNotFoundError, as when it is not
    installed (the tests of the errors that name a missing extra run it)."""
    return (
        "import importlib.abc, sys\n"
        "class _Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        f"        if name.partition('.')[0] == {package!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Missing())\n"
    )
