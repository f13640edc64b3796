"""StreamProtocol's writes: handed to asyncio only while its buffer is empty, the rest queued by
reference, joined into few writes; the handler's marks count both."""

from __future__ import annotations

from typing import Any

import pytest

from rstreams.net._stream import JOINED_WRITE, StreamProtocol
from testkit.net import RecordingHandler

pytestmark = [pytest.mark.asyncio]


class FakeSocketTransport:
    """asyncio's flow-control contract: a write to an empty buffer goes to the "socket", which
    takes up to ``room`` bytes; the rest is buffered; ``pause_writing`` once more than the high
    mark is buffered, ``resume_writing`` once it drains to the low mark."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.sent = bytearray()
        self.writes: list[bytes] = []  # what each write() was given
        self.buffer = bytearray()
        self.high = self.low = 0
        self.paused = False
        self.closed = False
        self.protocol: StreamProtocol | None = None

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        if not self.buffer:
            taken = min(self.room, len(data))
            self.room -= taken
            self.sent += data[:taken]
            data = data[taken:]
        self.buffer += data
        if not self.paused and len(self.buffer) > self.high:
            self.paused = True
            assert self.protocol is not None
            self.protocol.pause_writing()

    def drain(self, room: int) -> None:
        """The peer read: the socket takes ``room`` more bytes."""
        self.room += room
        taken = min(self.room, len(self.buffer))
        self.room -= taken
        self.sent += self.buffer[:taken]
        del self.buffer[:taken]
        if self.paused and len(self.buffer) <= self.low:
            self.paused = False
            assert self.protocol is not None
            self.protocol.resume_writing()

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self.high, self.low = high, low

    def get_write_buffer_size(self) -> int:
        return len(self.buffer)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def _connect(room: int, high: int, low: int) -> tuple[StreamProtocol, FakeSocketTransport, RecordingHandler]:
    handler = RecordingHandler()
    protocol = StreamProtocol(handler, high=high, low=low)
    transport = FakeSocketTransport(room)
    transport.protocol = protocol
    protocol.connection_made(transport)  # type: ignore[arg-type]  # the part of asyncio's API it uses
    assert (transport.high, transport.low) == (0, 0)  # it hears when asyncio's buffer fills and empties
    return protocol, transport, handler


async def test_large_payloads_wait_by_reference_while_asyncio_holds_bytes() -> None:
    protocol, transport, handler = _connect(room=100, high=1000, low=100)
    payloads = [bytes([i]) * 300 for i in range(6)]
    chunks = [chunk for payload in payloads for chunk in (b"<h>", payload)]
    protocol.writelines(chunks)
    # One write (the chunks joined) went to the socket, which took 100 bytes; asyncio buffered
    # the rest of that write and everything else waits here, by reference, not copied.
    assert len(transport.writes) == 1 and len(transport.sent) == 100
    assert protocol.get_write_buffer_size() == sum(map(len, chunks)) - 100
    assert handler.paused == 1  # 1718 unsent > high 1000
    protocol.writelines([b"<more>"])
    transport.drain(10_000)  # asyncio's buffer empties: the queue goes on, joined
    assert bytes(transport.sent) == b"".join(chunks) + b"<more>"
    assert len(transport.writes) == 2
    assert handler.resumed == 1 and protocol.get_write_buffer_size() == 0


async def test_writes_are_joined_up_to_the_limit_and_larger_chunks_go_alone() -> None:
    protocol, transport, _ = _connect(room=1 << 30, high=1 << 30, low=0)
    big = b"b" * (JOINED_WRITE + 1)
    half = b"h" * (JOINED_WRITE // 2)
    protocol.writelines([b"a", half, half, b"c", big, b"d"])
    assert [len(w) for w in transport.writes] == [1 + len(half), len(half) + 1, len(big), 1]
    assert transport.writes[2] is big  # not copied
    assert bytes(transport.sent) == b"a" + half + half + b"c" + big + b"d"


async def test_the_handler_resumes_only_below_its_low_mark_and_close_sends_the_queue() -> None:
    protocol, transport, handler = _connect(room=0, high=500, low=200)
    protocol.writelines([b"x" * 600])
    assert handler.paused == 1 and protocol.get_write_buffer_size() == 600
    protocol.writelines([b"y" * 300])  # queued behind it
    transport.drain(500)  # asyncio: 100 left ... not empty: nothing resumes
    assert handler.resumed == 0
    transport.drain(100)  # empty: the queued 300 go out, the socket takes none of them
    assert protocol.get_write_buffer_size() == 300 and handler.resumed == 0  # 300 > low 200
    protocol.set_write_buffer_limits(1000, 400)
    protocol.writelines([b"z" * 50])
    protocol.close()  # the queue is handed to asyncio first, in order
    assert transport.closed and bytes(transport.buffer) == b"y" * 300 + b"z" * 50
    assert bytes(transport.sent) == b"x" * 600
