"""Raw byte pipes to the endpoint under test: TCP, TLS, Unix sockets and WebSocket (plain or TLS).

The driver speaks bytes, not frames, so that it can send anything (malformed input
included) and see exactly what comes back. Each :class:`RawTransport` writes bytes,
reads whatever arrived (``b""`` at end of input), half-closes if the transport can,
and aborts. A WebSocket carries the bytes in binary messages (PROTOCOL.md §1: frame
boundaries need not line up with message boundaries); it cannot half-close, so the
end of our output is our close frame, and our input ends at the peer's (what it sent
before that is still read). TLS
cannot half-close either (asyncio's TLS transport has no ``write_eof``): there the end
of our input is TLS close_notify and the close of the socket. A WebSocket's library queues
at most ``rstreams.net``'s ``INPUT_FRAMES`` frames read and not yet taken (as every connection
of rstreams' own does) before it stops reading the socket, not its default of 16.

:func:`client_ssl_context` builds the client side's :class:`ssl.SSLContext` from the
driver's options: a CA file to verify the server, a client certificate for mutual TLS,
or ``insecure`` (no verification at all, for self-signed test endpoints).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import socket
import ssl as _ssl
import sys
from typing import Any, Protocol

from rstreams._pem import ca_problem, pem_problem
from rstreams.conformance._publishers import address_text
from rstreams.net import parse_url

__all__ = ["RawListener", "RawTransport", "client_ssl_context", "open_raw"]

READ_SIZE = 64 * 1024
_unix_names = itertools.count()
WS_SUBPROTOCOL = "rsio.v0"  # rstreams.net offers it; a server without subprotocols ignores it


class RawTransport(Protocol):
    """A byte pipe to the endpoint under test."""

    half_close: bool
    """Whether :meth:`write_eof` leaves the read side open (TCP, Unix: yes; TLS, WebSocket: no)."""
    local_address: str
    """Our end's address as the endpoint sees it (:func:`address_text`), for ``conformance/echo``."""

    async def write(self, data: bytes) -> None:
        """Send ``data`` (one WebSocket message per call)."""

    async def read(self) -> bytes:
        """The next bytes that arrived; ``b""`` once the input ended. Cancel-safe."""

    async def write_eof(self) -> None:
        """End our output (TCP FIN; WebSocket close handshake)."""

    def abort(self) -> None:
        """Drop the connection at once (TCP RST where possible)."""


class _StreamTransport:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self.half_close = writer.can_write_eof()  # False over TLS
        self.local_address = address_text(writer.get_extra_info("sockname"))

    async def write(self, data: bytes) -> None:
        if data and not self._writer.is_closing():
            self._writer.write(data)
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()

    async def read(self) -> bytes:
        try:
            return await self._reader.read(READ_SIZE)
        except OSError:  # a reset; over TLS also ssl.SSLError, e.g. data after our close_notify
            return b""

    async def write_eof(self) -> None:
        if self._writer.is_closing():
            return
        if self.half_close:
            with contextlib.suppress(OSError):
                self._writer.write_eof()
        else:  # TLS: close_notify, then the socket; nothing more can be read
            self._writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._writer.wait_closed(), 2.0)

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
        self.local_address = address_text(ws.transport.get_extra_info("sockname"))
        self._closing: asyncio.Future[None] | None = None

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
        """Send our close frame and return, as TCP's FIN is sent: the peer's close frame (or the
        end of its TCP connection) then ends our input, read by :meth:`read` as before.

        Waiting for the close handshake here would wait on the reader: a peer still sending
        (an endless stream) fills the library's queue of messages not yet taken, the library
        stops reading the socket, and the peer's close frame behind them stays unread until
        the handshake's deadline.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._ws.close())  # it finishes at the connection's end
            self._closing.add_done_callback(lambda done: done.cancelled() or done.exception())  # seen
            await asyncio.sleep(0)  # the task's first step writes the close frame (then it waits)

    def abort(self) -> None:
        self._ws.transport.abort()


async def open_raw(
    url: str,
    *,
    rcvbuf: int | None = None,
    timeout: float = 5.0,  # noqa: ASYNC109
    ssl: _ssl.SSLContext | None = None,
    server_name: str | None = None,
) -> RawTransport:
    """Connect to ``url`` (``tcp://``, ``tls://``, ``unix://``, ``ws://``, ``wss://``).

    ``rcvbuf`` sets a small socket receive buffer (TCP/TLS/Unix) before connecting, so that
    a case that stops reading stalls the server quickly. ``ssl`` is the client context for
    ``tls``/``wss`` (default: :func:`client_ssl_context` with the system's CAs);
    ``server_name`` the name the certificate must carry (default: the URL's host).

    Raises:
        ValueError: an unsupported URL, or ``ssl`` with a plain scheme.
        OSError: the connection failed (``ssl.SSLError``, a subclass, when TLS did).
    """
    endpoint = parse_url(url)
    secure = endpoint.scheme in ("tls", "wss")
    if ssl is not None and not secure:
        raise ValueError(f"TLS options were given for {url!r}; use a tls:// or wss:// URL for TLS")
    context = (ssl or client_ssl_context()) if secure else None
    hostname = server_name or endpoint.host  # checked against the certificate unless insecure
    if endpoint.scheme in ("tcp", "tls", "unix"):
        family = socket.AF_UNIX if endpoint.scheme == "unix" else _family(endpoint.host)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            if family == socket.AF_UNIX and sys.platform == "linux":
                sock.bind(f"\0rsio-conformance-{os.getpid()}-{next(_unix_names)}")  # a name for echo's peer
            sock.setblocking(False)
            loop = asyncio.get_running_loop()
            address: Any = endpoint.path if endpoint.scheme == "unix" else (endpoint.host, endpoint.port)
            await asyncio.wait_for(loop.sock_connect(sock, address), timeout)
        except BaseException:
            sock.close()
            raise
        if endpoint.scheme == "unix":
            reader, writer = await asyncio.open_unix_connection(sock=sock, limit=READ_SIZE)
        elif context is None:
            reader, writer = await asyncio.open_connection(sock=sock, limit=READ_SIZE)
        else:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    sock=sock,
                    limit=READ_SIZE,
                    ssl=context,
                    server_hostname=hostname,
                    ssl_handshake_timeout=timeout,
                ),
                timeout,
            )
        return _StreamTransport(reader, writer)
    if endpoint.scheme in ("ws", "wss"):
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake

        from rstreams.net._websocket import INPUT_FRAMES

        tls: dict[str, Any] = {} if context is None else {"ssl": context, "server_hostname": hostname}
        try:
            ws = await asyncio.wait_for(
                connect(
                    endpoint.url,
                    subprotocols=[WS_SUBPROTOCOL],
                    compression=None,
                    proxy=None,
                    ping_interval=None,
                    max_size=None,
                    max_queue=INPUT_FRAMES,
                    open_timeout=timeout,
                    **tls,
                ),
                timeout,
            )
        except InvalidHandshake as error:  # an HTTP-level refusal: the endpoint is not reachable as RS.io
            raise ConnectionRefusedError(
                f"WebSocket handshake with {endpoint.url} failed: {error}"
            ) from error
        return _WebSocketTransport(ws)
    raise ValueError(
        f"the conformance driver speaks tcp://, tls://, unix://, ws:// and wss://, not {endpoint.scheme}://"
    )


@functools.cache
def client_ssl_context(
    cafile: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    *,
    insecure: bool = False,
) -> _ssl.SSLContext:
    """The driver's TLS client context (made once per set of arguments).

    ``cafile``: PEM CA certificates that verify the server (default: the system's).
    ``certfile``/``keyfile``: the client certificate and key presented for mutual TLS
    (``keyfile`` may be omitted when ``certfile`` holds both). ``insecure``: verify
    nothing, neither the chain nor the name (test endpoints with self-signed certificates
    only; the connection is encrypted but not authenticated).

    Raises:
        OSError: a file cannot be read. ssl.SSLError: a file holds no usable certificate or key.
        ValueError: ``keyfile`` without ``certfile``; a file that holds something else than
            what its option takes (a private key as ``cafile``, say: the message names the
            option, the file and what it holds).
    """
    if keyfile is not None and certfile is None:
        raise ValueError("a client key (--keyfile) needs its certificate (--certfile)")
    try:
        context = _ssl.create_default_context(_ssl.Purpose.SERVER_AUTH, cafile=cafile)
    except _ssl.SSLError as bad:
        problem = ca_problem(cafile, "--cafile") if cafile is not None else None
        if problem is None:
            raise
        raise ValueError(f"{problem} ({type(bad).__name__}: {bad})") from None
    if insecure:
        context.check_hostname = False
        context.verify_mode = _ssl.CERT_NONE
    if certfile is not None:
        try:
            context.load_cert_chain(certfile, keyfile)
        except _ssl.SSLError as bad:  # ssl says only "PEM lib"
            problem = pem_problem(certfile, keyfile, "--certfile", "--keyfile")
            if problem is None:
                raise
            raise ValueError(f"{problem} ({type(bad).__name__}: {bad})") from None
    return context


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class RawListener:
    """A listening socket whose connections arrive as :class:`RawTransport` objects.

    The client suite plays the server with it: :meth:`accept` waits for the next connection.
    ``url`` is where clients connect (``tcp://127.0.0.1:PORT`` or ``ws://127.0.0.1:PORT/rsio``).
    """

    def __init__(self) -> None:
        self.url = ""
        self._queue: asyncio.Queue[RawTransport] = asyncio.Queue()
        self._server: Any = None
        self._ws_server: Any = None

    async def start(self, scheme: str = "tcp") -> None:
        """Listen on an ephemeral loopback port, speaking ``scheme`` (``tcp`` or ``ws``)."""
        if scheme == "tcp":

            async def on_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._queue.put(_StreamTransport(reader, writer))

            self._server = await asyncio.start_server(on_stream, "127.0.0.1", 0, limit=READ_SIZE)
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"tcp://127.0.0.1:{port}"
        elif scheme == "ws":
            from websockets.asyncio.server import serve

            from rstreams.net._websocket import INPUT_FRAMES

            async def on_ws(ws: Any) -> None:
                transport = _WebSocketTransport(ws)
                await self._queue.put(transport)
                await ws.wait_closed()  # the handler's return would close the WebSocket

            self._ws_server = await serve(
                on_ws,
                "127.0.0.1",
                0,
                subprotocols=[WS_SUBPROTOCOL],
                compression=None,
                ping_interval=None,
                max_size=None,
                max_queue=INPUT_FRAMES,
            )
            port = next(iter(self._ws_server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}/rsio"
        else:
            raise ValueError(f"the client suite listens on tcp or ws, not {scheme!r}")

    async def accept(self) -> RawTransport:
        """The next connection, whenever it arrives (the caller bounds the wait). Cancel-safe."""
        return await self._queue.get()

    def accept_nowait(self) -> RawTransport | None:
        """The next connection if one is queued already, else ``None``."""
        return None if self._queue.empty() else self._queue.get_nowait()

    async def aclose(self) -> None:
        """Stop listening and drop connections not yet accepted."""
        for server in (self._server, self._ws_server):
            if server is not None:
                server.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(server.wait_closed(), 2)
        while not self._queue.empty():
            self._queue.get_nowait().abort()
