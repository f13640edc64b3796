"""StreamProtocol's read buffer: tiny until a read fills it, small while reads are small, big for
bulk reads, small again after."""

from __future__ import annotations

import pytest

from rstreams.net._stream import FIRST_READ_SIZE, SHRINK_AFTER, SMALL_READ_SIZE, StreamProtocol
from rstreams.net._transport import SOCKET_READ_SIZE
from rstreams.wire._parser import ReadBuffer
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


class Borrowing(RecordingHandler):
    """Keeps a view of the reads it is told to (as the parser does with a cut large element),
    checking that the one kept before is still intact when the next read arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.borrow = False
        self.kept: tuple[memoryview, bytes] | None = None

    def data_received(self, data: memoryview) -> None:
        super().data_received(data)
        if self.kept is not None:
            view, copy = self.kept
            assert view == copy  # not read into while kept
            self.kept = None
        if self.borrow:
            buffer = data.obj
            assert isinstance(buffer, ReadBuffer)
            buffer.lent = True
            self.kept = (data, bytes(data))


async def test_a_lent_buffer_is_not_read_into_until_the_next_read_was_handed_over() -> None:
    handler = Borrowing()
    protocol = StreamProtocol(handler)
    read(protocol, b"i" * FIRST_READ_SIZE)
    read(protocol, b"b" * SMALL_READ_SIZE)  # bulk: the big buffer
    big = protocol.get_buffer(-1)
    handler.borrow = True
    read(protocol, b"x" * 1000)  # kept: the next read goes to a spare of the same size
    spare = protocol.get_buffer(-1)
    assert spare.obj is not big.obj and len(spare) == SOCKET_READ_SIZE
    read(protocol, b"y" * 1000)  # kept too: the two take turns
    assert protocol.get_buffer(-1).obj is big.obj
    read(protocol, b"z" * 1000)
    assert protocol.get_buffer(-1).obj is spare.obj
    handler.borrow = False
    read(protocol, b"w" * 1000)  # nothing kept: the same buffer again
    assert protocol.get_buffer(-1).obj is spare.obj
    assert (
        handler.kept is None
        and bytes(handler.data[-4000:]) == b"x" * 1000 + b"y" * 1000 + b"z" * 1000 + b"w" * 1000
    )


async def test_a_paused_connection_keeps_no_spare_buffer() -> None:
    handler = Borrowing()
    protocol = StreamProtocol(handler)
    read(protocol, b"i" * FIRST_READ_SIZE)
    read(protocol, b"b" * SMALL_READ_SIZE)
    handler.borrow = True
    read(protocol, b"x" * 1000)
    protocol.get_buffer(-1)  # the spare is made
    protocol.pause_reading()
    assert protocol._spare is None and len(protocol.get_buffer(-1)) == SMALL_READ_SIZE


async def test_a_read_size_the_parser_said_applies_to_the_next_read_only() -> None:
    handler = Borrowing()
    protocol = StreamProtocol(handler)
    read(protocol, b"i" * FIRST_READ_SIZE)
    read(protocol, b"b" * SMALL_READ_SIZE)  # bulk: the big buffer
    big = protocol.get_buffer(-1)
    assert isinstance(big.obj, ReadBuffer)
    big.obj.fits = 1000  # as the parser says in a run of large frames
    assert len(protocol.get_buffer(-1)) == 1000 and big.obj.fits == 0
    read(protocol, b"x" * 1000)
    assert len(protocol.get_buffer(-1)) == SOCKET_READ_SIZE
    handler.borrow = True  # a cut element: kept, and a size said; it applies to the spare
    read(protocol, b"y" * 1000)
    big.obj.fits = 3000
    spare = protocol.get_buffer(-1)
    assert spare.obj is not big.obj and len(spare) == 3000


async def test_reads_of_one_size_reuse_the_view_and_always_show_the_new_bytes() -> None:
    """A read as long as the one before, into the same buffer, is handed the same view (no new
    slice); one into the other buffer of a lent pair, or after a resize, gets a view of that one."""
    handler = Borrowing()
    seen: list[tuple[memoryview, bytes]] = []
    record = handler.data_received

    def received(data: memoryview) -> None:
        seen.append((data, bytes(data)))
        record(data)

    handler.data_received = received  # type: ignore[method-assign]
    protocol = StreamProtocol(handler)
    read(protocol, b"a" * 11)
    read(protocol, b"b" * 11)
    assert seen[1][0] is seen[0][0] and seen[1][1] == b"b" * 11  # the same view, the new bytes
    read(protocol, b"i" * FIRST_READ_SIZE)  # filled: the buffer grows
    read(protocol, b"c" * 11)
    read(protocol, b"d" * 11)
    assert seen[3][0] is not seen[1][0] and seen[4][0] is seen[3][0]
    assert seen[3][0].obj is protocol.get_buffer(-1).obj and bytes(seen[4][0]) == b"d" * 11
    read(protocol, b"b" * SMALL_READ_SIZE)  # bulk: the big buffer
    handler.borrow = True
    read(protocol, b"x" * 11)  # kept: the next read goes into the spare buffer
    handler.borrow = False
    read(protocol, b"y" * 11)
    assert seen[-1][0].obj is not seen[-2][0].obj and bytes(seen[-1][0]) == b"y" * 11
    assert bytes(handler.data[-22:]) == b"x" * 11 + b"y" * 11
