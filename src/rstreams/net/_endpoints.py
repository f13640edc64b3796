"""Opening transports for an :class:`~rstreams.net._url.Endpoint`: connect and listen.

One function per direction, switching on the URL scheme once; what they produce is a
:class:`~rstreams.net._transport.Transport` driving a handler. The RS.io layers above
never see which transport they run on.

TLS: ``tls://`` and ``wss://`` need an :class:`ssl.SSLContext` on the server side; a
client without one gets :func:`ssl.create_default_context` (certificate and host name
verified). Passing ``ssl=`` with a plain scheme is refused, so a URL never lies about
whether the connection is encrypted.

A WebSocket server answers only at its URL's path (404 elsewhere), only to clients that
offer the ``rsio.v0`` subprotocol (the draft asks transports to signal the protocol
version where they can), and to browser pages only from its own origin or those allowed
(:mod:`rstreams.net._origins`; others get 403). WebSocket clients never use an HTTP proxy
from the environment: an RS.io URL names the peer to connect to, and nothing else is contacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl as _ssl
from collections.abc import Callable, Iterator
from typing import Any

from rstreams.errors import MissingExtraError
from rstreams.net._admission import Admission, AdmittingServer, Unlimited
from rstreams.net._origins import origins_allowed, own_origins
from rstreams.net._stream import StreamProtocol
from rstreams.net._transport import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, TransportHandler
from rstreams.net._url import Endpoint

__all__ = ["Listener", "connect_endpoint", "listen_endpoint"]

HandlerFactory = Callable[[], TransportHandler]


@contextlib.contextmanager
def _websockets_extra(endpoint: Endpoint) -> Iterator[None]:
    """Turn the import error of a missing websockets package into one naming the extra."""
    try:
        yield
    except ModuleNotFoundError as missing:
        if isinstance(missing, MissingExtraError) or (missing.name or "").partition(".")[0] != "websockets":
            raise
        raise MissingExtraError(
            f"{endpoint.scheme}:// needs the websockets extra: pip install 'rstreams[websockets]'",
            name=missing.name,
        ) from missing


def _check_ssl(
    endpoint: Endpoint, context: _ssl.SSLContext | None, *, server: bool
) -> _ssl.SSLContext | None:
    if context is not None and not isinstance(context, _ssl.SSLContext):
        raise TypeError(f"ssl= needs an ssl.SSLContext, got {context!r}")
    if not endpoint.secure:
        if context is not None:
            secure = {"tcp": "tls", "ws": "wss"}.get(endpoint.scheme, "tls")
            raise ValueError(f"ssl= was given for {endpoint.url!r}; use a {secure}:// URL for TLS")
        return None
    if context is None:
        if server:
            raise ValueError(f"serving {endpoint.url!r} needs ssl=an ssl.SSLContext with a certificate")
        return _ssl.create_default_context()
    return context


async def connect_endpoint(
    endpoint: Endpoint,
    handler: TransportHandler,
    *,
    ssl: _ssl.SSLContext | None = None,
    high: int = DEFAULT_HIGH_WATER,
    low: int = DEFAULT_LOW_WATER,
    handshake_timeout: float | None = 10.0,
) -> asyncio.Task[None] | None:
    """Connect and call ``handler.connection_made``; returns the WebSocket's task, if any.
    ``handshake_timeout``: for ``tls``, ``ws`` and ``wss``, the seconds the opening (TCP connect,
    TLS handshake, HTTP upgrade) has, as ``connect(handshake_timeout=...)`` says; ``None``: no bound
    (asyncio's own 60 s for a TLS handshake).

    Raises:
        OSError: the connection could not be made (refused, unreachable, TLS failure);
            ``TimeoutError`` without an ``errno`` when the opening took ``handshake_timeout``.
    """
    loop = asyncio.get_running_loop()
    context = _check_ssl(endpoint, ssl, server=False)
    scheme = endpoint.scheme
    if scheme in ("tcp", "tls"):
        # tls: a listener that accepts and says nothing would hold the TLS handshake for asyncio's
        # 60 s; bounded as a WebSocket's opening is (tcp: the connect alone, the system's bound)
        async with asyncio.timeout(handshake_timeout if context is not None else None):
            await loop.create_connection(
                lambda: StreamProtocol(handler, high=high, low=low),
                endpoint.host,
                endpoint.port,
                ssl=context,
                server_hostname=endpoint.host if context is not None else None,
            )
        return None
    if scheme == "unix":
        await loop.create_unix_connection(lambda: StreamProtocol(handler, high=high, low=low), endpoint.path)
        return None
    with _websockets_extra(endpoint):
        from rstreams.net._websocket import WebSocketTransport, open_websocket

    ws = await open_websocket(endpoint, context, handshake_timeout)
    transport = WebSocketTransport(ws, handler, high=high, low=low)
    return asyncio.create_task(transport.run(), name=f"rstreams-ws {endpoint.url}")


class Listener:
    """A listening socket (any scheme); :meth:`close` stops accepting new connections."""

    def __init__(self, endpoint: Endpoint, server: Any) -> None:
        self.endpoint = endpoint
        self._server = server
        self._unlinked = False

    def close(self) -> None:
        self._server.close()
        if self.endpoint.scheme == "unix" and not self._unlinked:
            self._unlinked = True  # asyncio (before 3.13) leaves the socket file behind
            with contextlib.suppress(OSError):
                os.unlink(self.endpoint.path)

    async def wait_closed(self) -> None:
        with contextlib.suppress(Exception):
            await self._server.wait_closed()


async def listen_endpoint(
    endpoint: Endpoint,
    handler_factory: HandlerFactory,
    *,
    ssl: _ssl.SSLContext | None = None,
    high: int = DEFAULT_HIGH_WATER,
    low: int = DEFAULT_LOW_WATER,
    admission: Admission | None = None,
    origins: tuple[str, ...] | None = (),
    accepted: Callable[[object], object] | None = None,
    handshake_timeout: float | None = 10.0,
) -> Listener:
    """Start listening; each accepted connection gets ``handler_factory()`` as its handler.

    With ``admission``, connections of every scheme are accepted within its budget
    (:mod:`rstreams.net._admission`; for WebSocket, :class:`~rstreams.net._websocket.AdmittedConnection`);
    without, ``tls``/``wss`` connections are accepted that way too, with no budget, on an event
    loop other than asyncio's (uvloop's accepting makes a connection outside a task).
    The returned Listener's ``endpoint`` carries the bound port (when 0 was asked for).
    ``origins``: for ``ws``/``wss``, the browser origins allowed besides the server's own (checked
    by :func:`~rstreams.net._origins.check_origins`; ``None``: all).
    ``accepted``: for ``wss``, called with each accepted socket's WebSocket connection as it is
    made, in the task that then awaits its TLS handshake (a ``wss`` handler is made only after
    the TLS and HTTP handshakes; :meth:`~rstreams.net._pending.Doorway.accepted`).
    ``handshake_timeout``: for ``tls``, the seconds a connection has for its TLS handshake
    (asyncio's ``ssl_handshake_timeout``); for ``ws``/``wss``, for its opening handshake, the
    HTTP upgrade (websockets' ``open_timeout``, counted once the socket is up; websockets bounds
    a TLS handshake it makes itself by it too); after it the connection is closed without an
    answer. ``None``: no limit (asyncio's own 60 s for a ``tls`` handshake). ``serve()`` passes
    its own, so that the opening is bounded by the same seconds as the clientHello after it.
    """
    loop = asyncio.get_running_loop()
    context = _check_ssl(endpoint, ssl, server=True)
    scheme = endpoint.scheme
    # tls: a peer that connects and says nothing would hold its TLS handshake for asyncio's 60 s
    tls_timeout = handshake_timeout if context is not None else None
    if admission is None and context is not None and not isinstance(loop, asyncio.BaseEventLoop):
        # asyncio's own loops make each accepted connection in a task that then awaits its TLS
        # handshake, where a server closing finds and aborts it (rstreams.net._pending.Doorway);
        # another loop's (uvloop's) may make it outside one, out of reach: accepted here
        # instead, in tasks, with a budget that never runs out.
        admission = Unlimited(loop)

    def protocol() -> StreamProtocol:
        return StreamProtocol(handler_factory(), high=high, low=low)

    if scheme in ("tcp", "tls", "unix"):
        serving = admission is None
        if scheme == "unix":
            server = await loop.create_unix_server(protocol, endpoint.path, start_serving=serving)
        else:
            server = await loop.create_server(
                protocol,
                endpoint.host,
                endpoint.port,
                ssl=context,
                ssl_handshake_timeout=tls_timeout,
                start_serving=serving,
            )
        bound = endpoint if scheme == "unix" else endpoint.with_port(server.sockets[0].getsockname()[1])
        if admission is None:
            return Listener(bound, server)
        return Listener(bound, AdmittingServer.start(server, protocol, admission, context, tls_timeout))
    from http import HTTPStatus

    from rstreams.net._closing import LINGER_SECONDS
    from rstreams.net._pending import Pending

    with _websockets_extra(endpoint):
        from websockets.asyncio.server import ServerConnection
        from websockets.asyncio.server import serve as ws_serve
        from websockets.http11 import Request, Response

        from rstreams.net._websocket import (
            SUBPROTOCOL,
            AcceptedElsewhere,
            AdmittedConnection,
            BoundedServerConnection,
            WebSocketTransport,
            origin_refused,
            subprotocol_refused,
            upgrade_required,
            without_body_for_head,
        )

    served_path = endpoint.path.partition("?")[0]

    def check_path(ws: ServerConnection, request: Request) -> Response | None:
        if isinstance(ws, AdmittedConnection):
            ws.handshake_started()
        if request.path.partition("?")[0] != served_path:
            return ws.respond(HTTPStatus.NOT_FOUND, f"RS.io is served at {served_path}\n")
        return None

    def answered(ws: ServerConnection, request: Request, response: Response) -> Response | None:
        refused = (
            upgrade_required(ws, request, response)
            or origin_refused(ws, request, response)
            or subprotocol_refused(ws, request, response)
        )
        if isinstance(ws, AdmittedConnection):
            ws.handshake_answered()
        return without_body_for_head(request, refused or response)

    async def handle(ws: ServerConnection) -> None:
        handler = handler_factory()
        if isinstance(ws, AdmittedConnection):  # charged until its RS.io connection is established
            ws.established = (lambda: handler.established) if isinstance(handler, Pending) else (lambda: True)
        await WebSocketTransport(ws, handler, high=high, low=low).run()

    watch = accepted if scheme == "wss" else None
    create_connection: type[ServerConnection] = BoundedServerConnection
    if watch is not None:
        told = watch  # (a name mypy keeps narrowed in the class)

        class Watched(BoundedServerConnection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                told(self)

        create_connection = Watched

    # The origins allowed: the list is websockets' own (its handshakes read it); the server's
    # own origins join once its port is bound, before it serves.
    allowed = origins_allowed(origins)
    ws_server = await ws_serve(
        handle,
        endpoint.host,
        endpoint.port,
        ssl=context,
        compression=None,
        subprotocols=[SUBPROTOCOL],
        ping_interval=None,
        close_timeout=LINGER_SECONDS,  # the lingering close's bound (rstreams.net._websocket)
        open_timeout=handshake_timeout,  # the upgrade's bound: serve()'s, not websockets' 10 s
        origins=allowed,
        process_request=check_path,
        process_response=answered,
        start_serving=False,
        create_connection=create_connection,
    )
    bound = endpoint.with_port(ws_server.sockets[0].getsockname()[1])
    if allowed is not None:
        allowed[1:1] = own_origins(bound.host, bound.port, secure=bound.secure)
    if admission is None:
        await ws_server.start_serving()
        return Listener(bound, ws_server)
    # Accepting within the budget: the websockets server never listens (on any loop: uvloop's
    # accepting cannot be taken off the loop once started) but is told it serves (its handshakes
    # answer 503 otherwise); the admitting listener accepts instead, each connection in a task of
    # its own (where the doorway finds a wss:// TLS handshake to abort), and makes each as
    # websockets' own serve() would, with the same subprotocol and no compression.
    ws_server.server = AcceptedElsewhere(ws_server.server)
    budget = admission  # (a name mypy keeps narrowed in the closure)

    def connection() -> AdmittedConnection:
        made = AdmittedConnection(ws_server, budget, allowed)
        if watch is not None:
            watch(made)
        return made

    return Listener(bound, AdmittingServer.start(ws_server, connection, admission, context))
