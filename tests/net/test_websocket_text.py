"""A text WebSocket message is a protocol violation (PROTOCOL.md §1), told by its type."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError, RemoteProtocolError
from rstreams.net import Connection, TextMessageError, connect, serve
from rstreams.wire import FrameError

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@pytest.mark.parametrize(
    ("text", "status"), [(b"not binary", 1003), (b"\xff", 1007)], ids=["utf8", "not-utf8"]
)
async def test_a_text_message_breaks_the_connection_with_text_message_error(text: bytes, status: int) -> None:
    """The client that gets text instead of the server's hello closes with 1003 (1007 for text
    that is not UTF-8, which websockets refuses before handing it over) and its streams fail with
    a ConnectionBrokenError whose cause is a TextMessageError: a RemoteProtocolError (a
    FrameError citing §1), still a ValueError for callers that caught the plain one."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    closed: list[int | None] = []
    done = asyncio.Event()

    async def speaks_text(ws: ServerConnection) -> None:
        await ws.recv()  # the client's hello
        await ws.send(text, text=True)
        await ws.wait_closed()
        closed.append(ws.close_code)
        done.set()

    async with ws_serve(speaks_text, "127.0.0.1", 0) as listener:
        port = listener.sockets[0].getsockname()[1]
        conn = await asyncio.wait_for(connect(f"ws://127.0.0.1:{port}/"), 10)
        try:
            with pytest.raises(ConnectionBrokenError) as broken:
                await asyncio.wait_for(conn.request("anything"), 10)
            await asyncio.wait_for(done.wait(), 10)
        finally:
            await conn.aclose()
    cause = broken.value.__cause__
    assert isinstance(cause, TextMessageError), repr(cause)
    assert issubclass(TextMessageError, FrameError) and issubclass(TextMessageError, RemoteProtocolError)
    assert issubclass(TextMessageError, ValueError)
    assert "PROTOCOL.md §1" in str(cause) and cause.reason == str(cause)
    assert closed == [status]


def _text(payload: bytes) -> bytes:
    """One text message from a client, masked with the key 0."""
    return bytes([0x81, 0x80 | len(payload)]) + bytes(4) + payload


def _close(code: int) -> bytes:
    """A client's close frame with ``code`` and no reason, masked with the key 0."""
    return bytes([0x88, 0x80 | 2]) + bytes(4) + code.to_bytes(2, "big")


async def _frame(reader: asyncio.StreamReader) -> tuple[int, bytes] | None:
    """The next unmasked frame a server sent (opcode, payload); ``None`` at its end of input (a
    reset raises)."""
    head = await reader.read(2)
    if not head:
        return None
    if len(head) == 1:
        head += await reader.readexactly(1)
    size = head[1] & 0x7F
    if size >= 126:
        size = int.from_bytes(await reader.readexactly(2 if size == 126 else 8), "big")
    return head[0] & 0x0F, await reader.readexactly(size)


async def _client_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The next masked frame a client sent (opcode, payload unmasked)."""
    head = await reader.readexactly(2)
    size = head[1] & 0x7F
    if size >= 126:
        size = int.from_bytes(await reader.readexactly(2 if size == 126 else 8), "big")
    key = await reader.readexactly(4)
    payload = await reader.readexactly(size)
    return head[0] & 0x0F, bytes(b ^ key[i % 4] for i, b in enumerate(payload))


async def test_after_its_1003_the_server_reads_the_peer_to_its_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer that sends a text message, then more frames than the input queue holds, then
    answers the server's close 1003: the server sends rstreams' reason, ends its output (the
    peer reads it at once, no reset) and reads on, discarding, so the peer's answer ends the
    connection at once (was: input no longer read, the close waited out close_timeout, 2 s, and
    an abort reset the peer). Another client is served meanwhile. The linger's time bound (and
    close_timeout, the same seconds) is 30 s here, so that only the answer can end it."""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 30.0)  # (serve's close_timeout)
    monkeypatch.setattr("rstreams.net._websocket.LINGER_SECONDS", 30.0)
    from rstreams.wire import ClientHello, encode
    from testkit.bound import within
    from testkit.net import raw_websocket
    from testkit.rawws import masked

    made: list[Connection] = []
    connected = asyncio.Event()

    def first(conn: Connection) -> None:
        made.append(conn)
        connected.set()

    offer = {"greeting": rstreams.just(b"hello")}
    async with await serve("ws://127.0.0.1:0/rsio", offer, on_connection=first) as server:
        reader, writer = await raw_websocket(server.url)
        try:
            writer.write(masked(encode(ClientHello())))
            await within(connected.wait())
            conn = made[0]
            writer.write(_text(b"not binary") + masked(bytes(100)) * 4)
            frames: list[tuple[int, bytes]] = []
            while (frame := await within(_frame(reader), 1)) is not None:
                frames.append(frame)
            close = frames[-1]
            assert close == (0x8, (1003).to_bytes(2, "big") + b"RS.io uses binary messages"), frames
            assert all(opcode == 0x2 for opcode, _ in frames[:-1]), frames  # (the server's hello)
            assert not conn.closed  # its input is read on, until the peer's answer
            async with await connect(server.url) as other:
                assert await within(other.request("greeting")) == b"hello"
            writer.write(masked(bytes(100)) + _close(1003))  # its answer, its socket closed after
            writer.write_eof()
            await within(conn.wait_closed(), 1)
        finally:
            writer.close()


async def test_a_peer_flooding_after_its_text_message_is_cut_off_after_linger_bytes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After its close 1003 the server discards what the peer sends at most LINGER_BYTES (4 MiB)
    before it aborts the socket, as after a close for a broken framing (was: reading stopped,
    the flood held in the socket's buffers until close_timeout, 2 s), which it logs."""
    from rstreams.wire import ClientHello, encode
    from testkit.bound import within
    from testkit.net import raw_websocket
    from testkit.rawws import masked

    connected: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    async with await serve("ws://127.0.0.1:0/rsio", {}, on_connection=connected.set_result) as server:
        _, writer = await raw_websocket(server.url)
        writer.write(masked(encode(ClientHello())))
        conn = await within(connected)
        writer.write(_text(b"not binary"))

        async def flood() -> None:
            block = masked(bytes(1 << 16))
            with contextlib.suppress(OSError):
                while True:
                    writer.write(block)
                    await writer.drain()

        flooding = asyncio.create_task(flood())
        try:
            with caplog.at_level(logging.INFO, logger="rstreams.net.websocket"):
                await within(conn.wait_closed(), 1)
        finally:
            flooding.cancel()
            writer.transport.abort()
    said = [record.getMessage() for record in caplog.records if record.name == "rstreams.net.websocket"]
    assert [line for line in said if "(LINGER_BYTES)" in line], said


async def test_a_client_reads_its_server_to_the_end_after_a_text_message() -> None:
    """The client's side: a server that sends a text message and more frames, then answers the
    client's close 1003 with its own and ends its output, ends the client's connection at once
    with a TextMessageError, and the client's end of output follows, no reset (was: 2 s, the
    client's input no longer read, then an abort that reset the server)."""
    from rstreams.wire import ServerHello, encode
    from testkit.bound import within
    from testkit.rawws import accept_upgrade

    closes: list[bytes] = []
    ends: list[bytes | None] = []  # what the server read after its answer: None for a reset
    done = asyncio.Event()

    async def speaks_text(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await accept_upgrade(reader, writer)
            hello = encode(ServerHello())
            frames = [bytes([0x81, 10]) + b"not binary"] + [bytes([0x82, len(hello)]) + hello] * 4
            writer.write(b"".join(frames))
            while (frame := await _client_frame(reader))[0] != 0x8:
                pass
            closes.append(frame[1])
            writer.write(b"\x88\x02" + frame[1][:2])  # the answer, then the end of output
            writer.write_eof()
            try:
                ends.append(await reader.read())
            except ConnectionResetError:
                ends.append(None)
        finally:
            writer.close()
            done.set()

    listener = await asyncio.start_server(speaks_text, "127.0.0.1", 0)
    async with listener:
        port = listener.sockets[0].getsockname()[1]
        conn = await within(connect(f"ws://127.0.0.1:{port}/"))
        with pytest.raises(ConnectionBrokenError) as broken:
            await within(conn.request("anything"), 1)
        await within(conn.wait_closed(), 1)
        await within(done.wait())
    assert isinstance(broken.value.__cause__, TextMessageError), repr(broken.value.__cause__)
    assert closes == [(1003).to_bytes(2, "big") + b"RS.io uses binary messages"]
    assert ends == [b""]
