"""The server's answer to a peer's goodbye reaches a peer that goes on writing after it.

§9.1 says a peer sends nothing after its goodbye; one that does anyway (fuzz_polyglot.py found
the Java server's case) must still read the answer. Closing a TCP socket with unread input makes
the kernel reset the connection and drop what it has not sent yet: with a stream's elements
backed up in front of it, the answer among them. So after answering, a server that can
half-close ends its sending side and discards input until the peer's end of input (at most
:data:`~rstreams.net._closing.LINGER_SECONDS`), as after its own error goodbye (§10). TLS and
WebSocket cannot half-close: there the answer's close is unchanged (tests/net/test_tls_goodbye.py
covers their error goodbyes).
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from typing import Any

import pytest

import rstreams
from rstreams.net import serve
from rstreams.net._closing import LINGER_BYTES
from rstreams.wire import (
    ClientHello,
    ExtensionMessage,
    FrameParser,
    Goodbye,
    OnNext,
    OnNextBatch,
    OnNextPacked,
    Subscribe,
    encode,
    extensions,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

OFFER: dict[str, Any] = {"endless": lambda params: rstreams.from_iterable(itertools.repeat(bytes(64)))}
PINGS = encode(ExtensionMessage(type=extensions.PING, payload=bytes(8))) * 10_000  # 100 KB of pings
AFTER = 10  # blocks of PINGS after the goodbye: 1 MB, below the discard bound (the answer must survive)
ROUNDS = 5  # the reset needs the kernel to hold unsent output at the close: several rounds make it likely


def _goodbye_then_go_on_writing(port: int) -> tuple[list[Any], int, OSError | None]:
    """A raw peer with a small receive buffer: hello, a stream of endless elements under way,
    goodbye, then pings until its input ends (AFTER blocks at most). Returns the frames read,
    the bytes left over inside a frame at the end of input, and the error that ended the
    input, if any."""
    parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
    frames: list[Any] = []
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server's elements back up
        sock.settimeout(10)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            encode(ClientHello(extensions=(extensions.KEEPALIVE.id,)))
            + encode(Subscribe(publisher="endless", subscriber=1, initial_demand=1_000_000))
        )
        while not any(isinstance(frame, OnNext | OnNextPacked | OnNextBatch) for frame in frames):
            data = sock.recv(1 << 16)
            assert data, "the server closed before the stream was under way"
            frames += parser.feed(data)
        sock.sendall(encode(Goodbye(reason="bye")))
        reading = threading.Event()
        reading.set()

        def write() -> None:
            try:
                for _ in range(AFTER):
                    if not reading.is_set():
                        break
                    sock.sendall(PINGS)  # after our goodbye, until our input ends
            except OSError:
                pass  # the server closed

        writer = threading.Thread(target=write)
        writer.start()
        failure: OSError | None = None
        try:
            while data := sock.recv(1 << 16):
                frames += parser.feed(data)
        except OSError as error:
            failure = error
        finally:
            reading.clear()
            writer.join()
        return frames, parser.buffered, failure


async def test_the_answer_to_a_goodbye_reaches_a_peer_that_goes_on_writing_after_it() -> None:
    assert len(PINGS) * AFTER < LINGER_BYTES  # past it the server stops discarding and closes anyway
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        port = int(server.url.rsplit(":", 1)[1])
        for _ in range(ROUNDS):
            frames, left, failure = await asyncio.to_thread(_goodbye_then_go_on_writing, port)
            assert failure is None, f"the server reset the connection (its answer may be lost): {failure!r}"
            assert isinstance(frames[-1], Goodbye), (
                f"the answer to our goodbye did not come last: {type(frames[-1]).__name__}"
            )
            assert left == 0, "our input ended inside a frame"
