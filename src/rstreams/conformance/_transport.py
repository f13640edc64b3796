"""Raw byte pipes to the endpoint under test: TCP, Unix sockets and WebSocket.

The driver speaks bytes, not frames, so that it can send anything (malformed input
included) and see exactly what comes back. Each :class:`RawTransport` writes bytes,
reads whatever arrived (``b""`` at end of input), half-closes if the transport can,
and aborts. A WebSocket carries the bytes in binary messages (PROTOCOL.md §1: frame
boundaries need not line up with message boundaries); it cannot half-close, so the
end of our input is its close handshake, after which nothing more can be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any, Protocol

from rstreams.net import parse_url

__all__ = ["RawTransport", "open_raw"]

READ_SIZE = 64 * 1024
WS_SUBPROTOCOL = "rsio.v0"  # rstreams.net offers it; a server without subprotocols ignores it


class RawTransport(Protocol):
    """A byte pipe to the endpoint under test."""

    half_close: bool
    """Whether :meth:`write_eof` leaves the read side open (TCP, Unix: yes; WebSocket: no)."""

    async def write(self, data: bytes) -> None:
        """Send ``data`` (one WebSocket message per call)."""

    async def read(self) -> bytes:
        """The next bytes that arrived; ``b""`` once the input ended. Cancel-safe."""

    async def write_eof(self) -> None:
        """End our output (TCP FIN; WebSocket close handshake)."""

    def abort(self) -> None:
        """Drop the connection at once (TCP RST where possible)."""


class _StreamTransport:
    half_close = True

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def write(self, data: bytes) -> None:
        if data and not self._writer.is_closing():
            self._writer.write(data)
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()

    async def read(self) -> bytes:
        try:
            return await self._reader.read(READ_SIZE)
        except ConnectionError:
            return b""

    async def write_eof(self) -> None:
        if not self._writer.is_closing() and self._writer.can_write_eof():
            with contextlib.suppress(OSError):
                self._writer.write_eof()

    def abort(self) -> None:
        sock = self._writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):  # linger 0: close sends RST, like a crash
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self._writer.transport.abort()


class _WebSocketTransport:
    half_close = False

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    async def write(self, data: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            await self._ws.send(data)

    async def read(self) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self._ws.recv()
        except ConnectionClosed:
            return b""
        if isinstance(message, str):  # RS.io is binary; make it fail the frame parser visibly
            return b"\x00" + message.encode()
        return bytes(message)

    async def write_eof(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(), 2.0)

    def abort(self) -> None:
        self._ws.transport.abort()


async def open_raw(url: str, *, rcvbuf: int | None = None, timeout: float = 5.0) -> RawTransport:  # noqa: ASYNC109
    """Connect to ``url`` (``tcp://``, ``unix://``, ``ws://``).

    ``rcvbuf`` sets a small socket receive buffer (TCP/Unix) before connecting, so that a
    case that stops reading stalls the server quickly.

    Raises:
        ValueError: an unsupported URL (``tls``/``wss`` are not supported by the driver yet).
        OSError: the connection failed.
    """
    endpoint = parse_url(url)
    if endpoint.scheme in ("tcp", "unix"):
        family = socket.AF_UNIX if endpoint.scheme == "unix" else _family(endpoint.host)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            loop = asyncio.get_running_loop()
            address: Any = endpoint.path if endpoint.scheme == "unix" else (endpoint.host, endpoint.port)
            await asyncio.wait_for(loop.sock_connect(sock, address), timeout)
        except BaseException:
            sock.close()
            raise
        if endpoint.scheme == "unix":
            reader, writer = await asyncio.open_unix_connection(sock=sock, limit=READ_SIZE)
        else:
            reader, writer = await asyncio.open_connection(sock=sock, limit=READ_SIZE)
        return _StreamTransport(reader, writer)
    if endpoint.scheme == "ws":
        from websockets.asyncio.client import connect

        ws = await asyncio.wait_for(
            connect(
                endpoint.url,
                subprotocols=[WS_SUBPROTOCOL],  # type: ignore[list-item]
                compression=None,
                proxy=None,
                ping_interval=None,
                max_size=None,
                max_queue=4,
                open_timeout=timeout,
            ),
            timeout,
        )
        return _WebSocketTransport(ws)
    raise ValueError(f"the conformance driver speaks tcp://, unix:// and ws://, not {endpoint.scheme}://")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
