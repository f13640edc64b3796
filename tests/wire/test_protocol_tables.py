"""PROTOCOL.md's hand-written tables are the code's: §4.4's registered extensions (ids, names,
message and reserved types, each row's section) and §11's limits with their defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rstreams.wire.extensions import REGISTERED, Extension

pytestmark = pytest.mark.timeout(30)

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
HEX = re.compile(r"`0x([0-9A-F]{2})`(?:\u2013`0x([0-9A-F]{2})`)?")


def _types(text: str) -> set[int]:
    found: set[int] = set()
    for first, last in HEX.findall(text):
        found |= set(range(int(first, 16), int(last or first, 16) + 1))
    return found


def _rows() -> dict[int, list[str]]:
    table = PROTOCOL.split("Registered extensions:")[1].split("\n\n")[1]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[int(cells[0])] = cells
    return rows


def test_the_table_lists_every_registered_extension_once() -> None:
    assert sorted(_rows()) == sorted(ext.id for ext in REGISTERED)


@pytest.mark.parametrize("ext", REGISTERED, ids=lambda ext: ext.name)
def test_each_row_is_the_registry(ext: Extension) -> None:
    _, name, types, section = _rows()[ext.id]
    assert name == ext.name
    assert _types(types) == set(ext.message_types), f"{name}: the row's types are not the registry's"
    reserved: set[int] = set().union(
        *(_types(part) for part in re.findall(r"\(([^)]*reserved[^)]*)\)", types))
    )
    assert reserved == set(ext.reserved), f"{name}: the row's reserved types are not the registry's"
    number = section.lstrip("§")
    heading = re.search(rf"^#+ {re.escape(number)}\.? (.*)$", PROTOCOL, re.M)
    assert heading, f"{name}: §{number} does not exist"
    assert name in heading.group(1) and f"id {ext.id}" in heading.group(1), (
        f"{name}: §{number} is {heading.group(1)!r}, not this extension's section"
    )


def test_the_limits_table_gives_the_code_s_defaults() -> None:
    """§11's table: each `ConnectionConfig` field and `Resume.x` with the default the code has."""
    from rstreams.net import Resume
    from rstreams.wire import ConnectionConfig

    table = PROTOCOL.split("## 11. Limits")[1].split("\n\n")[2]
    config, resume = ConnectionConfig(), Resume()
    units = {"KiB": 1024, "MiB": 1024 * 1024, "s": 1}
    checked = set()
    for line in table.splitlines()[2:]:
        setting, default = (cell.strip() for cell in line.strip("|").split("|")[:2])
        named = re.match(r"`(?:Resume\.)?(\w+)`", setting)
        if not named:
            continue  # a limit with no setting (channel marks, input demand)
        owner = resume if setting.startswith("`Resume.") else config
        value = re.match(r"(\d+)(?: (KiB|MiB|s)\b)?", default)
        assert value, f"§11: {setting}'s default {default!r} is not a number"
        stated = int(value.group(1)) * units.get(value.group(2) or "", 1)
        assert stated == getattr(owner, named.group(1)), f"§11 says {setting} = {default!r}"
        checked.add(named.group(1))
    assert len(checked) >= 12, checked


def test_the_resume_limits_table_gives_the_code_s_defaults() -> None:
    """§16.7's table: each `Resume` field it names, with the default the code has."""
    from rstreams.net import Resume

    table = PROTOCOL.split("### 16.7 Limits")[1].split("\n\n")[2]
    resume = Resume()
    units = {"MiB": 1024 * 1024, "s": 1}
    checked = set()
    for line in table.splitlines()[2:]:
        setting, default = (cell.strip() for cell in line.strip("|").split("|")[:2])
        names = re.findall(r"`(\w+)`", setting)
        if not names:
            continue  # token size, payload bound: not settings
        values = [v.strip() for v in default.split(",")]
        assert len(values) == len(names), setting
        for name, text in zip(names, values, strict=True):
            value = re.match(r"(\d+(?:\.\d+)?)(?: (MiB|s)\b)?", text)
            assert value, f"§16.7: {name}'s default {text!r} is not a number"
            stated = float(value.group(1)) * units.get(value.group(2) or "", 1)
            assert stated == getattr(resume, name), f"§16.7 says {name} = {text!r}"
            checked.add(name)
    assert len(checked) >= 7, checked


def test_every_extension_named_with_its_id_has_the_registry_s_id() -> None:
    """ "extension NAME (id N)", a section's "Extension NAME (id N)", "NAME (id N)": N is NAME's id."""
    ids = {ext.name: ext.id for ext in REGISTERED}
    text = re.sub(r"\s+", " ", PROTOCOL).replace("**", "")
    found = re.findall(r"([a-z][\w-]*) \(id (\d+)", text)
    named = [(name, int(number)) for name, number in found if name in ids]
    assert len(named) >= 15
    wrong = [(name, number) for name, number in named if ids[name] != number]
    assert not wrong, wrong
    for ext in REGISTERED:  # each has a heading of its own naming its id
        name = re.escape(ext.name)
        heading = rf"^##+ [\d.]+ (?:Extension {name} \(id {ext.id}\)|.*\(extension {name}, id {ext.id}\))$"
        assert re.search(heading, PROTOCOL, re.M), ext.name
