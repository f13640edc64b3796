"""`rstreams serve`'s `counter` announces its codec's content type (PROTOCOL.md §17), as README
says a served publisher does: with the default utf8 a Python client without `codec=` reads str
(it read bytes, nothing being announced); with raw, nothing is announced and it reads bytes."""

from __future__ import annotations

import asyncio

import pytest

import rstreams
from rstreams._cli_publishers import builtin_publishers

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("codec", "read"),
    [("utf8", ["0", "1", "2"]), ("raw", [b"0", b"1", b"2"]), ("int64", [0, 1, 2]), ("json", [0, 1, 2])],
)
def test_counter_is_read_as_its_codec_announces(codec: str, read: list[object]) -> None:
    async def main() -> list[object]:
        async with await rstreams.serve("tcp://127.0.0.1:0", builtin_publishers(codec)) as server:  # noqa: SIM117
            async with await rstreams.connect(server.url) as conn:
                return [element async for element in conn.publisher("counter?to=3")]

    assert asyncio.run(main()) == read
