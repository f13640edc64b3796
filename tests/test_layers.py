"""The architecture's arrows point down only (README, "Architecture").

Every import of rstreams inside ``src/rstreams`` is read with :mod:`ast` (function-level and
``TYPE_CHECKING`` imports included) and checked against :data:`ALLOWED`, a map of which
package may import which. ``from rstreams import X`` is resolved to the module that defines
``X`` (a submodule, or the module the root package re-exports it from), so the short form
cannot hide an edge. The README's architecture section shows the same map; a test keeps the
two equal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from testkit.imports import find_cycle, import_graph

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "rstreams"

BASE = frozenset({"api", "errors", "demand", "rules", "_exports"})

# package -> the packages it may import (besides itself). flow, tck and wire are siblings on
# the base: none of them may import another.
ALLOWED: dict[str, frozenset[str]] = {
    "api": frozenset(),
    "errors": frozenset(),
    "rules": frozenset(),
    "_exports": frozenset(),
    "_pem": frozenset(),
    "_schedstat": frozenset(),
    "demand": frozenset({"api", "errors"}),
    "flow": BASE,
    "tck": BASE | {"_schedstat"},
    "wire": BASE,
    "observe": BASE | {"flow", "wire"},
    "net": BASE | {"flow", "wire", "observe"},
    "conformance": BASE | {"wire", "net", "_schedstat", "_pem"},
    "replay": BASE | {"flow", "net", "observe", "_pem"},
    "web": BASE | {"net", "observe", "replay"},
    "spark": BASE | {"flow", "net", "observe", "replay", "web"},
    "_cli_common": BASE | {"net", "observe", "_pem"},
    "_cli_publishers": BASE | {"flow", "net"},
    "_cli_observe": BASE | {"net", "observe", "replay", "_cli_common"},
    "_cli_logs": BASE | {"net", "replay", "web", "_cli_common", "_cli_observe"},
    "cli": BASE
    | {
        "net",
        "observe",
        "conformance",
        "spark",
        "_cli_common",
        "_cli_publishers",
        "_cli_observe",
        "_cli_logs",
    },
    "__init__": BASE | {"flow", "net"},
    "__main__": frozenset({"cli"}),
}


def _package_of(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def _root_reexports() -> dict[str, str]:
    """Name -> the module the root package takes it from (eager imports and the lazy table)."""
    tree = ast.parse((SRC / "__init__.py").read_text())
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rstreams."):
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple):
                    module = value.elts[0]
                    if isinstance(module, ast.Constant) and isinstance(module.value, str):
                        found[str(key.value)] = module.value
    return found


REEXPORTS = _root_reexports()


def _resolve(module: str, name: str | None) -> str | None:
    """The rstreams package an import reaches, or None for a non-rstreams import."""
    parts = module.split(".")
    if parts[0] != "rstreams":
        return None
    if len(parts) > 1:
        return parts[1]
    assert name is not None
    if (SRC / name).is_dir() or (SRC / f"{name}.py").is_file():
        return name
    target = REEXPORTS.get(name)
    assert target is not None, f"`from rstreams import {name}`: the root package does not export {name}"
    return target.split(".")[1]


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, package) for every rstreams import in ``path``, wherever it sits in the file."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets: list[str | None] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "rstreams":
                targets = [_resolve("rstreams", alias.name) for alias in node.names]
            else:
                targets = [_resolve(node.module, None)]
        elif isinstance(node, ast.Import):
            targets = [_resolve(alias.name, None) if "." in alias.name else None for alias in node.names]
        found.extend((node.lineno, t) for t in targets if t is not None)
    return found


def test_every_top_level_package_has_an_entry() -> None:
    """A new package or top-level module must be placed in the map before it can land."""
    tops = {_package_of(p) for p in SRC.rglob("*.py")}
    assert tops <= set(ALLOWED), f"give these an entry in tests/test_layers.py: {sorted(tops - set(ALLOWED))}"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_follow_the_allowed_edges(path: Path) -> None:
    """Each module imports only its own package and the packages the map allows."""
    own = _package_of(path)
    allowed = ALLOWED[own] | {own}
    wrong = [f"line {line}: rstreams.{pkg}" for line, pkg in imported_packages(path) if pkg not in allowed]
    assert not wrong, f"{path.relative_to(SRC)} ({own}) may not import: {wrong}"


def test_the_map_has_no_cycle() -> None:
    """The allowed edges form layers: following them never comes back to where it started."""
    order: list[str] = []
    pending = dict(ALLOWED)
    while pending:
        ready = sorted(p for p, deps in pending.items() if deps <= set(order))
        assert ready, f"a cycle among {sorted(pending)}"
        order.extend(ready)
        for p in ready:
            del pending[p]


PACKAGES = sorted({path.parent for path in SRC.rglob("__init__.py")})
"""Every package directory of rstreams (the root, net, wire, observe, conformance/cases, ...)."""


@pytest.mark.parametrize("directory", PACKAGES, ids=lambda d: str(d.relative_to(SRC.parent)))
def test_no_import_cycles_inside_a_package(directory: Path) -> None:
    """Within one package no module imports one that imports it back, not even under
    TYPE_CHECKING (a type the lower module needs is a Protocol it defines itself)."""
    package = ".".join(directory.relative_to(SRC.parent).parts)
    graph = import_graph(directory, package)
    if package == "rstreams":  # the root's lazy re-exports (PEP 562) name every subpackage
        graph.pop("rstreams", None)
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_package_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    """The check above can fail: two modules of one package that import each other."""
    (tmp_path / "a.py").write_text("if TYPE_CHECKING:\n    from pkg.b import B\n")
    (tmp_path / "b.py").write_text("from pkg.a import A\n")
    assert find_cycle(import_graph(tmp_path, "pkg")) == ["pkg.a", "pkg.b", "pkg.a"]


def test_readme_shows_the_same_map() -> None:
    """The README's architecture section lists exactly this map (one line per package)."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- layers -->\n```\n(.*?)```", text, re.S)
    assert block, "README.md: the architecture section lost its <!-- layers --> block"
    shown: dict[str, frozenset[str]] = {}
    for line in block.group(1).splitlines()[1:]:
        name, _, deps = line.partition(" ")
        shown[name] = frozenset(d for d in deps.split() if d != "-")
    assert shown == ALLOWED


def test_the_check_sees_a_violation(tmp_path: Path) -> None:
    """The reader finds an import inside a function, so a lazy upward import cannot hide."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rstreams.spark import register\n")
    assert imported_packages(module) == [(2, "spark")]


def test_the_short_form_resolves_to_the_defining_package(tmp_path: Path) -> None:
    """`from rstreams import connect` counts as an import of net, `import demand` as demand."""
    module = tmp_path / "m.py"
    module.write_text("from rstreams import connect, demand, Flow\n")
    assert imported_packages(module) == [(1, "net"), (1, "demand"), (1, "flow")]
