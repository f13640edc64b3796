"""A publisher that sends its last elements within demand, completes, says goodbye and closes has
everything it sent delivered to subscribers that are merely slow, however slow, over ws:// as over
tcp://: the bound on a closing WebSocket's time (LINGER_SECONDS, 2 s) runs out only once this side
has read what the peer sent before its close, not while its own input backpressure holds the
reading back.

The subscribers take 0.1 s for each element on an event loop whose clock they move ahead (the
sockets are real, the seconds are not): 80 streams of 10 elements, 80 s in all, forty times the
bound. The streams' elements are interleaved, each a message of its own to the connection, so
that a read of them is handled a part (READ_TURN, 4 KiB) a loop turn, reading paused meanwhile
(rstreams.net._intake): the first WebSocket message (13 KB) takes four turns, while the peer's
further messages and its close wait in websockets, read with the first one."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.api import Subscription
from rstreams.net import connect
from rstreams.wire import (
    FrameParser,
    Goodbye,
    OnComplete,
    OnNext,
    OnSubscribe,
    ServerHello,
    Subscribe,
    encode,
)
from testkit.clock import JumpingLoop, run_jumping
from testkit.rawws import accept_upgrade

pytest.importorskip("websockets")

pytestmark = [pytest.mark.timeout(60)]

STREAMS = 80
ELEMENTS = 10  # on each stream: 800 in all
STEP = 0.1  # a subscriber's seconds for each element


class _Slow:
    """Requests every element at once, takes STEP seconds of the loop's clock over each, and
    requests one more after each (its demand kept up, written after the peer's close)."""

    def __init__(self, loop: JumpingLoop) -> None:
        self.loop = loop
        self.items: list[bytes] = []
        self.end: asyncio.Future[BaseException | None] = loop.create_future()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(ELEMENTS)

    def on_next(self, item: bytes) -> None:
        self.items.append(item)
        self.loop.jump(STEP)
        self.subscription.request(1)

    def on_error(self, error: BaseException) -> None:
        self.end.set_result(error)

    def on_complete(self) -> None:
        self.end.set_result(None)


def _unmasked(data: bytearray) -> bytes | None:
    """The payload of the client's first whole WebSocket frame in ``data``, taken from it (None:
    not whole yet)."""
    if len(data) < 2:
        return None
    size, at = data[1] & 0x7F, 2
    if size >= 126:
        width = 2 if size == 126 else 8
        if len(data) < 2 + width:
            return None
        size, at = int.from_bytes(data[2 : 2 + width], "big"), 2 + width
    if len(data) < at + 4 + size:
        return None
    mask, payload = data[at : at + 4], data[at + 4 : at + 4 + size]
    del data[: at + 4 + size]
    return bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))


def _message(payload: bytes) -> bytes:
    """One binary message from a server (unmasked)."""
    size = len(payload)
    if size < 126:
        return bytes([0x82, size]) + payload
    if size < 1 << 16:
        return bytes([0x82, 126]) + size.to_bytes(2, "big") + payload
    return bytes([0x82, 127]) + size.to_bytes(8, "big") + payload


CLOSE_1000 = bytes([0x88, 2]) + (1000).to_bytes(2, "big")


async def _publisher(scheme: str) -> tuple[asyncio.Server, asyncio.Future[None]]:
    """A raw publisher peer at ``scheme`` (ws or tcp): once the client subscribed STREAMS times, it
    sends ELEMENTS elements on each stream, interleaved, the onCompletes and its goodbye at once,
    then closes (its WebSocket close, or its end of output), and reads the client's input to its
    end; the future is done then."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ws = scheme == "ws"
            if ws:
                await accept_upgrade(reader, writer)
            parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
            buffer = bytearray()
            subscribers: list[int] = []
            while len(subscribers) < STREAMS:
                chunk = await reader.read(1 << 16)
                assert chunk, "the client ended before its subscribes"
                buffer += chunk
                payloads = []
                while payload := (_unmasked(buffer) if ws else bytes(buffer)):
                    payloads.append(payload)
                    if not ws:
                        buffer.clear()
                for payload in payloads:
                    subscribers += [f.subscriber for f in parser.feed(payload) if isinstance(f, Subscribe)]

            def elements(numbers: range) -> bytes:
                return b"".join(
                    encode(OnNext(subscriber=s, element=b"%02d" % n * 15))
                    for n in numbers
                    for s in subscribers
                )

            half = ELEMENTS // 2
            messages = [
                encode(ServerHello())
                + b"".join(encode(OnSubscribe(subscriber=s)) for s in subscribers)
                + elements(range(half)),
                elements(range(half, ELEMENTS)),
                b"".join(encode(OnComplete(subscriber=s)) for s in subscribers),
                encode(Goodbye()),
            ]
            if ws:  # (half the elements in a message of 13 KB, half in a second, then two more and the close)
                writer.write(b"".join(map(_message, messages)) + CLOSE_1000)
            else:
                writer.write(b"".join(messages))
                writer.write_eof()
            while await reader.read(1 << 16):
                pass
            writer.close()
            done.set_result(None)
        except Exception as error:  # (told to the test)
            done.set_exception(error)

    return await asyncio.start_server(serve_one, "127.0.0.1", 0), done


@pytest.mark.parametrize("scheme", ["ws", "tcp"])
def test_a_slow_subscriber_gets_every_element_and_the_completion_of_a_peer_that_closed(scheme: str) -> None:
    """Was, over ws://: the 2 s bound on the close, started when the peer's close frame was read
    (with its first message), ran out while the subscribers were busy with the first parts of
    that message, and aborted the socket: the rest of the message and the messages websockets
    queued were dropped, every stream failed with ``input ended without a goodbye``. With that
    bound fixed, the subscribers' requests did the same: written after the peer's close, each
    waited in websockets' ``send`` for ``close_timeout`` (2 s) from that close, then aborted the
    socket (a stream or more one element short)."""

    async def main(loop: JumpingLoop) -> None:
        listener, done = await _publisher(scheme)
        port = listener.sockets[0].getsockname()[1]
        url = f"ws://127.0.0.1:{port}/rsio" if scheme == "ws" else f"tcp://127.0.0.1:{port}"
        try:
            conn = await asyncio.wait_for(connect(url, handshake_timeout=None), 1000)
            subscribers = [_Slow(loop) for _ in range(STREAMS)]
            for subscriber in subscribers:
                conn.publisher("p").subscribe(subscriber)
            ends = await asyncio.wait_for(asyncio.gather(*(s.end for s in subscribers)), 1000)
            await asyncio.wait_for(done, 1000)
            await asyncio.wait_for(conn.wait_closed(), 1000)
        finally:
            listener.close()
        assert [len(s.items) for s in subscribers] == [ELEMENTS] * STREAMS
        assert ends == [None] * STREAMS, {repr(end) for end in ends}
        assert loop.offset > STREAMS * ELEMENTS * STEP - 1  # (the subscribers' time: 80 s)

    run_jumping(main)
