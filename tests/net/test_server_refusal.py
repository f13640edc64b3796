"""A server over its max_connections refuses a connection at its clientHello (PROTOCOL.md §10).

The goodbye waits for the hello, so that it carries code 8 (unavailable) when the hello makes
error-codes active (§19), and it goes out before anything the peer sent after its hello is
handled: subscribes written with the hello are not served, and the bytes after the hello are
not even parsed. The same on a server with ``resume=``, whose new sessions are refused alike;
a session that resumes is not a new connection and is not refused. Raw peers write the bytes,
so that hello and subscribe arrive together.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.net import Connection, connect, serve
from rstreams.wire import (
    ClientHello,
    ExtensionMessage,
    FrameParser,
    Goodbye,
    Request,
    ServerHello,
    Subscribe,
    encode,
)
from rstreams.wire._resume import (
    RESUME,
    Resumed,
    ResumeReplyParser,
    encode_message,
    encode_resume,
)
from rstreams.wire.extensions import ERROR_CODES, GOODBYE_CODE, REGISTERED
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION
from testkit.bound import within
from testkit.net import CountingSource
from testkit.resume import Collector, read_resume_token

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60), pytest.mark.usefixtures("nothing_escapes")]

ALL = tuple(ext.id for ext in REGISTERED)
REFUSAL = "too many connections: this server accepts at most 1 (max_connections)"
CODED = [ExtensionMessage(type=GOODBYE_CODE, payload=b"\x08"), Goodbye(reason=REFUSAL)]
"""What a refused peer that offered error-codes reads after the serverHello: code 8, the goodbye."""

SERVERS = [{}, {"resume": True}]
SERVER_IDS = ["plain", "resume"]


class Made:
    """A publisher factory that counts the subscribes it serves."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, params: dict[str, str]) -> rstreams.Flow[bytes]:
        self.calls += 1
        return rstreams.just(b"hello")


def _parser() -> FrameParser:
    return FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


async def _refused(url: str, *writes: bytes) -> list[object]:
    """Write ``writes`` (one write each, drained in between) to the server at ``url``; the frames
    it answers with, read to its end of input."""
    reader, writer = await asyncio.open_connection(*_address(url))
    try:
        for data in writes:
            writer.write(data)
            await writer.drain()
        received = await within(reader.read())
    finally:
        writer.close()
    frames = _parser().feed(received)
    assert isinstance(frames[0], ServerHello), frames
    return list(frames[1:])


async def _counted(url: str) -> Connection:
    """A client that the server at ``url`` has counted (it answered a request)."""
    conn = await connect(url)
    assert await within(conn.request("greeting")) == b"hello"
    return conn


@pytest.mark.parametrize("options", SERVERS, ids=SERVER_IDS)
@pytest.mark.parametrize("offered", [ALL, (ERROR_CODES.id,), ()], ids=["all", "error-codes", "none"])
async def test_the_goodbye_carries_code_8_when_error_codes_is_active(
    options: dict[str, Any], offered: tuple[int, ...]
) -> None:
    """The refused peer reads the serverHello, then goodbyeCode(8) and the goodbye when its hello
    lists error-codes; the goodbye alone when it does not (and nothing else either way)."""
    made = Made()
    async with await serve("tcp://127.0.0.1:0", {"greeting": made}, max_connections=1, **options) as server:
        first = await _counted(server.url)
        frames = await _refused(server.url, encode(ClientHello(extensions=offered)))
        assert frames == (CODED if offered else CODED[1:])
        await first.aclose()


@pytest.mark.parametrize("options", SERVERS, ids=SERVER_IDS)
async def test_subscribes_in_the_hellos_read_are_not_served(options: dict[str, Any]) -> None:
    """Hello, subscribe and request in one write: only the refusal comes back (no onSubscribe,
    no onNext), and the publisher is never asked for a stream."""
    made = Made()
    async with await serve("tcp://127.0.0.1:0", {"greeting": made}, max_connections=1, **options) as server:
        first = await _counted(server.url)
        assert made.calls == 1
        subscribe = encode(Subscribe(publisher="greeting", subscriber=1, initial_demand=5))
        together = encode(ClientHello(extensions=ALL)) + subscribe + encode(Request(subscriber=1, demand=3))
        assert await _refused(server.url, together) == CODED
        assert made.calls == 1
        await first.aclose()


@pytest.mark.parametrize("options", SERVERS, ids=SERVER_IDS)
async def test_the_bytes_after_the_hello_are_not_read(options: dict[str, Any]) -> None:
    """A reserved type byte after the hello would be a connection error (§4.4) if it were read:
    the refusal comes first and the rest is discarded unread."""
    async with await serve("tcp://127.0.0.1:0", {"greeting": Made()}, max_connections=1, **options) as server:
        first = await _counted(server.url)
        assert await _refused(server.url, encode(ClientHello(extensions=ALL)) + b"\x7f" * 64) == CODED
        await first.aclose()


@pytest.mark.parametrize("options", SERVERS, ids=SERVER_IDS)
async def test_a_hello_written_a_byte_at_a_time(options: dict[str, Any]) -> None:
    """The hello in pieces (each drained: read apart, or together, as the kernel delivers them)."""
    async with await serve("tcp://127.0.0.1:0", {"greeting": Made()}, max_connections=1, **options) as server:
        first = await _counted(server.url)
        hello = encode(ClientHello(extensions=ALL))
        pieces = [hello[i : i + 1] for i in range(len(hello))]
        pieces.append(encode(Subscribe(publisher="greeting", subscriber=1, initial_demand=1)))
        assert await _refused(server.url, *pieces) == CODED
        await first.aclose()


async def test_the_server_keeps_serving_its_other_connections() -> None:
    """A stream open across the refusals ends whole; the counted connection is answered between
    them; once it closes, a new connection is served."""
    source = CountingSource(limit=20_000)
    made = Made()
    offer = {"greeting": made, "count": source}
    async with await serve("tcp://127.0.0.1:0", offer, max_connections=1) as server:
        first = await _counted(server.url)
        stream = Collector(batch=64, pattern=False)
        first.publisher("count").subscribe(stream)
        await stream.wait_items(100)
        for _ in range(3):
            subscribe = encode(Subscribe(publisher="count", subscriber=1, initial_demand=10))
            assert await _refused(server.url, encode(ClientHello(extensions=ALL)) + subscribe) == CODED
            assert await within(first.request("greeting")) == b"hello"
        await stream.finished()
        assert stream.error is None and stream.items == list(range(1, 20_001))
        assert len(server.connections) == 1
        await first.aclose()
        await within(first.wait_closed())
        second = await _counted(server.url)  # below the limit again
        await second.aclose()


async def test_a_resume_at_the_limit_is_not_a_new_connection() -> None:
    """On a resumable server at its limit of 1: while a session waits for its resume, a new
    session is refused with code 8 (and gets no resumeToken), and the session's own resume is
    answered ``resumed``: it was counted once, when it began."""
    async with await serve("tcp://127.0.0.1:0", {}, max_connections=1, resume=True) as server:
        host, port = _address(server.url)
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(encode(ClientHello(extensions=(RESUME_EXTENSION.id, ERROR_CODES.id))))
        token, received = await read_resume_token(reader)
        assert len(server.connections) == 1
        writer.transport.abort()  # the link breaks: the session waits for its resume

        assert await _refused(server.url, encode(ClientHello(extensions=ALL))) == CODED

        again_reader, again_writer = await asyncio.open_connection(host, port)
        again_writer.write(encode_message(RESUME, encode_resume(token, received)))
        answer = ResumeReplyParser()
        outcome = None
        while outcome is None:
            data = await within(again_reader.read(1 << 16))
            assert data, "the server closed before answering the resume"
            outcome = answer.feed(data)
        assert isinstance(outcome, Resumed), outcome
        assert len(server.connections) == 1
        again_writer.write(encode(Goodbye(reason="done")))
        await within(again_reader.read())  # the answering goodbye, then the end
        again_writer.close()


async def test_any_goodbye_at_the_hello_of_a_resumable_session_sends_no_token() -> None:
    """Not only the connection limit: a server requiring auth that a hello listing resume does
    not offer says goodbye at the hello too, and the session then has nothing to resume (its
    resumeToken, written after the goodbye, made the read fail)."""
    options: dict[str, Any] = {"resume": True, "authenticate": lambda credentials: "p", "auth_required": True}
    async with await serve("tcp://127.0.0.1:0", {}, **options) as server:
        frames = await _refused(
            server.url, encode(ClientHello(extensions=(RESUME_EXTENSION.id, ERROR_CODES.id)))
        )
    assert frames[0] == ExtensionMessage(type=GOODBYE_CODE, payload=b"\x03")
    goodbye = frames[1]
    assert isinstance(goodbye, Goodbye) and goodbye.reason.startswith("authentication required"), frames
    assert len(frames) == 2
