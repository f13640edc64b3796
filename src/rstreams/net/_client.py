"""``connect`` and ``connect_pipe``: open one RS.io connection as the client side."""

from __future__ import annotations

import ssl as _ssl
from collections.abc import Mapping
from typing import IO, Any

from rstreams.errors import ConnectionBrokenError, HandshakeTimeoutError, TLSRefusedError
from rstreams.net._channels import ChannelFactory, check_channels
from rstreams.net._closing import PIPE_ENDED_HINT, SILENT_HINT, check_handshake_timeout
from rstreams.net._codec import Codec
from rstreams.net._connection import Connection
from rstreams.net._endpoints import connect_endpoint
from rstreams.net._intake import DEFAULT_UNREAD_TIMEOUT
from rstreams.net._keepalive import DEFAULT_KEEPALIVE
from rstreams.net._messages import Handler, check_handlers
from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, check_resume, connect_resumable, resume_config
from rstreams.net._routes import Offer, Router
from rstreams.net._server import DEFAULT_HANDSHAKE_TIMEOUT
from rstreams.net._stream import open_pipe_transport
from rstreams.net._transport import (
    DEFAULT_HIGH_WATER,
    DEFAULT_LOW_WATER,
    TLS_REFUSAL_HINT,
    TLSEndedError,
    TLSServerError,
)
from rstreams.net._url import parse_url
from rstreams.observe._log import client_observer
from rstreams.wire import ConnectionConfig
from rstreams.wire._auth import as_credentials

__all__ = ["connect", "connect_pipe"]

_OPENING = {"tls": "TCP connect, TLS handshake", "ws": "TCP connect, HTTP upgrade"}
"""The steps of an opening ``handshake_timeout`` bounds before the transport is up, by scheme
(``wss``: both); ``tcp`` and ``unix`` have none of their own."""


async def connect(
    url: str,
    *,
    publishers: Offer | None = None,
    codec: Codec[Any] | None = None,
    config: ConnectionConfig | None = None,
    ssl: _ssl.SSLContext | None = None,
    high_water: int = DEFAULT_HIGH_WATER,
    low_water: int = DEFAULT_LOW_WATER,
    resume: Resume | bool | None = None,
    keepalive: float | None = DEFAULT_KEEPALIVE,
    idle_timeout: float | None = None,
    unread_timeout: float | None = DEFAULT_UNREAD_TIMEOUT,
    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
    auth: object = None,
    handlers: Mapping[str, Handler] | None = None,
    channels: Mapping[str, ChannelFactory] | None = None,
) -> Connection:
    """Connect to the RS.io server at ``url``; ``conn.publisher(name)`` then reads its streams.

    ``publishers`` (same forms as in :func:`serve`) is what this side offers to the
    server. The hello exchange runs in the background: frames may be sent at once
    (the draft's optimistic sending). Close with ``await conn.aclose()`` or ``async with``.

    ``resume=Resume(...)`` (or ``True`` for the defaults): if the server agrees, the
    connection survives its transport breaking: it reconnects by itself and the streams
    only pause (PROTOCOL.md §16).

    ``keepalive``: seconds (default 15) without receiving anything after which a ping is
    sent, if the server offers extension keepalive (PROTOCOL.md §14); ``None``: never.
    ``idle_timeout``: seconds without receiving anything after which this side says
    goodbye ``"idle timeout ..."`` (default ``None``: never; a server's pings keep an idle
    connection alive); on a resumable session it reconnects and resumes instead (§16).
    ``unread_timeout``: seconds (default 30) a server may leave this side's replies unread;
    meanwhile, once more than ``low_water`` bytes, at most ``UNREAD_MARK`` (16 KiB), of them
    wait unsent, counting on Linux what the socket holds back too, this side stops reading
    the server until they drain below a quarter of that (PROTOCOL.md §6.3, docs/security.md);
    then goodbye ``"peer not reading: ..."``. ``None``: no limit.
    ``handshake_timeout``: seconds (default 10) the server has to send its serverHello,
    counted from when the transport is up (PROTOCOL.md §4.1); a ``tls://``, ``ws://`` or
    ``wss://`` connection's opening (TCP connect, TLS handshake, HTTP upgrade) has as long again
    before that, then ``connect`` raises :class:`~rstreams.errors.HandshakeTimeoutError` caused by
    ``TimeoutError``; a server that stays silent is said goodbye and every stream fails with
    ``HandshakeTimeoutError("handshake timeout (no serverHello within N s): URL ...")`` (a
    ``ConnectionBrokenError``; its message names the URL and that the peer may not be an RS.io
    server). A resumed session's reconnects are bounded by ``Resume.attempt_timeout`` instead.
    ``None``: no limit.
    ``auth``: credentials presented to the server (PROTOCOL.md §15), a token ``str`` or a
    ``(user, password)`` tuple (or ``Token``/``UserPassword``). If
    the server refuses them it says goodbye and every stream fails with
    ``ConnectionBrokenError("... authentication failed ...")``; ``conn.authenticated``
    tells when they were accepted. Per subscription: ``conn.publisher(name, auth=...)``.
    ``handlers``: message handlers this side offers to the server (same forms as in
    :func:`serve`; PROTOCOL.md §20). ``channels``: channels this side offers (§21).

    Raises:
        ValueError / TypeError: a bad URL, ``publishers``, ``ssl``, ``handshake_timeout`` or
            ``auth`` (the message never shows the credentials).
        ConnectionBrokenError: the connection could not be made; ``__cause__`` says why.
            :class:`~rstreams.errors.TLSRefusedError` when the server ended the TLS session
            before its first word, or reset it in the handshake (it may require a client
            certificate). :class:`~rstreams.errors.HandshakeTimeoutError` when the opening
            took ``handshake_timeout``. The streams fail with
            :class:`~rstreams.net._transport.TLSServerError` when a ``tcp://`` server's first
            bytes are a TLS record (it speaks TLS: its URL is ``tls://``).
    """
    endpoint = parse_url(url)
    Router(publishers)
    check_handlers(handlers)
    check_channels(channels)
    check_handshake_timeout(handshake_timeout)
    credentials = as_credentials(auth) if auth is not None else None
    resuming = check_resume(resume)
    if resuming is not None:  # -- resumption (rstreams.net._resume) --
        config = resume_config(config)
    pump = Pump(
        client=True,
        offer=publishers,
        codec=codec,
        config=config,
        high_water=high_water,
        low_water=low_water,
        keepalive=keepalive,
        idle_timeout=idle_timeout,
        unread_timeout=unread_timeout,
        handshake_timeout=handshake_timeout,
        credentials=credentials,
        handlers=handlers,
        observer=client_observer(),
        channels=channels,
    )
    conn = Connection(pump)
    observer = pump.outbox.observer
    if observer is not None:  # the loggers listen (rstreams.observe._log)
        conn.add_close_callback(lambda _: observer.closed())
    pump.closing.url = endpoint.url  # named by a handshake timeout's error
    try:
        if resuming is not None:
            await connect_resumable(
                endpoint,
                pump,
                resuming,
                ssl=ssl,
                high=high_water,
                low=low_water,
                handshake_timeout=handshake_timeout,
            )
            return conn
        if endpoint.scheme == "tcp":  # a TLS record as the server's first bytes names tls:// (closing)
            pump.closing.tcp_url = endpoint.url
        task = await connect_endpoint(
            endpoint, pump, ssl=ssl, high=high_water, low=low_water, handshake_timeout=handshake_timeout
        )
    except OSError as error:
        if isinstance(error, TLSServerError):  # ws:// to a TLS server: its message names wss://
            raise
        if isinstance(error, TimeoutError) and error.errno is None and handshake_timeout is not None:
            raise _opening_timed_out(endpoint.url, endpoint.scheme, handshake_timeout) from error
        why = str(error) or type(error).__name__  # asyncio's reset in a TLS handshake has no text
        refused = isinstance(error, TLSEndedError)
        if endpoint.secure and isinstance(error, ConnectionResetError):
            why += f" in the TLS handshake; {TLS_REFUSAL_HINT}"  # a TLS 1.2 server's refusal
            refused = True
        kind = TLSRefusedError if refused else ConnectionBrokenError
        raise kind(f"could not connect to {endpoint.url}: {why}") from error
    pump.keep(task)
    return conn


def _opening_timed_out(url: str, scheme: str, seconds: float) -> HandshakeTimeoutError:
    """The error of a ``tls``/``ws``/``wss`` opening that took ``handshake_timeout`` (``seconds``):
    said as a silent server's, whose hello did not come either."""
    steps = _OPENING.get(scheme, f"{_OPENING['tls']}, HTTP upgrade")
    return HandshakeTimeoutError(
        f"handshake timeout (no serverHello within {seconds:g} s): {url} did not finish the opening "
        f"({steps}) in that time (connect's handshake_timeout); it may not be an RS.io server: {SILENT_HINT}"
    )


async def connect_pipe(
    reader: IO[bytes] | int,
    writer: IO[bytes] | int,
    *,
    server: bool = False,
    publishers: Offer | None = None,
    codec: Codec[Any] | None = None,
    config: ConnectionConfig | None = None,
    high_water: int = DEFAULT_HIGH_WATER,
    low_water: int = DEFAULT_LOW_WATER,
    keepalive: float | None = DEFAULT_KEEPALIVE,
    idle_timeout: float | None = None,
    unread_timeout: float | None = DEFAULT_UNREAD_TIMEOUT,
    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
    handlers: Mapping[str, Handler] | None = None,
    channels: Mapping[str, ChannelFactory] | None = None,
) -> Connection:
    """An RS.io connection over a pair of pipes (file objects or descriptors).

    For a subprocess: the parent uses ``connect_pipe(proc.stdout, proc.stdin)``; the child
    ``connect_pipe(0, 1, server=True, publishers=...)`` (``server=True`` on exactly one
    end: it decides who sends which hello and whose ids are even). The other options are
    :func:`connect`'s.

    Raises:
        ValueError / TypeError: bad ``publishers``, ``handlers``, ``channels`` or
            ``handshake_timeout``; a reader or
            writer that is not a pipe or a socket (a regular file, say).
        OSError: a descriptor that is not open.
    """
    Router(publishers)
    check_handlers(handlers)
    check_channels(channels)
    check_handshake_timeout(handshake_timeout)
    pump = Pump(
        client=not server,
        offer=publishers,
        codec=codec,
        config=config,
        high_water=high_water,
        low_water=low_water,
        keepalive=keepalive,
        idle_timeout=idle_timeout,
        handshake_timeout=handshake_timeout,
        handlers=handlers,
        channels=channels,
    )
    pump.closing.ended_hint = PIPE_ENDED_HINT  # no URL to name: the process at the other end
    conn = Connection(pump)
    await open_pipe_transport(pump, reader, writer, high=high_water, low=low_water)
    return conn
