"""PROTOCOL.md's hand-written message tables agree with its generated one.

§3's table of message types is generated from the code; each extension's section (§14 to
§21) repeats its rows by hand, with the payload spelled out. An outside implementer reads
either, so a type byte must name the same message in both, and every message §3 lists for
an extension must have its row in that extension's section.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
TYPES = PROTOCOL.split("<!-- generated:types -->")[1].split("<!-- /generated:types -->")[0]
ROW = re.compile(r"^\| `0x([0-9A-F]{2})` \| ([a-zA-Z]+) \|", re.MULTILINE)
"""A row of an extension's own table: type byte, message name."""
GENERATED_ROW = re.compile(r"^\| `0x([0-9A-F]{2})` \| (\w+) \(([\w-]+), §(\d+(?:\.\d+)?)\)", re.MULTILINE)
"""A row of §3's table for an extension message: type byte, name, extension, section."""


def _extension_sections() -> dict[str, str]:
    """§14 .. §21 and their subsections by number, each up to the next heading of any level."""
    parts = re.split(r"^##+ (\d+(?:\.\d+)?)\.? ", PROTOCOL, flags=re.MULTILINE)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    return {number: text for number, text in sections.items() if int(number.split(".")[0]) >= 14}


def test_each_section_s_rows_name_the_message_section_3_gives_the_byte() -> None:
    generated = {int(code, 16): name for code, name, _, _ in GENERATED_ROW.findall(TYPES)}
    rows = [(code, name) for text in _extension_sections().values() for code, name in ROW.findall(text)]
    assert len(rows) >= 20, rows
    wrong = [(code, name, generated.get(int(code, 16))) for code, name in rows]
    assert [row for row in wrong if row[1] != row[2]] == []


def test_every_extension_message_of_section_3_has_a_row_in_its_own_section() -> None:
    sections = _extension_sections()
    rows = GENERATED_ROW.findall(TYPES)
    assert len(rows) >= 20, rows
    missing = []
    for code, name, _, section in rows:
        chapter = [text for number, text in sections.items() if number.split(".")[0] == section.split(".")[0]]
        if not any(f"| `0x{code}` | {name} |" in text for text in chapter):
            missing.append((code, name, section))
    assert missing == []
