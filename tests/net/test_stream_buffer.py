"""StreamProtocol's read buffer: tiny until a read fills it, small while reads are small, big for
bulk reads, small again after."""

from __future__ import annotations

import pytest

from rstreams.net._stream import FIRST_READ_SIZE, SHRINK_AFTER, SMALL_READ_SIZE, StreamProtocol
from rstreams.net._transport import SOCKET_READ_SIZE
from testkit.net import RecordingHandler

pytestmark = [pytest.mark.asyncio]


def read(protocol: StreamProtocol, data: bytes) -> None:
    """What the event loop does for one recv_into."""
    buffer = protocol.get_buffer(-1)
    assert len(data) <= len(buffer)
    buffer[: len(data)] = data
    protocol.buffer_updated(len(data))


async def test_the_buffer_grows_on_a_full_read_and_shrinks_after_small_ones() -> None:
    handler = RecordingHandler()
    protocol = StreamProtocol(handler)
    assert len(protocol.get_buffer(-1)) == FIRST_READ_SIZE  # a connection that has said nothing: cheap
    read(protocol, b"h" * 10)
    assert len(protocol.get_buffer(-1)) == FIRST_READ_SIZE
    read(protocol, b"i" * FIRST_READ_SIZE)  # filled
    assert len(protocol.get_buffer(-1)) == SMALL_READ_SIZE
    read(protocol, b"a" * 100)
    assert len(protocol.get_buffer(-1)) == SMALL_READ_SIZE
    read(protocol, b"b" * SMALL_READ_SIZE)  # filled: more was waiting
    assert len(protocol.get_buffer(-1)) == SOCKET_READ_SIZE
    read(protocol, b"c" * SOCKET_READ_SIZE)
    for _ in range(SHRINK_AFTER - 1):
        read(protocol, b"d")
    read(protocol, b"e" * (SMALL_READ_SIZE + 1))  # a big read resets the count
    for _ in range(SHRINK_AFTER - 1):
        read(protocol, b"f")
    assert len(protocol.get_buffer(-1)) == SOCKET_READ_SIZE
    read(protocol, b"g")
    assert len(protocol.get_buffer(-1)) == SMALL_READ_SIZE
    expected = (
        10
        + FIRST_READ_SIZE
        + 100
        + SMALL_READ_SIZE
        + SOCKET_READ_SIZE
        + 2 * (SHRINK_AFTER - 1)
        + SMALL_READ_SIZE
        + 1
        + 1
    )
    assert len(handler.data) == expected  # every byte reached the handler
