"""PROTOCOL.md §17.3's built-in types, byte for byte: each example element is what the built-in
codec for that media type writes (decoding it and encoding again gives the same bytes), the
numbers in parentheses are what it decodes to, and the elementSize column is the codec's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rstreams.net._codec import codec_for

pytestmark = pytest.mark.timeout(30)

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()


def _rows() -> list[tuple[str, str, str]]:
    """(media type, elementSize, example) of each row of §17.3's table."""
    table = PROTOCOL.split("### 17.3")[1].split("\n\n")[1]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[2], cells[3]))
    return rows


ROWS = _rows()


def test_the_table_has_every_built_in_type() -> None:
    assert len(ROWS) == 7
    assert all(
        codec_for(media_type) is not None
        for media_type, _, _ in ROWS
        if media_type != "application/octet-stream"
    )


@pytest.mark.parametrize(("media_type", "size", "example"), ROWS, ids=[r[0] for r in ROWS])
def test_each_example_is_what_the_codec_writes(media_type: str, size: str, example: str) -> None:
    codec = codec_for(media_type)
    if codec is None:  # octet-stream: opaque bytes, no codec
        assert media_type == "application/octet-stream" and size == "any"
        return
    assert int(size) == codec.element_size, media_type
    for hexed, shown in re.findall(r"`([0-9a-f]{2}(?: [0-9a-f]{2})*)`(?: \(([^)]*)\))?", example):
        data = bytes.fromhex(hexed)
        value = codec.decode(data)
        assert codec.encode(value) == data, (media_type, hexed)
        number = shown.replace("\u2212", "-")
        if re.fullmatch(r"-?\d+(\.\d+)?", number):
            assert value == float(number), (media_type, hexed, shown)
