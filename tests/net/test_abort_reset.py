"""A TCP, TLS or WebSocket (``ws://``, ``wss://``) transport aborted with bytes still unsent is
reset, not closed (PROTOCOL.md §9.1).

A server closed while a peer that stops reading is flooded with elements says goodbye; the
goodbye cannot go out behind the unsent elements, so the bounded close ends in an abort.
A close there would let the peer read every byte the kernel holds and then an orderly end of
input, maybe at a frame's boundary: a cut stream that looks finished. A reset makes its
reads end in ``ConnectionResetError``. The peer is a raw socket that reads nothing until the
server's side is gone, then reads to the end (over ``ws://`` and ``wss://`` it makes its
upgrade by hand, under its own TLS session on ``wss://``). A Unix socket cannot be reset: its
peer reads the bytes sent and the end, without the whole goodbye (an error for it, §9.3).
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import ssl
from pathlib import Path

import pytest

import rstreams
from rstreams.net import Connection, serve
from rstreams.wire import ClientHello, FrameParser, Goodbye, OnNext, ServerHello, Subscribe, encode
from testkit.bound import WAIT, within
from testkit.net import listen_url

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60), pytest.mark.usefixtures("nothing_escapes")]

ELEMENT = b"x" * (1 << 16)
OPENING = encode(ClientHello()) + encode(Subscribe(publisher="flood", subscriber=1, initial_demand=1 << 20))


def _flood(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.from_iterable(itertools.repeat(ELEMENT))


async def _peer(address: str) -> socket.socket:
    """A connected raw socket with a small receive buffer (so that the server's output backs up soon)."""
    sock = socket.socket(socket.AF_UNIX if address.startswith("/") else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 14)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    if address.startswith("/"):
        await within(loop.sock_connect(sock, address))
    else:
        host, port = address.rsplit(":", 1)
        await within(loop.sock_connect(sock, (host, int(port))))
    return sock


async def _read_to_the_end(sock: socket.socket) -> tuple[bytearray, BaseException | None]:
    """Read until the end of input or an error: the bytes read, and the error (``None``: an end)."""
    loop = asyncio.get_running_loop()
    received = bytearray()
    try:
        while chunk := await within(loop.sock_recv(sock, 1 << 16)):
            received += chunk
    except ConnectionError as exc:
        return received, exc
    return received, None


async def _serve_and_stall(url: str, server_ssl: ssl.SSLContext | None) -> socket.socket:
    """A server flooding a peer that stops reading at once, closed: its goodbye waits behind the
    unsent elements, so its bounded close ends in an abort. Returns the peer's socket then."""
    connections: list[Connection] = []
    server = await serve(url, {"flood": _flood}, ssl=server_ssl, on_connection=connections.append)
    closed = False
    sock = None
    try:
        address = server.url.split("://", 1)[1]
        sock = await _peer(address)
        loop = asyncio.get_running_loop()
        if server_ssl is not None:
            tls, _, outgoing = await _handshake(sock, address.rsplit(":", 1)[0])
            tls.write(OPENING)
            await within(loop.sock_sendall(sock, outgoing.read()))
        else:
            await within(loop.sock_sendall(sock, OPENING))
        async with asyncio.timeout(WAIT):  # until the server holds output it cannot send
            while not connections or not _holds_unsent(connections[0]):  # noqa: ASYNC110 (no event says so)
                await asyncio.sleep(0.01)
        closed = True
        await within(server.aclose())
        return sock
    finally:
        if not closed:
            if sock is not None:
                sock.close()
            await within(server.aclose())


def _holds_unsent(conn: Connection) -> bool:
    transport = conn._pump.outbox.transport
    return transport is not None and transport.get_write_buffer_size() > 0


async def _handshake(sock: socket.socket, host: str) -> tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO]:
    """A TLS client's handshake on ``sock`` (the server's certificate is not checked: only the
    bytes under TLS matter here); the session, its incoming and its outgoing buffer."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    loop = asyncio.get_running_loop()
    while True:
        try:
            tls.do_handshake()
            return tls, incoming, outgoing
        except ssl.SSLWantReadError:
            await within(loop.sock_sendall(sock, outgoing.read()))
            data = await within(loop.sock_recv(sock, 1 << 16))
            assert data, "the server ended its TLS handshake"
            incoming.write(data)


@pytest.fixture(autouse=True)
def _short_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's bounded close (CLOSE_TIMEOUT) in a fraction of its 5 s."""
    monkeypatch.setattr("rstreams.net._server.CLOSE_TIMEOUT", 0.5)


@pytest.mark.parametrize("scheme", ["tcp", "tls"])
async def test_an_abort_with_output_unsent_resets_the_peer(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext
) -> None:
    sock = await _serve_and_stall(listen_url(scheme, tmp_path), server_ssl if scheme == "tls" else None)
    try:
        read, error = await _read_to_the_end(sock)
    finally:
        sock.close()
    assert isinstance(error, ConnectionResetError), f"{len(read)} bytes, then {error or 'the end of input'}"


async def test_a_unix_socket_aborted_ends_without_a_whole_goodbye(tmp_path: Path) -> None:
    """No reset on a Unix socket: the peer reads what was sent, then the end of input."""
    sock = await _serve_and_stall(listen_url("unix", tmp_path), None)
    try:
        read, error = await _read_to_the_end(sock)
    finally:
        sock.close()
    assert error is None
    parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
    frames = parser.feed(read)
    assert isinstance(frames[0], ServerHello) and isinstance(frames[-1], OnNext), frames[-1]
    assert not any(isinstance(frame, Goodbye) for frame in frames)  # the goodbye did not go out


class _Plain:
    """Bytes to and from the peer's raw socket as they are (``ws://``)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    async def send(self, data: bytes) -> None:
        await within(asyncio.get_running_loop().sock_sendall(self.sock, data))

    async def recv(self) -> bytes:
        """At most one byte: the answer's head only is read, the rest is frames left unread."""
        return await within(asyncio.get_running_loop().sock_recv(self.sock, 1))


class _UnderTLS(_Plain):
    """Bytes to and from the peer's raw socket under its TLS session (``wss://``)."""

    def __init__(
        self, sock: socket.socket, session: tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO]
    ) -> None:
        super().__init__(sock)
        self.tls, self.incoming, self.outgoing = session

    async def send(self, data: bytes) -> None:
        self.tls.write(data)
        await super().send(self.outgoing.read())

    async def recv(self) -> bytes:
        while True:
            try:
                return self.tls.read(1)
            except ssl.SSLWantReadError:
                record = await within(asyncio.get_running_loop().sock_recv(self.sock, 1 << 10))
                if not record:
                    return b""
                self.incoming.write(record)


async def _ws_open(peer: _Plain, address: str) -> None:
    """A raw WebSocket upgrade by ``peer`` (RFC 6455 §4.1), then the opening in one masked binary message."""
    host, path = address.split("/", 1)
    request = (
        f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n"
    )
    await peer.send(request.encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = await peer.recv()  # the answer's head only: the rest is frames
        assert chunk, answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 101"), answer
    mask = b"\x01\x02\x03\x04"
    payload = bytes(byte ^ mask[i % 4] for i, byte in enumerate(OPENING))
    assert len(OPENING) < 126  # a one-byte length
    head = bytes([0x82, 0x80 | len(OPENING)])  # FIN, binary; masked
    await peer.send(head + mask + payload)


@pytest.mark.parametrize("scheme", ["ws", "wss"])
async def test_a_websocket_aborted_with_output_unsent_resets_the_peer(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext
) -> None:
    """``wss://`` as ``ws://``: the reset is the TCP socket's, under the TLS session and the WebSocket."""
    connections: list[Connection] = []
    context = server_ssl if scheme == "wss" else None
    url = listen_url(scheme, tmp_path)
    server = await serve(url, {"flood": _flood}, ssl=context, on_connection=connections.append)
    address = server.url.split("://", 1)[1]
    sock = await _peer(address.split("/", 1)[0])
    try:
        peer = _Plain(sock)
        if context is not None:
            peer = _UnderTLS(sock, await _handshake(sock, address.split("/", 1)[0].rsplit(":", 1)[0]))
        await _ws_open(peer, address)
        async with asyncio.timeout(WAIT):
            while not connections or not _holds_unsent(connections[0]):  # noqa: ASYNC110 (no event says so)
                await asyncio.sleep(0.01)
        await within(server.aclose())
        read, error = await _read_to_the_end(sock)
    finally:
        sock.close()
    assert isinstance(error, ConnectionResetError), f"{len(read)} bytes, then {error or 'the end of input'}"
