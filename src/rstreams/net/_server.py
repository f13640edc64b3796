"""``serve``: accept RS.io connections and serve named publishers on each.

Every accepted connection gets its own :class:`~rstreams.net.Connection` with the same
offer of publishers, made once its clientHello has arrived (:mod:`rstreams.net._pending`
holds it cheaply until then); a connection failing (bad bytes, a peer vanishing) ends only
that connection. ``on_connection(conn)`` is called for each new connection before any of its
bytes are handled, which is where a server subscribes to what its *clients* offer
(``conn.publisher(name)``): RS.io is bidirectional.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Self

from rstreams.net._admission import DEFAULT_ADMISSION_SHARE, Admission, check_share
from rstreams.net._auth import Authenticate, Authorize, ServerAuth
from rstreams.net._channels import ChannelFactory, check_channels
from rstreams.net._closing import Closing, check_handshake_timeout
from rstreams.net._codec import JSON, Codec
from rstreams.net._connection import CLOSE_TIMEOUT, Connection
from rstreams.net._endpoints import Listener, listen_endpoint
from rstreams.net._intake import DEFAULT_UNREAD_TIMEOUT
from rstreams.net._keepalive import DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE, check_interval
from rstreams.net._messages import Handler, check_handlers
from rstreams.net._origins import check_origins
from rstreams.net._pending import Charged, Doorway, Pending
from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, ResumeRegistry, check_resume, resume_config
from rstreams.net._routes import Offer, Router, WithCodec
from rstreams.net._transport import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, TransportHandler, check_water_marks
from rstreams.net._url import parse_url
from rstreams.observe import ConnectionObserver, MetricsOffError, ServerMetrics
from rstreams.observe._builtin import ServerFacts, builtin_factories, version
from rstreams.observe._log import attach as attach_logs
from rstreams.observe._log import wanted as logs_wanted
from rstreams.observe._otel import bridge, sdk_configured
from rstreams.observe._prometheus import Exposition, parse_address
from rstreams.observe._trace import tracer
from rstreams.wire import ConnectionConfig, ErrorCode

__all__ = ["DEFAULT_HANDSHAKE_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "Server", "serve"]

DEFAULT_HANDSHAKE_TIMEOUT = 10.0
"""Seconds an accepted connection has to send its clientHello (see :func:`serve`)."""

DEFAULT_MAX_CONNECTIONS = 10_000
"""Connections a server keeps open at once (see :func:`serve`)."""


class Server:
    """A listening RS.io server; made by :func:`serve`. Use ``async with`` or :meth:`close`."""

    def __init__(self) -> None:
        self._listener: Listener | None = None
        self._connections: set[Connection] = set()
        self._refused: set[Closing] = set()  # over max_connections: closing on their own
        self._doorway = Doorway()  # accepted transports at the hello stage (rstreams.net._pending)
        self._leaving: set[Closing] = set()  # said goodbye at the hello stage as the server closed
        self._closing: str | None = None  # close()'s reason, once called
        self._shutdown: asyncio.Task[None] | None = None
        self._metrics: ServerMetrics | None = None  # serve(..., metrics=...): what server.metrics() reads
        self._observing: ServerMetrics | None = None  # what connections report to (metrics or logs)
        self._exposition: Exposition | None = None

    @property
    def url(self) -> str:
        """The address clients connect to, with the real port when port 0 was asked for."""
        assert self._listener is not None
        return self._listener.endpoint.url

    @property
    def connections(self) -> frozenset[Connection]:
        """The connections open right now."""
        return frozenset(self._connections)

    @property
    def metrics_url(self) -> str | None:
        """Where Prometheus scrapes this server (``http://host:port/metrics``), if it is exposed."""
        return self._exposition.url if self._exposition is not None else None

    def metrics(self) -> dict[str, Any]:
        """The server's numbers now (``serve(..., metrics=...)``): connections, bytes, goodbyes,
        and per publisher pattern subscriptions, elements, demand and stall times; ``"streams"``
        lists the open streams. Every key is described in docs/observability.md. Call it on
        the server's event loop (its connections change the numbers there); from another
        thread, Prometheus' ``/metrics`` and ``rstreams/stats`` hand the snapshot over safely.

        Raises:
            rstreams.observe.MetricsOffError: (a ``RuntimeError``) the server was made without
                ``metrics=`` (nothing is counted).
        """
        if self._metrics is None:
            raise MetricsOffError(
                "this server counts nothing: serve(url, publishers, metrics=True) (or metrics='host:port' "
                "to expose /metrics too; rstreams serve --metrics HOST:PORT)"
            )
        return self._metrics.snapshot()

    def add_metrics(self, name: str, read: Callable[[], dict[str, Any]]) -> None:
        """Include ``read()`` under ``name`` in every snapshot (:meth:`metrics`, ``rstreams/stats``,
        and ``/metrics`` for the shapes rstreams knows: ``"replay"`` from
        :func:`rstreams.observe.replay_metrics`). Called on the server's loop.

        Raises:
            rstreams.observe.MetricsOffError: (a ``RuntimeError``) the server counts nothing
                (made without ``metrics=``).
            ValueError: ``name`` is taken by the server's own numbers or another section.
        """
        if self._metrics is None:
            raise MetricsOffError("add_metrics needs a server that counts: serve(..., metrics=True)")
        if name in self._metrics.snapshot(streams=False) or name == "streams":
            raise ValueError(f"add_metrics: the name {name!r} is taken")
        self._metrics.sections[name] = read

    def close(self, reason: str = "server closing") -> None:
        """Stop accepting; say goodbye on every connection. :meth:`wait_closed` waits for the end.

        A transport whose clientHello has not come (with ``resume=``: whose first byte has not
        told a new session from a resume) is said goodbye ``reason`` now, without a code (no
        hello yet, PROTOCOL.md §19.1), and closed as after any goodbye said before the peer's
        hello (§9.1, §10); nothing it sends afterwards is served, a resume included. A
        ``tls://`` or ``wss://`` transport still in its TLS handshake has no RS.io conversation: it
        is aborted now, as a connection still in the listen backlog is reset when the listener
        closes, and never comes up (with ``admission_share=None`` asyncio's own accepting, in
        debug mode, reports the cancelled handshake as it reports a failed one; on another event
        loop, uvloop say, the server accepts TLS connections itself, as with a budget, so that
        their handshakes are within reach).
        """
        if self._shutdown is not None:
            return
        self._closing = reason
        listener = self._listener
        if listener is not None and listener.endpoint.scheme not in ("ws", "wss"):
            listener.close()  # stop accepting (asyncio leaves accepted connections alone)
        # each one's connection is made (_hello_goodbye says goodbye); TLS handshakes are aborted
        self._doorway.close()
        self._shutdown = asyncio.get_running_loop().create_task(self._close(reason))

    async def wait_closed(self) -> None:
        """Wait until :meth:`close` has finished: every connection closed, every transport at
        the hello stage too, every TLS handshake under way aborted, the socket closed."""
        if self._shutdown is not None:
            await asyncio.shield(self._shutdown)

    async def aclose(self, reason: str = "server closing") -> None:
        """:meth:`close` and :meth:`wait_closed`."""
        self.close(reason)
        await self.wait_closed()

    async def _close(self, reason: str) -> None:
        listener = self._listener
        closing = [conn.aclose(reason, timeout=CLOSE_TIMEOUT) for conn in self._connections]
        for refused in self._refused:
            refused.close_now(reason)  # (a no-op: each said its goodbye at its hello)
        # those that said goodbye already close as after it, lingering: not cut short here
        gone = [leaving.wait_gone(CLOSE_TIMEOUT) for leaving in (*self._refused, *self._leaving)]
        # (at least one loop turn, whatever is waited for: a plain transport whose accept was
        # under way as close() was called starts meanwhile, its start being queued already;
        # it is said goodbye then, and waited for below)
        await asyncio.gather(*closing, *gone, self._doorway.handshakes_ended(), return_exceptions=True)
        if listener is not None:
            listener.close()  # websockets closes its connections here: after our goodbyes
            await listener.wait_closed()
        # transports accepted while closing (a WebSocket's, made after its handshakes) were said
        # goodbye on arrival, or aborted in their TLS handshake: they close within the same bounds
        gone = [leaving.wait_gone(CLOSE_TIMEOUT) for leaving in self._leaving]
        await asyncio.gather(*gone, self._doorway.handshakes_ended(), return_exceptions=True)
        if self._exposition is not None:
            await asyncio.to_thread(self._exposition.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _track(self, conn: Connection) -> None:
        self._connections.add(conn)
        conn.add_close_callback(self._connections.discard)

    def _hello_goodbye(self, pump: Pump, reason: str) -> None:
        """The server closes: say goodbye to a connection made at the hello stage (its peer's
        first bytes not handled; without a code, §19.1) and close it, lingering (§9.1, §10)."""
        closing = pump.closing
        self._leaving.add(closing)
        closing.add_close_callback(lambda: self._leaving.discard(closing))
        closing.close_now(reason)

    def _refuse(self, pump: Pump, reason: str) -> None:
        """Refuse ``pump``'s connection at its clientHello, which makes the goodbye's code (8, unavailable)
        go out when the hello makes error-codes active (PROTOCOL.md §10, §19); nothing the
        peer sent after its hello is served."""
        closing = pump.closing
        self._refused.add(closing)
        closing.add_close_callback(lambda: self._refused.discard(closing))
        closing.refuse_at_hello(reason, ErrorCode.UNAVAILABLE)


async def serve(
    url: str,
    publishers: Offer | None = None,
    *,
    codec: Codec[Any] | None = None,
    config: ConnectionConfig | None = None,
    ssl: _ssl.SSLContext | None = None,
    on_connection: Callable[[Connection], object] | None = None,
    high_water: int = DEFAULT_HIGH_WATER,
    low_water: int = DEFAULT_LOW_WATER,
    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    keepalive: float | None = DEFAULT_KEEPALIVE,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    unread_timeout: float | None = DEFAULT_UNREAD_TIMEOUT,
    admission_share: float | None = DEFAULT_ADMISSION_SHARE,
    authenticate: Authenticate | None = None,
    authorize: Authorize | None = None,
    auth_required: bool | None = None,
    resume: Resume | bool | None = None,
    metrics: bool | str | None = None,
    handlers: Mapping[str, Handler] | None = None,
    channels: Mapping[str, ChannelFactory] | None = None,
    origins: Iterable[str] | None = None,
) -> Server:
    """Listen on ``url`` and serve ``publishers`` to every client.

    Args:
        url: ``tcp://host:port``, ``tls://host:port``, ``unix:///path``, ``ws://host:port/path``
            or ``wss://...``; port 0 picks a free port (see :attr:`Server.url`).
        publishers: a mapping from names or ``{field}`` patterns to Publishers or
            factories ``(params) -> Publisher``, or a callable ``(path, params) ->
            Publisher | None`` (see :mod:`rstreams.net._routes`).
        codec: encodes each published element to bytes (default: elements are bytes).
        config: limits for the protocol core (:class:`rstreams.ConnectionConfig`).
        ssl: the server's :class:`ssl.SSLContext`; required for ``tls``/``wss``.
        on_connection: called with each new :class:`Connection` (to subscribe to what
            the client offers); exceptions are reported, not raised.
        high_water, low_water: per-connection output budget in bytes; production from
            local publishers stops above ``high_water`` and resumes below ``low_water``.
        handshake_timeout: seconds (default 10) a new connection has to send its
            clientHello, counted from when its transport is up (for ``tls``, after the TLS
            handshake, which is bounded by the same seconds: a socket whose handshake is not
            done that long after its accept is closed without an answer; for ``ws``/``wss``,
            after the WebSocket handshake, bounded the same way: a socket whose HTTP upgrade is
            not done that long after its transport came up is closed without an answer), and
            only from then: the
            first bytes of a hello do not restart it, nor (with ``resume=``) those that tell a
            new session from a resume. A connection whose clientHello has not come whole by
            then is sent a goodbye ``"handshake timeout (...)"`` and closed. ``None``: no
            limit.
        max_connections: most connections open at once (default 10 000), counted from
            their clientHello (until then an accepted transport costs a few hundred bytes and
            the handshake timeout bounds it). A connection beyond it is sent a goodbye naming
            the limit, with code 8 (unavailable) when its hello offers error-codes (PROTOCOL.md
            §19), and closed, before ``on_connection`` would hear of it and before anything it
            sent after its hello is served; it does not count towards the limit while it
            closes.
        keepalive: seconds (default 15) without receiving anything from a client after
            which the server pings it, when the client offers extension keepalive
            (PROTOCOL.md §14). ``None``: never ping (pings are still answered).
        idle_timeout: seconds (default 60) without receiving anything after which a
            connection is sent goodbye ``"idle timeout ..."`` and closed, whether or not
            the client offers keepalive (§14.2); on a resumable session the link is dropped
            instead and the session waits for a resume (§16). ``None``: no limit.
        unread_timeout: seconds (default 30) a client may leave the server's replies unread.
            Once more than ``low_water`` bytes, at most ``UNREAD_MARK`` (16 KiB), of replies
            (refusals, acknowledgements, pongs, goodbyes) wait unsent, counting on Linux what
            the client's socket holds back too, the server stops reading that client until
            they drain below a quarter of that (PROTOCOL.md §6.3, docs/security.md); a client
            that leaves them so this long is sent goodbye ``"peer not reading: ..."`` and
            closed. ``None``: no limit.
        admission_share: share of the server's event-loop time (default 0.2) that
            connections not yet established may take: accepting them, their hello and
            first reads, and all the work of one refused or closed before that (garbage,
            a failed handshake). While that budget is spent, listeners of every scheme
            stop accepting, so new connections wait in the kernel's backlog and
            established streams keep the rest of the loop (:mod:`rstreams.net._admission`;
            what asyncio and the kernel spend outside our callbacks is not measured: the
            true share is about ``admission_share / 0.67``). ``None``: accept as fast as
            connections come.
        authenticate: ``authenticate(credentials) -> principal`` (or a coroutine
            function): checks the ``Token``/``UserPassword`` a client presents (§15).
            Returning ``None`` or raising refuses; a refused connection is sent goodbye
            ``"authentication failed"``. Secrets are never logged or echoed.
        authorize: ``authorize(principal, publisher_name) -> bool``, called for every
            subscribe (``principal`` is ``None`` for an unauthenticated client when auth
            is optional); ``False`` refuses that subscribe with onError ``"unauthorized:
            ..."``. Synchronous.
        auth_required: whether clients must authenticate (default: ``True`` when
            ``authenticate`` is given). A client that does not offer extension auth is
            then sent goodbye ``"authentication required ..."``.

        resume: ``Resume(...)`` (or ``True``): clients that also ask for it keep their
            session when their transport breaks; the server keeps it ``session_timeout``
            seconds for them to resume (PROTOCOL.md §16).
        metrics: ``True``: count what the connections and streams do (``server.metrics()``);
            ``"host:port"``: that, and serve it at ``http://host:port/metrics`` for
            Prometheus (needs ``prometheus_client``, the ``rstreams[metrics]`` extra; port 0
            picks one, see :attr:`Server.metrics_url`). Default: nothing is counted.
            When the application has installed an OpenTelemetry SDK ``MeterProvider``, the
            numbers are also observable instruments of its meter ``rstreams``.
            Logging is separate: when the ``rstreams.streams`` logger listens at INFO (or
            ``rstreams.frames`` at DEBUG) as the server starts, connections log (see
            docs/observability.md).
        handlers: message handlers offered to clients (PROTOCOL.md §20): a mapping from
            names or ``{field}`` patterns to ``handler(message)`` (a :class:`Message`; sync,
            or returning an awaitable that holds the message's credit until it finishes).
            ``conn.send(name, payload)`` on a client reaches them; ``authorize(principal,
            name)`` is asked for each message as for a subscribe.
        channels: channels offered to clients (PROTOCOL.md §21): a mapping from names or
            ``{field}`` patterns to ``factory(input, params) -> Publisher``. ``input`` is the
            client's stream (an ordinary Publisher, subscribable once; elements decoded with
            ``codec``); the returned Publisher is the output, encoded with ``codec``.
            ``conn.channel(name, input)`` on a client opens one; subscribes to a channel are
            authorized like any other.
        origins: for ``ws://`` and ``wss://``: the browser pages, besides the server's own, that
            may connect, as origins ``"https://app.example:8443"`` (a page's scheme, host and
            port); ``"*"`` among them: every page. A handshake whose ``Origin`` header (browsers
            send one, other clients normally none) names another origin is refused with HTTP
            403. The server's own origin is that of its URL (``http://127.0.0.1:9000`` for
            ``ws://127.0.0.1:9000/rsio``; for a loopback or wildcard host, every loopback name).
            See docs/security.md.

    Raises:
        ValueError / TypeError: a bad URL, ``publishers`` or ``ssl``.
        OSError: the address cannot be bound.
        MetricsExpositionError: ``metrics="host:port"`` cannot be bound (the server is
            closed again). It is an ``OSError`` too; catch it first to tell the two apart.
        ImportError: ``metrics="host:port"`` without ``prometheus_client`` installed.
    """
    endpoint = parse_url(url)
    Router(publishers)  # check the offer and the limits now, where the caller made the mistake
    check_handlers(handlers)
    check_channels(channels)
    check_water_marks(high_water, low_water)
    check_handshake_timeout(handshake_timeout)
    if type(max_connections) is not int or max_connections < 1:
        raise ValueError(f"max_connections must be an int >= 1, got {max_connections!r}")
    check_interval("keepalive", keepalive)
    check_interval("idle_timeout", idle_timeout)
    check_interval("unread_timeout", unread_timeout)
    check_share(admission_share)
    allowed = check_origins(origins)
    if origins is not None and endpoint.scheme not in ("ws", "wss"):
        raise ValueError(f"origins= applies to ws:// and wss:// servers (browser pages), not to {url!r}")
    server_auth = _server_auth(authenticate, authorize, auth_required)
    server = Server()
    if metrics is not None and not isinstance(metrics, bool | str):
        raise TypeError(f"metrics must be True, 'host:port' or None, got {metrics!r}")
    address = parse_address(metrics) if isinstance(metrics, str) else None
    if metrics is not None and metrics is not False:
        server._metrics = ServerMetrics(version=version)
        if sdk_configured():  # the application set up OpenTelemetry: the numbers go there too
            bridge(server._metrics, asyncio.get_running_loop(), version=version())
    server._observing = server._metrics
    logs, spans = logs_wanted(), tracer()  # rstreams.observe._log; an OpenTelemetry SDK (._trace)
    if (logs or spans is not None) and server._observing is None:
        server._observing = ServerMetrics(version=version)
    if logs:  # the rstreams.streams / rstreams.frames loggers listen
        assert server._observing is not None
        server._observing.logger = attach_logs
    if spans is not None:
        assert server._observing is not None
        server._observing.tracer = spans
    publishers = _with_builtins(publishers, server)

    def made(conn: Connection, pump: Pump) -> None:
        if server._closing is not None:  # made by the server's doorway as it closes: not announced
            server._hello_goodbye(pump, server._closing)
            return
        if len(server._connections) >= max_connections:
            server._refuse(
                pump,
                f"too many connections: this server accepts at most {max_connections} (max_connections)",
            )
            return
        server._track(conn)
        observer = pump.outbox.observer
        if observer is not None:
            _observe(server, conn, observer)
        if on_connection is not None:
            on_connection(conn)

    def make_connection() -> Pump:
        # Made per accepted socket; it joins the server (and on_connection hears of it) only
        # once its transport is up, so a failed TLS handshake leaves nothing behind.
        pump = Pump(
            client=False,
            offer=publishers,
            codec=codec,
            config=config,
            high_water=high_water,
            low_water=low_water,
            on_made=lambda: made(conn, pump),
            handshake_timeout=handshake_timeout,
            keepalive=keepalive,
            idle_timeout=idle_timeout,
            unread_timeout=unread_timeout,
            server_auth=server_auth,
            observer=server._observing.connection() if server._observing is not None else None,
            handlers=handlers,
            channels=channels,
        )
        conn = Connection(pump)
        return pump

    resuming = check_resume(resume)
    if resuming is not None:
        config = resume_config(config)
    first = make_connection()
    server_hello = b"".join(first.outbox.core.data_to_send())  # the same on every connection
    # The first connection's config already lists the extensions every connection offers:
    # later ones take it as it is instead of building and checking their own (a new
    # connection is made for every accepted socket, hostile or not).
    config = first.outbox.core.config

    loop = asyncio.get_running_loop()
    admission = Admission(loop, admission_share) if admission_share is not None else None

    doorway = server._doorway
    tls = endpoint.scheme == "tls"  # (a wss:// handler is made after its TLS and HTTP handshakes)

    def pending() -> TransportHandler:
        handler = Pending(make_connection, server_hello, handshake_timeout, admission, doorway=doorway)
        if tls:
            doorway.accepted(handler)
        return handler

    factory: Callable[[], TransportHandler] = pending
    if resuming is not None:  # -- resumption (rstreams.net._resume) --
        registry = ResumeRegistry(
            resuming,
            make_connection,
            high=high_water,
            handshake_timeout=handshake_timeout,
            doorway=doorway,
        )
        budget = admission  # (a name mypy keeps narrowed in the closure)

        def link() -> TransportHandler:
            made = registry.make_link()
            if tls:
                doorway.accepted(made)
            return made if budget is None else Charged(made, budget)

        factory = link

    server._listener = await listen_endpoint(
        endpoint,
        factory,
        ssl=ssl,
        high=high_water,
        low=low_water,
        admission=admission,
        origins=allowed,
        accepted=doorway.accepted,  # (wss: each connection before its TLS handshake)
        handshake_timeout=handshake_timeout,  # (tls: the TLS handshake's bound too; ws, wss: the upgrade's)
    )
    if address is not None and server._metrics is not None:
        try:
            loop = asyncio.get_running_loop()
            server._exposition = await asyncio.to_thread(Exposition, server._metrics, *address, loop)
        except BaseException:
            await server.aclose()
            raise
    return server


def _with_builtins(publishers: Offer | None, server: Server) -> Offer:
    """``publishers`` plus the server's own (:mod:`rstreams.observe._builtin`); the user's names win."""
    user = dict(publishers) if isinstance(publishers, Mapping) else {}
    facts = ServerFacts(
        [], more=callable(publishers), metrics=server._metrics, connections=lambda: len(server._connections)
    )
    factories = builtin_factories(facts)
    own = {name: WithCodec(factory, JSON) for name, factory in factories.items() if name not in user}
    facts.names = [*user, *own]
    if publishers is None or isinstance(publishers, Mapping):
        return {**own, **user}
    function = publishers

    def offer(path: str, params: dict[str, str]) -> Any:
        target = own.get(path)
        return target if target is not None else function(path, params)

    return offer


def _observe(server: Server, conn: Connection, observer: ConnectionObserver) -> None:
    """Count ``conn`` among the open connections until its transport closes."""
    assert server._observing is not None
    observer.split_parts = conn._pump.outbox.core.split_in_flight
    server._observing.opened(observer)
    conn.add_close_callback(lambda _: observer.closed())


def _server_auth(
    authenticate: Authenticate | None, authorize: Authorize | None, required: bool | None
) -> ServerAuth | None:
    for name, hook in (("authenticate", authenticate), ("authorize", authorize)):
        if hook is not None and not callable(hook):
            raise TypeError(f"{name} must be callable, got a {type(hook).__name__}")
    if required is None:
        required = authenticate is not None
    if required and authenticate is None:
        raise ValueError("auth_required=True needs an authenticate hook to check the credentials")
    if authenticate is None and authorize is None:
        return None
    return ServerAuth(authenticate, authorize, bool(required))
