"""A server closing says goodbye to the transports at the hello stage too (PROTOCOL.md §9.1, §10).

An accepted transport whose clientHello has not come (with ``resume=``: whose first byte has
not told a new session from a resume) is not among the server's connections. ``aclose()``
says goodbye ``server closing`` to it, without a goodbyeCode (no hello yet, §19.1), closes its
sending side and closes it once the peer ends its input (or the linger's bounds pass); what the
peer sends after that goodbye, a late clientHello or a resume, is not served. ``aclose()``
returns with no transport of the server left open; so does ``rstreams serve`` stopped by
SIGTERM. Raw peers read the bytes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.net import Connection, Server, serve
from rstreams.net._stream import StreamProtocol
from rstreams.wire import ClientHello, ExtensionMessage, FrameParser, Goodbye, ServerHello, Subscribe, encode
from rstreams.wire._resume import RESUME, encode_message, encode_resume
from rstreams.wire.extensions import GOODBYE_CODE, REGISTERED
from testkit.bound import within
from testkit.net import listen_url

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60), pytest.mark.usefixtures("nothing_escapes")]

ALL = tuple(ext.id for ext in REGISTERED)
HELLO = encode(ClientHello(extensions=ALL))
SUBSCRIBE = encode(Subscribe(publisher="greeting", subscriber=1, initial_demand=4))
RESUMES = [False, True]
RESUME_IDS = ["plain", "resume"]


@pytest.fixture
def short_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lingering close's time bound at 0.2 s instead of LINGER_SECONDS (2 s), for the tests
    whose peer keeps its side open: what they check is that the close ends at the bound (its
    exact time is pinned on a virtual clock in test_closing and test_server_timers)."""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)


class Watched:
    """A server's publisher factory and on_connection that count what they were asked for."""

    def __init__(self) -> None:
        self.served = 0
        self.announced: list[Connection] = []

    def greeting(self, params: dict[str, str]) -> rstreams.Flow[bytes]:
        self.served += 1
        return rstreams.just(b"hello")

    def on_connection(self, conn: Connection) -> None:
        self.announced.append(conn)


async def _server(url: str, watched: Watched, resume: bool) -> Server:
    return await serve(
        url,
        {"greeting": watched.greeting},
        on_connection=watched.on_connection,
        resume=resume,
        handshake_timeout=None,  # nothing but aclose() ends a silent peer here
    )


async def _open(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw peer that has read the server's hello, and nothing else (so the server has
    accepted it)."""
    reader, writer, after = await _connect(url)
    assert after == [], after
    return reader, writer


async def _connect(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, list[object]]:
    """A raw peer that has read the server's hello; the frames read with it."""
    if url.startswith("unix://"):
        reader, writer = await asyncio.open_unix_connection(url.removeprefix("unix://"))
    else:
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
    received = b""
    while not _parser().feed(received):
        chunk = await within(reader.read(1 << 16))
        assert chunk, "the server closed before its hello"
        received += chunk
    frames = _parser().feed(received)
    assert isinstance(frames[0], ServerHello), frames
    return reader, writer, list(frames[1:])


def _parser() -> FrameParser:
    return FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)


async def _rest(reader: asyncio.StreamReader) -> list[object]:
    """The frames a peer that read the server's hello reads from then on, to the end of input."""
    return list(_parser().feed(await within(reader.read())))


def _all_closed(server: Server) -> None:
    """The server's bookkeeping holds no transport: none at the hello stage, none leaving."""
    assert server.connections == frozenset()
    assert len(server._doorway) == 0
    assert server._leaving == set()
    assert server._refused == set()


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
@pytest.mark.parametrize("scheme", ["tcp", "unix"])
async def test_a_silent_peer_reads_the_goodbye_then_the_end(
    scheme: str, resume: bool, tmp_path: Path
) -> None:
    watched = Watched()
    server = await _server(listen_url(scheme, tmp_path), watched, resume)
    reader, writer = await _open(server.url)
    closing = asyncio.ensure_future(server.aclose())
    try:
        assert await _rest(reader) == [Goodbye(reason="server closing")]  # no goodbyeCode before it
    finally:
        writer.close()
    await within(closing)
    assert watched.announced == []  # never a connection of the server's
    _all_closed(server)


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_a_client_hello_right_after_close_began_is_not_served(resume: bool) -> None:
    """The hello is in the server's socket before close(), not yet read: the goodbye goes first,
    and the hello and the subscribe written with it are discarded."""
    watched = Watched()
    server = await _server("tcp://127.0.0.1:0", watched, resume)
    reader, writer = await _open(server.url)
    writer.write(HELLO + SUBSCRIBE)
    await writer.drain()
    server.close()  # before the loop reads the hello
    try:
        assert await _rest(reader) == [Goodbye(reason="server closing")]
    finally:
        writer.close()
    await within(server.wait_closed())
    assert watched.served == 0
    assert watched.announced == []
    _all_closed(server)


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_what_comes_after_the_goodbye_is_not_served(resume: bool) -> None:
    """A peer that read the goodbye and the end, then sends its hello and a subscribe (or a
    resume): none of it is answered; the server closes once that peer ends its input."""
    watched = Watched()
    server = await _server("tcp://127.0.0.1:0", watched, resume)
    reader, writer = await _open(server.url)
    closing = asyncio.ensure_future(server.aclose())
    assert await _rest(reader) == [Goodbye(reason="server closing")]
    late = encode_message(RESUME, encode_resume(bytes(16), 0)) if resume else HELLO + SUBSCRIBE
    writer.write(late)  # the server's sending side is closed, its receiving side still reads
    await writer.drain()
    writer.write_eof()
    assert await within(reader.read()) == b""
    writer.close()
    await within(closing)
    assert watched.served == 0
    assert watched.announced == []
    _all_closed(server)


@pytest.mark.usefixtures("short_linger")
@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_aclose_leaves_no_transport_open(resume: bool) -> None:
    """Connections and transports at the hello stage alike: a silent peer, one that sent half
    its hello (with resume: half a resume), one that keeps its side open (closed at the
    linger's end) and a connected client.
    Each reads the end of input; the server's bookkeeping is empty."""
    watched = Watched()
    server = await _server("tcp://127.0.0.1:0", watched, resume)
    client = await rstreams.net.connect(server.url, resume=resume)
    assert await within(client.request("greeting")) == b"hello"
    silent = await _open(server.url)
    half = await _open(server.url)
    half[1].write(encode_message(RESUME, encode_resume(bytes(16), 0))[:5] if resume else HELLO[:2])
    await half[1].drain()
    open_side = await _open(server.url)
    await asyncio.sleep(0)
    await within(server.aclose())
    for reader, writer in (silent, half, open_side):
        frames = await _rest(reader)
        assert frames == [Goodbye(reason="server closing")], frames
        assert not any(isinstance(f, ExtensionMessage) and f.type == GOODBYE_CODE for f in frames)
        writer.close()
    assert client.closed
    await within(client.aclose())
    assert len(watched.announced) == 1  # the client's connection only
    _all_closed(server)


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_a_transport_accepted_while_closing_is_said_goodbye(resume: bool) -> None:
    """One that comes up after close() (its accept was under way) is said goodbye at once."""
    watched = Watched()
    server = await _server("tcp://127.0.0.1:0", watched, resume)
    server._doorway.close()  # as close() leaves it, with the listener still accepting
    server._closing = "server closing"
    reader, writer, after = await _connect(server.url)
    try:
        assert [*after, *await _rest(reader)] == [Goodbye(reason="server closing")]
    finally:
        writer.close()
    server._closing = None
    await within(server.aclose())
    assert watched.announced == []
    _all_closed(server)


@pytest.mark.usefixtures("short_linger")
@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_a_refused_peer_lingering_as_the_server_closes(resume: bool) -> None:
    """A peer refused at its hello (over max_connections) that keeps its side open and goes on
    writing: the server's close leaves its lingering close to end within its bounds."""
    watched = Watched()
    offer = {"greeting": watched.greeting}
    server = await serve("tcp://127.0.0.1:0", offer, max_connections=1, resume=resume)
    client = await rstreams.net.connect(server.url)
    assert await within(client.request("greeting")) == b"hello"
    reader, writer = await _open(server.url)
    writer.write(HELLO)
    await writer.drain()
    frames = await _rest(reader)
    assert isinstance(frames[-1], Goodbye) and frames[-1].reason.startswith("too many connections"), frames
    writer.write(SUBSCRIBE)  # after the refusal: discarded
    await writer.drain()
    await within(server.aclose())
    writer.close()
    await within(client.aclose())
    assert watched.served == 1  # the client's request only
    _all_closed(server)


@pytest.mark.timeout(240)  # (above its three waits on the child: 60 + 30 + 30 s of own time)
@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_rstreams_serve_stopped_by_sigterm_says_goodbye_to_a_silent_peer(resume: bool) -> None:
    """The command's shutdown is the server's aclose(): the silent peer reads the goodbye, the
    end, and the process exits 0 (bounded waits on another process: its own bounds)."""
    options = ["--resume"] if resume else []
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rstreams.cli", "serve", "tcp://127.0.0.1:0", *options,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        announced = (await within(process.stdout.readline(), 60, [process.pid])).decode()
        assert announced.startswith("serving "), announced
        reader, writer = await _open(announced.strip().rsplit(" on ", 1)[1])
        process.terminate()
        try:
            assert list(_parser().feed(await within(reader.read(), 30, [process.pid]))) == [
                Goodbye(reason="server closing")
            ]
        finally:
            writer.close()
        _, err = await within(process.communicate(), 30, [process.pid])
        assert process.returncode == 0, err
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.usefixtures("short_linger")
@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
async def test_a_transport_accepted_as_close_is_called_is_waited_for(
    resume: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() called between a socket's accept and its transport's start (here: as its protocol
    is made): wait_closed() returns only once that transport, said goodbye when it started, is
    closed (the peer keeps its side open: at the linger's end)."""
    watched = Watched()
    server = await _server("tcp://127.0.0.1:0", watched, resume)
    made = StreamProtocol.__init__

    def closing_as_made(protocol: StreamProtocol, *args: Any, **kwargs: Any) -> None:
        made(protocol, *args, **kwargs)
        server.close()

    monkeypatch.setattr(StreamProtocol, "__init__", closing_as_made)
    reader, writer, after = await _connect(server.url)
    monkeypatch.undo()
    await within(server.wait_closed())
    _all_closed(server)  # nothing left: the transport closed before wait_closed() returned
    try:
        assert [*after, *await _rest(reader)] == [Goodbye(reason="server closing")]
    finally:
        writer.close()
    assert watched.announced == []
