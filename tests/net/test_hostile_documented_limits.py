"""docs/security.md lists every limit and timeout with the code's default and the code's text.

The section "Limits against hostile or broken peers" is read as data: each table row names a
setting, where it is set and its default; each quoted goodbye or onError text must be one the
source can produce. A default changed in the code, a limit added without a row, or a message
reworded fails here, so the page cannot drift from the code.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rstreams
import rstreams.net
from rstreams.net import Resume, connect, serve
from rstreams.wire import ConnectionConfig

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"
SECTION = "## Limits against hostile or broken peers"
KiB, MiB = 1024, 1024 * 1024

BYTES = {
    "max_element_size",
    "max_string_length",
    "max_metadata_bytes",
    "max_name_length",
    "max_reassembly_bytes",
    "split_threshold",
    "buffer_bytes",
    "high_water",
    "low_water",
    "LINGER_BYTES",
    "MAX_MESSAGE",
    "MAX_UNSENT",
    "READ_TURN",
    "HELD_PART",
    "UNREAD_MARK",
}
SECONDS = re.compile(r"timeout|keepalive|backoff|delay|SECONDS|TIMEOUT|POLL", re.IGNORECASE)
FUNCTIONS: dict[str, Callable[..., Any]] = {"serve()": serve, "connect()": connect}
CLASSES: dict[str, type] = {"ConnectionConfig": ConnectionConfig, "Resume": Resume}


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def rows() -> list[list[str]]:
    """Every table row of the section whose first cell is a setting in backticks."""
    lines = [line for line in section().splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]


def places(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell) or [cell.split()[0]]


def shown(setting: str, value: object) -> str:
    """How the page writes a default: ``off``, ``10 s``, ``16 MiB``, ``1,024``."""
    if value is None:
        return "off"
    assert isinstance(value, int | float)
    if setting in BYTES:
        for unit, size in (("MiB", MiB), ("KiB", KiB)):
            if value % size == 0:
                return f"{value // size:,} {unit}"
        return f"{value:,} B"
    if SECONDS.search(setting):
        return f"{value:g} s"
    return f"{value:,}"


def constant(name: str) -> object:
    """The module-level constant ``name`` wherever it lives in rstreams.net."""
    values = set()
    for module in pkgutil.iter_modules(rstreams.net.__path__, "rstreams.net."):
        loaded = importlib.import_module(module.name)
        if hasattr(loaded, name):
            values.add(getattr(loaded, name))
    assert len(values) == 1, f"constant {name} found with values {values} in rstreams.net"
    return values.pop()


def default(setting: str, where: str) -> object:
    if where in FUNCTIONS:
        return inspect.signature(FUNCTIONS[where]).parameters[setting].default
    if where in CLASSES:
        return {f.name: f.default for f in dataclasses.fields(CLASSES[where])}[setting]
    assert where == "constant", f"unknown place {where!r} for {setting}"
    return constant(setting)


def test_every_documented_default_is_the_codes() -> None:
    """Each row's default column is what the code uses."""
    checked = 0
    for cells in rows():
        setting = cells[0].strip("`")
        for where in places(cells[1]):
            assert cells[2] == shown(setting, default(setting, where)), (setting, where, cells[2])
            checked += 1
    assert checked >= 30


def test_every_limit_in_the_code_is_documented() -> None:
    """Every ConnectionConfig and Resume field, and every limit or timeout of serve() and connect()."""
    listed = {(cells[0].strip("`"), where) for cells in rows() for where in places(cells[1])}
    for where, cls in CLASSES.items():
        for field in dataclasses.fields(cls):
            if field.name not in ("extensions", "disabled_extensions"):
                assert (field.name, where) in listed, (
                    f"{where}.{field.name} is not in docs/security.md (add a row to its limits tables)"
                )
    for where, function in FUNCTIONS.items():
        for name, parameter in inspect.signature(function).parameters.items():
            number = type(parameter.default) in (int, float)
            if number or name.endswith("timeout"):
                assert (name, where) in listed, (
                    f"{where[:-2]}({name}=...) is not in docs/security.md (add a row to its limits tables)"
                )


def source_messages() -> tuple[set[str], list[re.Pattern[str]]]:
    """Every string literal in src/rstreams (the texts as they are) and every f-string, as a
    pattern (a value: any text)."""
    literals: set[str] = set()
    patterns = []
    for path in Path(rstreams.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                texts = [
                    v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                    for v in node.values
                ]
                if sum(len(text) for text in texts if text is not None) >= 12:
                    parts = [".+?" if text is None else re.escape(text) for text in texts]
                    patterns.append(re.compile("".join(parts), re.DOTALL))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= 12:
                literals.add(node.value)
    return literals, patterns


def documented_texts() -> list[str]:
    """The quoted texts: the last column of the tables, and goodbye/onError texts in the prose."""
    texts = []
    for cells in rows():
        if len(cells) == 5:  # setting | where | default | exceeded | what the peer reads
            texts += re.findall(r"`([^`]+)`", cells[-1])
    for span in re.findall(r"`([^`]+)`", section()):
        span = " ".join(span.split())
        if " " in span and (":" in span or "(PROTOCOL.md" in span or span.startswith("no publisher")):
            texts.append(span)
    return sorted(set(texts))


def test_every_documented_text_is_one_the_code_sends() -> None:
    """Each quoted text (``<name>`` standing for a value) matches a message in the source."""
    literals, patterns = source_messages()
    texts = documented_texts()
    assert len(texts) >= 20
    for text in texts:
        example = re.sub(r"<[^>]+>", "X", text)
        # the wire's errors add " (PROTOCOL.md §N)" to their message when it becomes a goodbye
        bare = re.sub(r" \(PROTOCOL\.md §[0-9.]+\)$", "", example)
        assert {example, bare} & literals or any(
            p.fullmatch(example) or p.fullmatch(bare) for p in patterns
        ), f"docs/security.md quotes {text!r}, which no message in src/rstreams produces"
