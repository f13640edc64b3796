"""Each transport carries raw bytes both ways, reports EOF/close, and signals backpressure."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import time
from pathlib import Path

import pytest

from rstreams.net._endpoints import connect_endpoint, listen_endpoint
from rstreams.net._stream import open_pipe_transport
from rstreams.net._url import parse_url
from testkit.bound import within
from testkit.net import RecordingHandler

PAYLOAD = bytes(range(256)) * 1000  # 256 kB: several reads and, for WebSocket, several messages


async def _echo_round_trip(
    url: str, ssl_server: ssl.SSLContext | None, ssl_client: ssl.SSLContext | None
) -> None:
    servers: list[RecordingHandler] = []

    def make() -> RecordingHandler:
        handler = RecordingHandler(echo=True)
        servers.append(handler)
        return handler

    listener = await listen_endpoint(parse_url(url), make, ssl=ssl_server)
    try:
        client = RecordingHandler()
        task = await connect_endpoint(listener.endpoint, client, ssl=ssl_client)
        await within(client.made.wait())
        assert client.transport is not None
        half = len(PAYLOAD) // 2
        client.transport.writelines([PAYLOAD[:half], PAYLOAD[half:]])
        assert await client.wait_bytes(len(PAYLOAD)) == PAYLOAD
        client.transport.close()
        assert await within(client.lost) is None
        assert await within(servers[0].lost) is None
        assert bytes(servers[0].data) == PAYLOAD
        if task is not None:
            await within(task)
    finally:
        listener.close()
        await within(listener.wait_closed())


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_tcp_echo() -> None:
    """TCP on 127.0.0.1 carries bytes both ways; close is orderly on both ends."""
    await _echo_round_trip("tcp://127.0.0.1:0", None, None)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_tcp_ipv6_echo() -> None:
    """TCP on ::1 (skipped where the machine has no IPv6 loopback)."""
    try:
        await _echo_round_trip("tcp://[::1]:0", None, None)
    except OSError as error:  # pragma: no cover - depends on the machine
        pytest.skip(f"no IPv6 loopback: {error}")


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_tls_echo(server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext) -> None:
    """TLS with a self-signed certificate the client trusts explicitly."""
    await _echo_round_trip("tls://127.0.0.1:0", server_ssl, client_ssl)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_unix_echo(tmp_path: Path) -> None:
    """A Unix domain socket in the test's temporary directory."""
    await _echo_round_trip(f"unix://{tmp_path / 'rs.sock'}", None, None)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_websocket_echo() -> None:
    """WebSocket: one write may span messages, messages join back into the byte stream."""
    await _echo_round_trip("ws://127.0.0.1:0/rs", None, None)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_secure_websocket_echo(server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext) -> None:
    """wss:// is WebSocket over TLS."""
    await _echo_round_trip("wss://127.0.0.1:0/rs", server_ssl, client_ssl)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_tls_client_rejects_untrusted_certificate(server_ssl: ssl.SSLContext) -> None:
    """A default client context verifies the certificate: a self-signed one fails with an OSError."""
    listener = await listen_endpoint(parse_url("tls://127.0.0.1:0"), RecordingHandler, ssl=server_ssl)
    try:
        with pytest.raises(ssl.SSLError):
            await connect_endpoint(listener.endpoint, RecordingHandler())
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("scheme", ["ws", "wss"])
async def test_a_websocket_path_the_server_lacks_is_named(
    scheme: str, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """A server's HTTP 404 for another path says so, not that TLS refused a client certificate."""
    secure = scheme == "wss"
    listener = await listen_endpoint(
        parse_url(f"{scheme}://127.0.0.1:0/rs"), RecordingHandler, ssl=server_ssl if secure else None
    )
    try:
        wrong = parse_url(f"{scheme}://127.0.0.1:{listener.endpoint.port}/other")
        with pytest.raises(ConnectionRefusedError) as refused:
            await connect_endpoint(wrong, RecordingHandler(), ssl=client_ssl if secure else None)
        assert "HTTP 404 (nothing serves RS.io at the path '/other' of this server)" in str(refused.value)
        assert "certificate" not in str(refused.value)
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_pipes_both_ways() -> None:
    """Two os.pipe pairs make one full-duplex transport per side."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    a, b = RecordingHandler(), RecordingHandler(echo=True)
    ta = await open_pipe_transport(a, a_read, a_write)
    await open_pipe_transport(b, b_read, b_write)
    ta.writelines([PAYLOAD])
    assert await a.wait_bytes(len(PAYLOAD)) == PAYLOAD
    ta.close()
    assert await within(b.lost) is None or b.eof
    await within(a.lost)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("url", ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/"])
async def test_pause_writing_when_the_peer_does_not_read(url: str) -> None:
    """Unsent bytes above the high mark pause writing; reading again resumes it."""
    servers: list[RecordingHandler] = []
    accepted = asyncio.Event()

    def make() -> RecordingHandler:
        handler = RecordingHandler()
        servers.append(handler)
        accepted.set()
        return handler

    listener = await listen_endpoint(parse_url(url), make)
    try:
        client = RecordingHandler()
        await connect_endpoint(listener.endpoint, client, high=64 * 1024, low=16 * 1024)
        await within(client.made.wait())
        await within(accepted.wait())
        server = servers[0]
        await within(server.made.wait())
        assert server.transport is not None and client.transport is not None
        server.transport.pause_reading()
        block = b"x" * 65536
        written = 0
        while client.paused == 0:
            client.transport.writelines([block])
            written += len(block)
            assert written < 256 * 1024 * 1024, "the transport never reported backpressure"
            await asyncio.sleep(0)  # let the loop try to send; the peer's kernel buffers fill up
        server.transport.resume_reading()
        await client.wait_for(lambda: client.resumed > 0, "resume_writing")
        await server.wait_for(lambda: len(server.data) >= written, "all bytes")
        client.transport.close()
        await within(client.lost)
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_half_closing_a_connection_the_peer_reset_aborts_it_instead_of_raising() -> None:
    """write_eof() on a TCP connection the peer has reset (ENOTCONN) ends the transport quietly,
    like a write to a broken pipe, rather than raising into the reader that called it."""
    server = RecordingHandler()
    listener = await listen_endpoint(parse_url("tcp://127.0.0.1:0"), lambda: server)
    try:
        endpoint = listener.endpoint
        peer = await asyncio.to_thread(socket.create_connection, (endpoint.host, endpoint.port))
        await within(server.made.wait())
        assert server.transport is not None
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()  # a reset
        _wait_for_reset(server.transport.get_extra_info("socket"))
        server.transport.write_eof()  # the peer is gone: must not raise
        assert await within(server.lost) is None
    finally:
        listener.close()
        await within(listener.wait_closed())


def _wait_for_reset(transport_socket: socket.socket) -> None:
    """Until the peer's reset has reached the socket; on the loop's thread on purpose, so that
    asyncio cannot read it first."""
    with transport_socket.dup() as sock:
        while True:
            try:
                sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            except OSError:
                return
            return
