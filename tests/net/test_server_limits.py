"""serve()'s limits: handshake_timeout and max_connections; each refusal is a goodbye, then a close.

That a client's hello stops the handshake timer is tested on a virtual clock, where the hello's
arrival does not depend on the machine's load (tests/net/test_closing.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, connect, serve
from rstreams.wire import ClientHello, ConnectionClosed, Side, encode
from rstreams.wire import Connection as Core
from rstreams.wire._resume import RESUME, Resumed, ResumeReplyParser, encode_message, encode_resume
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION
from testkit.bound import within
from testkit.net import session_of
from testkit.resume import read_resume_token

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def goodbye_in(data: bytes) -> str:
    """The reason of the goodbye a client core reads in ``data`` (fails if there is none)."""
    core = Core(Side.CLIENT)
    core.receive_data(data)
    closed = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
    assert closed, f"no goodbye in {data.hex(' ')}"
    return closed[0].reason


class Accepted:
    """``on_connection``: the server's connections, in order."""

    def __init__(self) -> None:
        self.conns: list[Connection] = []

    def __call__(self, conn: Connection) -> None:
        self.conns.append(conn)


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
async def test_a_silent_connection_gets_a_handshake_timeout_goodbye(resume: bool) -> None:
    """No clientHello within handshake_timeout: goodbye "handshake timeout (...)", then EOF and close.
    With resume too: no first byte, neither a new session nor a resume, is no hello."""
    accepted = Accepted()
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, handshake_timeout=0.2, on_connection=accepted, resume=resume
    ) as server:
        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        data = await within(reader.read())  # sends nothing; reads to the server's EOF
        writer.close()
        reason = goodbye_in(data)
        assert reason.startswith("handshake timeout") and "clientHello" in reason and "0.2 s" in reason
        (conn,) = accepted.conns
        await within(conn.wait_closed())
        assert conn.closed and not server.connections


async def test_connections_beyond_max_connections_get_a_goodbye() -> None:
    """The third connection to a max_connections=2 server is refused with a goodbye naming the limit."""
    accepted = Accepted()
    async with await serve("tcp://127.0.0.1:0", OFFER, max_connections=2, on_connection=accepted) as server:
        first, second = await connect(server.url), await connect(server.url)
        for conn in (first, second):
            assert await within(conn.request("greeting")) == b"hello"
        assert len(server.connections) == 2

        # a raw peer reads the server's hello, the goodbye, then EOF
        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(encode(ClientHello()))
        data = await within(reader.read())
        writer.close()
        reason = goodbye_in(data)
        assert "at most 2" in reason and "max_connections" in reason

        # a client sees the reason in its streams' error
        third = await connect(server.url)
        with pytest.raises(ConnectionBrokenError, match="max_connections"):
            await within(third.request("greeting"))
        await within(third.wait_closed())
        assert len(accepted.conns) == 2  # on_connection never heard of the refused ones
        assert len(server.connections) == 2

        # below the limit again, a new connection is served
        await first.aclose()
        await within(accepted.conns[0].wait_closed())
        async with await connect(server.url) as fourth:
            assert await within(fourth.request("greeting")) == b"hello"
        assert len(accepted.conns) == 3
        await second.aclose()


@pytest.mark.parametrize(
    "limits", [{"handshake_timeout": 0}, {"handshake_timeout": -1.0}, {"max_connections": 0}]
)
async def test_bad_limits_are_refused(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(limits))):
        await serve("tcp://127.0.0.1:0", OFFER, **limits)


async def test_a_session_waiting_for_its_resume_counts_against_max_connections() -> None:
    """With resume=, a session whose transport broke stays the server's connection until it is
    resumed or expires (PROTOCOL.md §16.3), with its replay buffer: a peer that breaks its
    transports cannot have more of them kept than max_connections. Its resume is still taken."""
    accepted = Accepted()
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, max_connections=1, on_connection=accepted, resume=True
    ) as server:
        hello = encode(ClientHello(extensions=(RESUME_EXTENSION.id,)))
        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(hello)
        token, received = await read_resume_token(reader)
        writer.transport.abort()  # the transport breaks; the session waits for its resume
        (conn,) = accepted.conns
        session = session_of(conn)
        assert session is not None

        async def detached() -> None:  # (the server heard of the break)
            while True:
                if session.link is None:
                    return
                await asyncio.sleep(0.01)

        await within(detached())

        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(hello)  # a new session: beyond the limit
        data = await within(reader.read())
        writer.close()
        assert "max_connections" in goodbye_in(data)
        assert not conn.closed and server.connections == {conn}

        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(encode_message(RESUME, encode_resume(token, received)))  # the session's own resume
        parser, outcome = ResumeReplyParser(), None
        while outcome is None:
            chunk = await within(reader.read(1 << 16))
            assert chunk, "the server closed before answering the resume"
            outcome = parser.feed(chunk)
        writer.close()
        assert isinstance(outcome, Resumed), outcome
        assert len(accepted.conns) == 1
