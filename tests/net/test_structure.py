"""The shape of rstreams.net: no import cycles, no reaching into other modules' private names or
beneath the transport seam (README, "Architecture")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from testkit.imports import find_cycle, import_graph

NET = Path(__file__).resolve().parents[2] / "src" / "rstreams" / "net"
MODULES = sorted(NET.glob("*.py"))

pytestmark = pytest.mark.timeout(60)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every ``rstreams`` import in ``path`` (TYPE_CHECKING blocks and functions included):
    (line, module, names imported from it)."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("rstreams"):
                found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("rstreams")]
    return found


def test_no_import_cycles_in_net() -> None:
    """No module of rstreams.net imports one that imports it back, not even under TYPE_CHECKING."""
    cycle = find_cycle(import_graph(NET, "rstreams.net"))
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_private_names_of_other_modules(path: Path) -> None:
    """``from rstreams.x import _name`` reaches into another module's privates: not in net."""
    private = [
        f"line {line}: {module}.{name}"
        for line, module, names in _imports(path)
        for name in names
        if name.startswith("_")
    ]
    assert not private, f"{path.name} imports private names: {private}"


BENEATH_THE_SEAM = re.compile(
    r"\._ready\b|_get_running_loop|getattr\(\s*(type\()?transport|type\((transport|loop)\)"
    r"|asyncio\.(WriteTransport|BaseEventLoop)\."
)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_nothing_reaches_beneath_the_transport_seam_or_into_asyncio(path: Path) -> None:
    """Transports are used through rstreams.net._transport.Transport only; asyncio through its API."""
    hits = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if BENEATH_THE_SEAM.search(line)
    ]
    assert not hits, f"{path.name}: {hits}"


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path: Path) -> None:
    """The readers are not blind: a cycle through TYPE_CHECKING and a private import are found."""
    a, b = tmp_path / "_a.py", tmp_path / "_b.py"
    a.write_text("from rstreams.net._b import thing\n")
    b.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rstreams.net._a import _hidden\n"
    )
    cycle = find_cycle(import_graph(tmp_path, "rstreams.net"))
    assert cycle == ["rstreams.net._a", "rstreams.net._b", "rstreams.net._a"]
    assert _imports(b) == [(3, "rstreams.net._a", ["_hidden"])]


@pytest.mark.parametrize(
    "line",
    [
        "if type(transport).writelines is asyncio.WriteTransport.writelines:",
        'eof = getattr(transport, "can_write_eof", None)',
        "ready = loop._ready",
        "loop = asyncio._get_running_loop()",
        "clock = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time",
    ],
)
def test_the_seam_check_sees_a_reach(line: str) -> None:
    """The seam check is not blind: each way of reaching beneath it that net/ once had is found."""
    assert BENEATH_THE_SEAM.search(line)
