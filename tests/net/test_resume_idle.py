"""A server's idle timeout on a resumed session counts from the resume (PROTOCOL.md §14.2, §16.3).

The idle timeout ends a connection on which nothing was received for ``idle_timeout``; on a
resumable session it drops the transport instead, and the session waits for the resume. A
transport that resumes the session has been heard from: its resume request. Its idle clock
starts there, not at the last byte the broken transport brought (which dropped a transport
resumed a moment before as idle). On a virtual clock, through memory transports; the client is
a raw peer that says hello, reads its resumeToken, and resumes with it on a second transport.
"""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, ResumeRegistry, resume_config
from rstreams.net._transport import Transport
from rstreams.wire import ClientHello, ExtensionMessage, FrameParser, encode
from rstreams.wire._resume import (
    RESUME,
    RESUME_TOKEN,
    RESUMED,
    encode_message,
    encode_position,
    encode_resume,
    hello_end,
)
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION
from testkit.net import memory_pair, run_virtual

pytestmark = pytest.mark.timeout(60)

IDLE = 10.0
HELLO = encode(ClientHello(extensions=(RESUME_EXTENSION.id,)))


class RawEnd:
    """One transport's client end: keeps what it receives and when the transport ended."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.lost_at: float | None = None
        self.transport: Transport | None = None

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport

    def data_received(self, data: memoryview) -> None:
        self.received += data

    def eof_received(self) -> None:
        pass

    def connection_lost(self, error: BaseException | None) -> None:
        self.lost_at = asyncio.get_running_loop().time()

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.writelines([data])

    def token(self) -> bytes:
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        frames = parser.feed(bytes(self.received))
        return next(f.payload for f in frames if isinstance(f, ExtensionMessage) and f.type == RESUME_TOKEN)


def _resumed_link(broken_at: float, resumed_at: float) -> tuple[RawEnd, RawEnd]:
    """A session whose first transport breaks at ``broken_at`` and is resumed at ``resumed_at``;
    nothing is sent on the second transport after the resume."""

    async def main() -> tuple[RawEnd, RawEnd]:
        def driver() -> Pump:
            config = resume_config(None)
            return Pump(client=False, offer={}, config=config, idle_timeout=IDLE, keepalive=None)

        resume = Resume(session_timeout=10 * IDLE, stall_timeout=None)
        registry = ResumeRegistry(resume, driver, high=1 << 20, handshake_timeout=None)
        first, second = RawEnd(), RawEnd()
        memory_pair(registry.make_link(), first)
        first.send(HELLO)
        await asyncio.sleep(broken_at)
        assert first.transport is not None
        first.transport.abort()
        await asyncio.sleep(resumed_at - broken_at)
        memory_pair(registry.make_link(), second)
        second.send(encode_message(RESUME, encode_resume(first.token(), len(first.received))))
        await asyncio.sleep(3 * IDLE)
        return first, second

    return run_virtual(main)


@pytest.mark.parametrize(("broken_at", "resumed_at"), [(1.0, 5.0), (1.0, IDLE - 1), (IDLE - 2, IDLE - 0.5)])
def test_a_resumed_transport_is_idle_one_idle_timeout_after_its_resume(
    broken_at: float, resumed_at: float
) -> None:
    first, second = _resumed_link(broken_at, resumed_at)
    assert first.lost_at == broken_at
    end = hello_end(bytearray(first.received))
    assert end is not None
    resumed = encode_message(RESUMED, encode_position(len(HELLO)))  # what the server had received
    assert second.received == first.received[:end] + resumed  # its hello, resumed, and no goodbye
    assert second.lost_at == resumed_at + IDLE  # dropped as idle, the session waiting for a resume
