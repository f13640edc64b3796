"""One RS.io connection on asyncio: the driver between a transport and the sans-I/O core.

Theory of operation. :class:`Connection` is the transport's handler
(:class:`~rstreams.net._transport.TransportHandler`) and owns one
:class:`rstreams.wire.Connection` (the core). It is a short pump:

* bytes in: ``data_received`` feeds the core and dispatches the events it yields.
  ``onNext`` goes straight to the local Subscriber (:class:`RemoteSubscription.deliver`),
  inside this callback: no queue and no task per element.
* bytes out: anything that makes the core produce output (a local Publisher's
  ``on_next``, a Subscriber's ``request``, an incoming frame that needs an answer) only
  marks the connection dirty; one ``call_soon``-scheduled :meth:`_flush` per event-loop
  turn gathers ``data_to_send()`` and writes it with a single ``writelines``. That is
  the write coalescing the machine's syscall cost demands (notes/machine-limits.md).
* demand to production: :meth:`_flush` also asks local Publishers for more
  (:meth:`ServingStream.refill`), but only while the transport is writable, and only for
  the room left under the high-water mark (bytes unsent in the transport plus bytes
  produced this turn). ``pause_writing``/``resume_writing`` from the transport flip the
  writable state. A slow or non-reading peer therefore stops production, whatever demand
  it signalled.
* ending: the core reports the end of the protocol conversation (a goodbye, ours or the
  peer's, or a protocol violation that it answered with a goodbye); the transport
  reports the end of the bytes (``connection_lost``). Either ends every open stream once:
  local Subscribers get ``on_error`` (:class:`ResourceClosedError` when we closed,
  :class:`ConnectionBrokenError` with the cause otherwise) and local Publishers are
  cancelled. Lower-layer exceptions are translated here, in :meth:`connection_lost`, and
  nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import heapq
import threading
from collections.abc import Callable
from typing import Any, Literal, Self, TypeVar, overload

from rstreams.api import Subscriber
from rstreams.errors import (
    ConnectionBrokenError,
    LocalProtocolError,
    ReactiveStreamsError,
    ResourceClosedError,
    report_unhandled,
)
from rstreams.flow._flow import Flow
from rstreams.net._auth import AuthGate, ServerAuth, WithCredentials
from rstreams.net._codec import Codec
from rstreams.net._consuming import Batching, RemotePublisher, RemoteSubscription, ScalarSubscriber
from rstreams.net._keepalive import Keepalive, check_interval
from rstreams.net._routes import Offer, Router, UnknownPublisherError
from rstreams.net._serving import BatchServingStream, ServingStream
from rstreams.net._transport import (
    DEFAULT_HIGH_WATER,
    DEFAULT_LOW_WATER,
    TLS_REFUSAL_HINT,
    Transport,
    check_water_marks,
)
from rstreams.wire import (
    Cancel,
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    Event,
    ExtensionReceived,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextBatch,
    OnNextPacked,
    Request,
    ServerHello,
    Side,
    StreamError,
    Subscribe,
)
from rstreams.wire import Connection as Core
from rstreams.wire._auth import Credentials, as_credentials, encode_credentials, encode_subscribe_credentials
from rstreams.wire.extensions import AUTH, AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS, KEEPALIVE

__all__ = ["Connection", "ConnectionStatistics", "RemoteStreamError"]

T = TypeVar("T")

CLOSE_TIMEOUT = 5.0
"""Seconds :meth:`Connection.aclose` waits for the peer's goodbye, then for the transport."""

LINGER_SECONDS = 2.0
"""After an error goodbye, how long input is still read (and discarded) before closing."""

LINGER_BYTES = 4 * 1024 * 1024
"""After an error goodbye, how many bytes of input are discarded at most before closing."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionStatistics:
    """What :meth:`Connection.statistics` returns."""

    subscribing: int
    """Open subscriptions of ours on the peer's publishers."""
    publishing: int
    """Open subscriptions of the peer on our publishers."""
    write_buffer_size: int
    """Bytes written but not yet sent by the transport."""
    writable: bool
    """Whether the transport is below its high-water mark (local publishers are asked for more)."""
    closed: bool
    """Whether the connection has ended."""


class RemoteStreamError(ReactiveStreamsError):
    """The remote publisher signalled ``onError``; ``message`` is the text it sent."""

    def __init__(self, message: str, *, publisher: str, subscriber: int) -> None:
        super().__init__(f"remote publisher {publisher!r} failed: {message}")
        self.message = message
        self.publisher = publisher
        self.subscriber = subscriber


class Connection:
    """One RS.io connection, client or server side; made by ``connect``/``serve``, not by users.

    Either side may do both: subscribe to the peer's publishers (:meth:`publisher`,
    :meth:`request`) and serve its own (``publishers=`` when connecting or serving).
    """

    def __init__(
        self,
        *,
        client: bool,
        offer: Offer | None = None,
        codec: Codec[Any] | None = None,
        config: ConnectionConfig | None = None,
        high_water: int = DEFAULT_HIGH_WATER,
        low_water: int = DEFAULT_LOW_WATER,
        on_made: Callable[[Connection], object] | None = None,
        handshake_timeout: float | None = None,
        keepalive: float | None = None,
        idle_timeout: float | None = None,
        credentials: Credentials | None = None,
        server_auth: ServerAuth | None = None,
    ) -> None:
        check_water_marks(high_water, low_water)
        check_interval("keepalive", keepalive)
        check_interval("idle_timeout", idle_timeout)
        self._handshake_timeout = handshake_timeout  # seconds for the peer's hello, from connection_made
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()
        self._on_made = on_made  # called once the transport is up (a TLS handshake succeeded)
        self._made = False
        self._loop_thread = threading.get_ident()
        # Extensions (PROTOCOL.md §14, §15): keepalive is always listed (the core answers pings;
        # ``keepalive`` only decides whether we send them); auth when there is something to do.
        ids = {KEEPALIVE.id}
        if credentials is not None or (server_auth is not None and server_auth.authenticate is not None):
            ids.add(AUTH.id)
        config = config or ConnectionConfig()
        if not ids <= config.extensions:
            config = dataclasses.replace(config, extensions=config.extensions | ids)
        self._core = Core(Side.CLIENT if client else Side.SERVER, config, batch_on_next=True)
        self.heard_at = 0.0
        """Loop time of the last read (the keepalive timer's clock, :mod:`rstreams.net._keepalive`)."""
        self.sent_at = 0.0
        """Loop time of the last write handed to the transport (idle means neither, §14.2)."""
        self._keepalive = (
            Keepalive(self, keepalive, idle_timeout)
            if keepalive is not None or idle_timeout is not None
            else None
        )
        self._credentials = credentials  # the client's, sent once the serverHello lists auth (§15.2)
        self._authenticated = False
        self._deferred: list[tuple[Any, ...]] = []  # subscribes with credentials, awaiting the serverHello
        self._router = Router(offer, codec)
        self._high = high_water
        self._transport: Transport | None = None
        self._consuming: dict[int, RemoteSubscription[Any]] = {}
        self._serving: dict[int, ServingStream] = {}
        self._names: dict[int, str] = {}
        self._refill: dict[ServingStream, None] = {}
        self._packs: list[ServingStream] = []
        self._requests: dict[RemoteSubscription[Any], None] = {}
        self._flush_scheduled = False
        self._flush_handle: asyncio.Handle | None = None
        self._joins = False  # the transport's writelines joins everything into one bytes
        self.reading = False  # a read's events are being delivered
        self._writable = True
        self._turn_bytes = 0
        # Our subscriber ids, a namespace of our own (PROTOCOL.md §5.1), reused lowest first so
        # that they stay small (one or two bytes on the wire, the parser's fast path; §5.3).
        self._next_id = 1  # the lowest id never used
        self._free_ids: list[int] = []  # a heap: ids whose terminal signal was received
        self._unacked: set[int] = set()  # cancelled ids, in use until the publisher's onComplete
        self._ended: BaseException | None = None  # why streams can no longer run
        self._ended_event = asyncio.Event()  # the protocol conversation is over
        self._lost = self._loop.create_future()  # the transport is closed
        self._closing = False
        self._close_callbacks: list[Callable[[Connection], object]] = []
        self._task: asyncio.Task[None] | None = None  # a transport's own task (WebSocket)
        self._after_dispatch: list[Callable[[], object]] = []  # run once the current read is handled
        # -- hooks for extensions layered on the driver (resumption: rstreams.net._resume) --
        self.extension_handlers: dict[int, Callable[[int, bytes], object]] = {}
        """Extension message type -> ``handler(type, payload)``, called for each one received."""
        self.resume_session: Any = None  # the resumable session this driver runs over, if any
        self._linger: asyncio.TimerHandle | None = None  # set while discarding input after an error
        self._linger_left = 0  # bytes still to discard before closing anyway
        self._gate = AuthGate(self, server_auth) if server_auth is not None and not client else None
        if client:
            for message_type in (AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS):
                self.extension_handlers[message_type] = self._client_auth_message

    # -- public API ----------------------------------------------------------------------
    @overload
    def publisher(
        self, name: str, *, batched: Literal[False] = False, auth: object = None
    ) -> Flow[bytes]: ...
    @overload
    def publisher(
        self, name: str, *, codec: Codec[T], batched: Literal[False] = False, auth: object = None
    ) -> Flow[T]: ...
    @overload
    def publisher(self, name: str, *, batched: Literal[True], auth: object = None) -> Flow[list[bytes]]: ...
    @overload
    def publisher(
        self, name: str, *, codec: Codec[T], batched: Literal[True], auth: object = None
    ) -> Flow[list[T]]: ...
    def publisher(
        self, name: str, *, codec: Codec[Any] | None = None, batched: bool = False, auth: object = None
    ) -> Flow[Any]:
        """The peer's publisher ``name`` (``path?param=value``) as a cold :class:`Flow`.

        Each ``subscribe`` opens a new remote subscription. Elements are ``bytes``, or
        ``codec.decode(bytes)`` when a codec is given.

        ``batched=True``: ``on_next`` receives a non-empty ``list`` of elements at a time
        (the elements of one packed frame, decoded with one ``codec.decode_many`` call,
        or the run of elements one read brought), while demand still counts elements:
        ``request(n)`` lets ``n`` more *elements* arrive, in as many lists as it takes.
        The way to take fixed-size elements (``INT64``, ``FLOAT64``, ``fixed_size(n)``)
        at tens of millions per second.

        ``auth``: credentials for these subscriptions only (a token ``str``, a ``(user,
        password)`` tuple, :class:`Token` or :class:`UserPassword`), checked by the server
        instead of the connection's (PROTOCOL.md §15.4). Needs a connection made with
        ``connect(url, auth=...)`` (``ValueError`` otherwise) to a server that offers
        extension auth; each subscribe then waits for the server's hello.
        """
        if not isinstance(name, str):
            raise TypeError(f"publisher names are str such as 'sensors/temp?from=100', got {name!r}")
        conn: Any = self
        if auth is not None:
            credentials = as_credentials(auth)
            if self._core.side is not Side.CLIENT or self._credentials is None:
                raise ValueError(
                    "per-subscription credentials need a client connection that authenticates itself: "
                    "connect(url, auth=...) (extension auth is listed only by a client that presents "
                    "credentials, PROTOCOL.md §15.2)"
                )
            conn = WithCredentials(self, credentials)
        if batched:
            return RemotePublisher(conn, name, None, Batching(codec))
        if codec is not None and codec.element_size and codec.decode_many is not None:
            # one element per on_next, but packed frames are decoded in one call
            return RemotePublisher(conn, name, codec.decode, Batching(codec, lists=False))
        return RemotePublisher(conn, name, codec.decode if codec is not None else None)

    @overload
    async def request(self, name: str) -> bytes: ...
    @overload
    async def request(self, name: str, *, codec: Codec[T]) -> T: ...
    async def request(self, name: str, *, codec: Codec[Any] | None = None) -> Any:
        """Request/response: subscribe with demand 1 and return the single element.

        Raises:
            RemoteStreamError: the remote publisher signalled ``onError`` (e.g. unknown name).
            LookupError: it completed without an element.
            ConnectionBrokenError / ResourceClosedError: the connection ended first.

        Wrap it in ``asyncio.timeout(...)`` for a deadline: cancelling the call cancels the stream.
        """
        future: asyncio.Future[Any] = self._loop.create_future()
        subscriber = ScalarSubscriber(future, name, self._after_dispatch.append)
        if not isinstance(name, str):
            raise TypeError(f"publisher names are str such as 'sensors/temp?from=100', got {name!r}")
        # on the loop's thread already (a coroutine): open the subscription directly
        self.open_subscription(name, subscriber, codec.decode if codec is not None else None)
        try:
            return await future
        except asyncio.CancelledError:
            subscriber.cancel()
            raise

    async def aclose(self, reason: str = "", *, timeout: float = CLOSE_TIMEOUT) -> None:  # noqa: ASYNC109
        """Say goodbye, wait (up to ``timeout`` s) for the peer's goodbye, close the transport.

        Open streams end: local Subscribers get ``on_error(ResourceClosedError)``, local
        Publishers serving the peer are cancelled. Idempotent.
        """
        if not self._made:
            # The transport never came up (e.g. a failed TLS handshake): nothing to say goodbye on.
            self._closing = True
            if self._ended is None:
                self._end_streams(ResourceClosedError("the connection was closed by this side"))
            self.connection_lost(None)
            return
        if not self._closing and self._ended is None:
            self._closing = True
            with contextlib.suppress(LocalProtocolError, ConnectionBrokenError):
                self._core.send(Goodbye(reason=reason))
            self._end_streams(ResourceClosedError("the connection was closed by this side"))
            self._flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended_event.wait(), timeout)
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._lost), timeout)
        except TimeoutError:
            if transport is not None:
                transport.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._lost), timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def add_close_callback(self, callback: Callable[[Connection], object]) -> None:
        """Call ``callback(self)`` once the transport is closed."""
        if self._lost.done():
            callback(self)
        else:
            self._close_callbacks.append(callback)

    def keep(self, task: asyncio.Task[None] | None) -> None:
        """Hold a reference to the transport's task so that it is not garbage-collected."""
        self._task = task

    async def wait_closed(self) -> None:
        """Wait until the transport is closed."""
        await asyncio.shield(self._lost)

    @property
    def closed(self) -> bool:
        """Whether streams can no longer run on this connection (goodbye or transport lost)."""
        return self._ended is not None

    @property
    def writable(self) -> bool:
        """Whether the transport is below its high-water mark (production may continue)."""
        return self._writable

    @property
    def core(self) -> Core:
        """The sans-I/O protocol core (for extensions layered on this driver; read, don't feed)."""
        return self._core

    def send_extension(self, message_type: int, payload: bytes) -> None:
        """Send a message of an active extension (PROTOCOL.md §4.4) with the next write."""
        self._core.send_extension(message_type, payload)
        self._mark_dirty()

    def statistics(self) -> ConnectionStatistics:
        """A snapshot of this connection's state (for monitoring and tests)."""
        transport = self._transport
        return ConnectionStatistics(
            subscribing=len(self._consuming),
            publishing=len(self._serving),
            write_buffer_size=transport.get_write_buffer_size() if transport is not None else 0,
            writable=self._writable,
            closed=self._ended is not None,
        )

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """Transport details: ``peername``, ``sockname``, ``ssl_object``..."""
        transport = self._transport
        return transport.get_extra_info(name, default) if transport is not None else default

    def __repr__(self) -> str:
        state = "closed" if self._ended is not None else "open"
        return f"<rstreams.net.Connection {self.get_extra_info('peername')!r} {state}>"

    # -- TransportHandler ---------------------------------------------------------------
    def connection_made(self, transport: Transport) -> None:
        self._transport = transport
        self._joins = getattr(type(transport), "writelines", None) is asyncio.WriteTransport.writelines
        self._made = True
        self.heard_at = self._loop.time()
        if self._keepalive is not None:
            self._keepalive.start()
        if self._handshake_timeout is not None:
            self._handshake_timer = self._loop.call_later(self._handshake_timeout, self._handshake_expired)
        on_made, self._on_made = self._on_made, None
        if on_made is not None:
            try:
                on_made(self)
            except Exception as error:
                report_unhandled(error, "a connection's on_connection callback")
        self._flush()  # our hello (the core queued it when it was made), and whatever on_made sent

    def data_received(self, data: memoryview) -> None:
        core = self._core
        if core.state is ConnectionState.CLOSED or self._linger is not None:
            # after the goodbyes: nothing more is read (a lingering close discards it, bounded)
            if self._linger is not None:
                self._linger_left -= len(data)
                if self._linger_left <= 0:
                    self._end_linger()
            return
        self.heard_at = self._loop.time()
        core.receive_data(data)
        self.reading = True
        try:
            self._dispatch(core.events_received())
        finally:
            self.reading = False
        # Everything this read caused goes out now, in one write, rather than on the next
        # loop turn: a turn (an epoll_wait) less per request/response. What the events made
        # us send scheduled a flush (_mark_dirty & co.); the core may also have answered by
        # itself (a cancel's acknowledgement, a goodbye).
        if self._flush_scheduled or core.has_data_to_send:
            handle = self._flush_handle
            if handle is not None:
                handle.cancel()
            self._flush()

    def eof_received(self) -> None:
        if self._linger is not None:
            self._end_linger()  # the peer has stopped sending: nothing can reset the goodbye now
            return
        core = self._core
        core.receive_eof()
        self._dispatch(core.events_received())
        self._flush()

    def connection_lost(self, error: BaseException | None) -> None:
        if self._keepalive is not None:
            self._keepalive.stop()
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None
        if self._ended is None:
            if error is None:
                message = "the peer closed the connection without a goodbye"
            else:
                message = f"the connection failed: {error}"
            if self._core.state is ConnectionState.AWAITING_HELLO and self._over_tls():
                message += f" before its hello; {TLS_REFUSAL_HINT}"
            broken = ConnectionBrokenError(message)
            if error is not None:
                broken.__cause__ = error
            self._end_streams(broken)
        self._ended_event.set()
        if not self._lost.done():
            self._lost.set_result(None)
        self._transport = None
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception as exc:
                report_unhandled(exc, "a connection close callback")

    def _over_tls(self) -> bool:
        transport = self._transport
        return transport is not None and transport.get_extra_info("ssl_object") is not None

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        if (self._refill or self._core.has_data_to_send) and not self._flush_scheduled:
            self._schedule_flush()

    # -- events from the core ------------------------------------------------------------
    def _dispatch(self, events: list[Event]) -> None:
        """Route each event; ``onNext`` first, as the hot path. Then the after-dispatch calls."""
        self._route(events)
        while self._after_dispatch:
            calls, self._after_dispatch = self._after_dispatch, []
            for call in calls:
                try:
                    call()
                except Exception as error:
                    report_unhandled(error, "a call after handling a read")

    def _route(self, events: list[Event]) -> None:
        consuming = self._consuming
        for event in events:
            cls = event.__class__
            if cls is OnNextBatch:
                subscription = consuming.get(event.subscriber)  # type: ignore[union-attr]
                if subscription is not None:
                    subscription.deliver_many(event.elements)  # type: ignore[union-attr,arg-type]
            elif cls is OnNext:
                subscription = consuming.get(event.subscriber)  # type: ignore[union-attr]
                if subscription is not None:
                    subscription.deliver(event.element)  # type: ignore[union-attr]
            else:
                self._other_event(event)

    def _other_event(self, event: Event) -> None:
        if isinstance(event, OnNextPacked):
            subscription = self._consuming.get(event.subscriber)
            if subscription is not None:
                subscription.deliver_packed(event.elements, event.count)
        elif isinstance(event, Subscribe):
            if self._core.state is not ConnectionState.CLOSED and not self._closing:
                # A violation later in the same read closed the core: the goodbye already
                # ended this subscription, so no local publisher is started for it.
                if self._gate is not None:
                    self._gate.subscribe(event.publisher, event.subscriber, event.initial_demand)
                else:
                    self._serve(event.publisher, event.subscriber, event.initial_demand)
        elif isinstance(event, Request):
            stream = self._serving.get(event.subscriber)
            if stream is not None:
                stream.add_demand(event.demand)
            elif self._gate is not None:
                self._gate.request(event.subscriber, event.demand)
        elif isinstance(event, Cancel):  # the core has already acknowledged it (§5.4)
            self._stop_serving(event.subscriber)
            if self._gate is not None:
                self._gate.cancel(event.subscriber)
        elif isinstance(event, OnComplete):
            subscription = self._consuming.pop(event.subscriber, None)
            self._names.pop(event.subscriber, None)
            self._free_id(event.subscriber)
            if subscription is not None:
                subscription.complete()
        elif isinstance(event, OnError):
            subscription = self._consuming.pop(event.subscriber, None)
            name = self._names.pop(event.subscriber, "?")
            self._free_id(event.subscriber)
            if subscription is not None:
                subscription.error(
                    RemoteStreamError(event.error, publisher=name, subscriber=event.subscriber)
                )
        elif isinstance(event, StreamError):  # the core already sent onError / cancel for it
            if event.publishing:
                self._stop_serving(event.subscriber)
            else:
                subscription = self._consuming.pop(event.subscriber, None)
                self._names.pop(event.subscriber, None)
                self._unacked.add(event.subscriber)  # the core cancelled it: wait for the ack
                if subscription is not None:
                    subscription.error(event.error)
        elif isinstance(event, ConnectionClosed):
            self._conversation_over(event.error, event.reason)
        elif isinstance(event, ExtensionReceived):
            handler = self.extension_handlers.get(event.type)
            if handler is not None:
                handler(event.type, event.payload)
        elif isinstance(event, ClientHello | ServerHello):
            timer, self._handshake_timer = self._handshake_timer, None
            if timer is not None:
                timer.cancel()
            self._hello_received()
        # OnSubscribe and Goodbye need nothing here: the core keeps their state.

    def _stop_serving(self, sid: int) -> None:
        stream = self._serving.pop(sid, None)
        if stream is not None:
            self._refill.pop(stream, None)
            stream.queued = False
            stream.stop()

    def _conversation_over(self, error: BaseException | None, reason: str) -> None:
        """The core says the protocol conversation ended (goodbye exchanged, or a violation)."""
        if self._ended is None:
            if error is None:
                broken = ConnectionBrokenError(f"the peer said goodbye: {reason!r}")
            else:
                broken = ConnectionBrokenError(f"the peer broke the protocol: {error}")
                broken.__cause__ = error
            self._end_streams(broken)
        self._ended_event.set()
        self._flush()
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if error is not None and self._start_linger(transport):
            return
        transport.close()

    def close_now(self, reason: str) -> None:
        """Say goodbye and close without waiting for the peer's answer (a server limit refusing it).

        Open streams end as in :meth:`aclose`; the transport closes as after an error goodbye
        (:meth:`_start_linger`): the goodbye goes out, then input is discarded for a bounded
        while, so that the peer reads why it was closed. Idempotent; no-op once ending.
        """
        if self._closing or self._ended is not None:
            return
        self._closing = True
        with contextlib.suppress(LocalProtocolError, ConnectionBrokenError):
            self._core.send(Goodbye(reason=reason))
        self._end_streams(ResourceClosedError(f"the connection was closed by this side: {reason}"))
        self._ended_event.set()  # no answer is awaited: aclose() goes straight to the transport
        self._flush()
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if not self._start_linger(transport):
            transport.close()

    # -- authentication (PROTOCOL.md §15; the server's side is rstreams.net._auth) ---------------
    @property
    def principal(self) -> Any:
        """Server side: what the ``authenticate`` hook returned for this client (``None``: none)."""
        return self._gate.principal if self._gate is not None else None

    @property
    def authenticated(self) -> bool:
        """Client side: whether the server accepted this connection's credentials (§15.3)."""
        return self._authenticated

    def _hello_received(self) -> None:
        offered = AUTH.id in self._core.extensions
        if self._gate is not None:
            reason = self._gate.hello(offered)
            if reason is not None:
                self.close_now(reason)
            elif self._gate.pending and self._handshake_timeout is not None:
                self._handshake_timer = self._loop.call_later(self._handshake_timeout, self._auth_expired)
            return
        if self._credentials is not None:
            if not offered:
                self.close_now(
                    "authentication not possible: the server does not offer extension auth (id 2) "
                    "(PROTOCOL.md §15.2)"
                )
                return
            self.send_extension(AUTH_AUTHENTICATE, encode_credentials(self._credentials))
        deferred, self._deferred = self._deferred, []
        for args in deferred:
            self.open_subscription(*args[:4], credentials=args[4])

    def _client_auth_message(self, message_type: int, payload: bytes) -> None:
        if message_type == AUTH_OK and self._credentials is not None and not self._authenticated:
            self._authenticated = True
            return
        what = (
            "authenticated (0x85) without an authenticate"
            if message_type == AUTH_OK
            else (f"message type 0x{message_type:02x}, which only a client sends,")
        )
        self.close_now(f"{what} received by the client (PROTOCOL.md §15.5)")

    def cancel_auth_timer(self) -> None:
        timer, self._handshake_timer = self._handshake_timer, None
        if timer is not None:
            timer.cancel()

    def _auth_expired(self) -> None:
        self._handshake_timer = None
        if self._gate is not None and self._gate.pending:
            self.close_now(
                f"authentication timeout (not settled within {self._handshake_timeout:g} s of the hello) "
                "(PROTOCOL.md §15.3)"
            )

    def refuse(self, sid: int, message: str) -> None:
        """Refuse the peer's subscribe ``sid`` with onError ``message`` (the auth gate's verdict)."""
        self._refuse(sid, message)

    def serve_now(self, name: str, sid: int, demand: int) -> None:
        """Start serving the peer's subscribe ``sid`` (the auth gate let it through)."""
        if self._core.state is not ConnectionState.CLOSED and not self._closing:
            self._serve(name, sid, demand)
            self._mark_dirty()

    def send_ping(self, message_type: int, payload: bytes) -> None:
        """Write an extension message at once, in a write that is not activity: a keepalive ping
        must not make a silent peer look alive to the idle timeout (``sent_at`` is untouched)."""
        self._core.send_extension(message_type, payload)
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        data = self._core.data_to_send()
        if data:
            transport.writelines(data)
        if self._core.has_data_to_send:
            self._mark_dirty()

    def flush_soon(self) -> None:
        """Write what the core holds on the next loop turn."""
        self._mark_dirty()

    def _handshake_expired(self) -> None:
        self._handshake_timer = None
        if self._core.state is ConnectionState.AWAITING_HELLO:
            hello = "serverHello" if self._core.side is Side.CLIENT else "clientHello"
            self.close_now(f"handshake timeout (no {hello} within {self._handshake_timeout:g} s)")

    def _start_linger(self, transport: Transport) -> bool:
        """After an error goodbye: stop writing, go on reading (and discarding) for a while.

        Closing a socket with unread input makes the kernel send RST, and an RST makes the
        peer's kernel drop what the peer has not read yet, the goodbye that explains the
        close among it (a flooding peer keeps sending because it has not read it). So the
        transport stays open after the goodbye and input is discarded until the peer's end of
        input, :data:`LINGER_BYTES` or :data:`LINGER_SECONDS`, whichever comes first; an
        rstreams peer ends its input as soon as it has read the goodbye. Where the transport
        can half-close (TCP, Unix) the goodbye is also followed by ``write_eof``, so the peer
        sees goodbye, then end of input. TLS and WebSocket cannot half-close: there the
        goodbye simply goes out first and the transport is closed only when the lingering
        ends. Returns whether it lingers (always, unless the transport is already closing).
        """
        if transport.is_closing():
            return False
        can_write_eof = getattr(transport, "can_write_eof", None)  # not part of the Transport seam
        if can_write_eof is not None and can_write_eof():
            transport.write_eof()  # type: ignore[attr-defined]  # asyncio sends the queued goodbye first
        self._linger_left = LINGER_BYTES
        self._linger = self._loop.call_later(LINGER_SECONDS, self._end_linger)
        return True

    def _end_linger(self) -> None:
        linger, self._linger = self._linger, None
        if linger is not None:
            linger.cancel()
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.close()

    def _end_streams(self, error: BaseException) -> None:
        self._ended = error
        if self._gate is not None:
            self._gate.close()
        deferred, self._deferred = self._deferred, []
        for args in deferred:  # they fail at once: _ended is set
            self.open_subscription(*args[:4], credentials=args[4])
        serving, self._serving = self._serving, {}
        consuming, self._consuming = self._consuming, {}
        self._refill.clear()
        self._requests.clear()
        self._packs.clear()
        for stream in serving.values():
            stream.stop()
        for subscription in consuming.values():
            subscription.error(error)

    # -- serving local publishers ----------------------------------------------------------
    def _serve(self, name: str, sid: int, initial_demand: int) -> None:
        try:
            publisher, codec, batched = self._router.resolve_batched(name)
        except UnknownPublisherError as unknown:
            self._refuse(sid, str(unknown))
            return
        except Exception as error:
            report_unhandled(error, f"the publisher factory for {name!r}")
            self._refuse(sid, f"publisher {name!r} could not be created ({type(error).__name__})")
            return
        if batched and codec is not None:
            stream: ServingStream = BatchServingStream(self, sid, initial_demand, codec)
        else:
            stream = ServingStream(self, sid, initial_demand, codec)
        self._serving[sid] = stream
        try:
            publisher.subscribe(stream)
        except Exception as error:
            report_unhandled(error, f"{type(publisher).__name__}.subscribe")
            if not stream.done:
                stream.on_error(error)

    def _refuse(self, sid: int, message: str) -> None:
        """Refuse a subscribe: onError without onSubscribe (PROTOCOL.md §5.2)."""
        if self._core.state is not ConnectionState.CLOSED:
            self._core.send(OnError(subscriber=sid, error=message))
            self._mark_dirty()

    def send_on_subscribe(self, sid: int, element_size: int) -> None:
        if sid in self._serving and self._core.state is not ConnectionState.CLOSED:
            self._core.send_on_subscribe(sid, element_size)
            self._mark_dirty()

    def send_packed(self, sid: int, elements: list[bytes]) -> None:
        """Queue a batch of fixed-size elements as one ``onNextPacked`` frame."""
        if len(elements) == 1:
            self._core.send_on_next(sid, elements[0])
        else:
            self._core.send(OnNextPacked(subscriber=sid, count=len(elements), elements=b"".join(elements)))

    def send_packed_payload(self, sid: int, count: int, payload: bytes) -> None:
        """Queue ``count`` fixed-size elements, already back to back, as one ``onNextPacked``."""
        self._core.send_on_next_packed(sid, count, payload)
        self._mark_dirty()

    def send_batch(self, sid: int, elements: list[bytes]) -> None:
        """Queue the elements one stream produced this turn as ``onNext`` frames."""
        self._core.send_on_next_many(sid, elements)

    def want_pack(self, stream: ServingStream) -> None:
        """``stream`` holds packed elements to send in this turn's write."""
        self._packs.append(stream)
        if not self._flush_scheduled:
            self._schedule_flush()

    def send_on_next(self, sid: int, data: bytes) -> None:
        """Queue one element (the serving hot path)."""
        self._core.send_on_next(sid, data)
        if not self._flush_scheduled:
            self._schedule_flush()

    def send_on_complete(self, sid: int) -> None:
        if self._serving.pop(sid, None) is not None and self._core.state is not ConnectionState.CLOSED:
            self._core.send_on_complete(sid)
            self._mark_dirty()

    def send_on_error(self, sid: int, error: BaseException) -> None:
        if self._serving.pop(sid, None) is not None and self._core.state is not ConnectionState.CLOSED:
            # The peer sees the error's type and text: what a Publisher signals is its
            # public outcome. Internal failures (factories) are summarised in _serve.
            self._core.send(OnError(subscriber=sid, error=f"{type(error).__name__}: {error}"))
            self._mark_dirty()

    def want_refill(self, stream: ServingStream) -> None:
        stream.queued = True
        self._refill[stream] = None
        if not self._flush_scheduled:
            self._schedule_flush()

    # -- consuming remote publishers -----------------------------------------------------
    def open_subscription(
        self,
        name: str,
        subscriber: Subscriber[T],
        decode: Callable[[bytes], T] | None,
        batch: Batching | None = None,
        *,
        credentials: Credentials | None = None,
    ) -> None:
        """Subscribe ``subscriber`` to the peer's ``name`` (loop thread); ``credentials``: its own (§15.4)."""
        if (
            credentials is not None
            and self._core.state is ConnectionState.AWAITING_HELLO
            and self._ended is None
        ):
            # subscribeCredentials is an extension message: never before the serverHello (§4.4)
            self._deferred.append((name, subscriber, decode, batch, credentials))
            return
        sid = self._take_id()
        subscription: RemoteSubscription[T] = RemoteSubscription(self, sid, subscriber, decode, batch)
        try:
            subscriber.on_subscribe(subscription)
        except Exception as error:
            subscription.done = True
            heapq.heappush(self._free_ids, sid)
            report_unhandled(error, f"{type(subscriber).__name__}.on_subscribe")
            return
        if subscription.done:
            heapq.heappush(self._free_ids, sid)
            return  # cancelled (or failed rule 3.9) inside on_subscribe: nothing to send
        if self._ended is not None or self._closing:
            subscription.error(self._ended or ResourceClosedError("the connection is closing"))
            return
        if credentials is not None and AUTH.id not in self._core.extensions:
            heapq.heappush(self._free_ids, sid)
            subscription.error(
                LocalProtocolError(
                    f"can't subscribe to {name!r} with credentials: the peer does not offer "
                    f"extension auth (id 2) (PROTOCOL.md §15.2)"
                )
            )
            return
        self._consuming[sid] = subscription
        self._names[sid] = name
        subscription.started = True
        if credentials is not None:
            self._core.send_extension(
                AUTH_SUBSCRIBE_CREDENTIALS, encode_subscribe_credentials(sid, credentials)
            )
        self._core.send_subscribe(name, sid, subscription.take_pending())
        self._write_now_or_soon()

    def _take_id(self) -> int:
        """The lowest free subscriber id. An id is free once its onComplete/onError was received
        (PROTOCOL.md §5.3); a cancelled id only once the publisher acknowledged the cancel."""
        if self._unacked:
            core = self._core
            acked = [sid for sid in self._unacked if not core.id_in_use(sid)]
            for sid in acked:
                self._unacked.discard(sid)
                heapq.heappush(self._free_ids, sid)
        if self._free_ids:
            return heapq.heappop(self._free_ids)
        sid = self._next_id
        self._next_id = sid + 1
        return sid

    def _free_id(self, sid: int) -> None:
        """The terminal signal for our ``sid`` was received: the id may be reused."""
        self._unacked.discard(sid)  # a cancel that crossed the terminal: freed once, here
        heapq.heappush(self._free_ids, sid)

    def request_now(self, subscription: RemoteSubscription[Any]) -> None:
        """Send ``subscription``'s pending demand, and anything else queued, in a write of its own."""
        self._requests.pop(subscription, None)
        n = subscription.take_pending()
        transport = self._transport
        if not n or subscription.done or transport is None or self._ended is not None:
            return
        self._core.send_request(subscription.sid, n)
        data = self._core.data_to_send()
        if data and not transport.is_closing():
            transport.writelines(data)
            self.sent_at = self._loop.time()

    def want_request(self, subscription: RemoteSubscription[Any]) -> None:
        self._requests[subscription] = None
        if not self._flush_scheduled:
            self._schedule_flush()

    def cancel_subscription(self, subscription: RemoteSubscription[Any]) -> None:
        sid = subscription.sid
        self._requests.pop(subscription, None)
        if self._consuming.get(sid) is subscription and self._ended is None:
            del self._consuming[sid]
            self._names.pop(sid, None)
            self._core.send(Cancel(subscriber=sid))
            self._unacked.add(sid)  # in use until the publisher's acknowledgement (§5.4)
            self._mark_dirty()

    # -- loop plumbing ---------------------------------------------------------------------
    def run_on_loop(self, fn: Callable[..., object], *args: Any) -> None:
        """Call ``fn(*args)`` now when on the loop's thread, else hand it over."""
        if threading.get_ident() == self._loop_thread:
            fn(*args)
        else:
            self._loop.call_soon_threadsafe(fn, *args)

    def call_soon_threadsafe(self, fn: Callable[..., object], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the connection is gone
            self._loop.call_soon_threadsafe(fn, *args)

    def _write_now_or_soon(self) -> None:
        """Write the core's output now if that loses no coalescing, else schedule the flush.

        No coalescing is lost when this loop turn has nothing else to run (the default loop's
        ready queue is empty): the scheduled flush would be alone on the next turn, after an
        extra ``epoll_wait``. That turn is one of three per request/response round trip.
        Only plain writes are done here (nothing else waits to be flushed), so no local
        publisher is called from inside the caller's ``subscribe``/``request``.
        """
        ready = getattr(self._loop, "_ready", None)  # asyncio's; uvloop has none: schedule
        transport = self._transport
        if (
            ready is None
            or ready
            or self._flush_scheduled
            or self.reading
            or self._refill
            or self._packs
            or self._requests
            or not self._writable
            or transport is None
            or transport.is_closing()
        ):
            self._mark_dirty()
            return
        data = self._core.data_to_send()
        if data:
            transport.writelines(data)
            self.sent_at = self._loop.time()
        if self._core.has_data_to_send:
            self._mark_dirty()

    def _mark_dirty(self) -> None:
        if not self._flush_scheduled:
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        self._flush_scheduled = True
        self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Once per loop turn: send coalesced requests, refill local publishers, write."""
        self._flush_scheduled = False
        self._flush_handle = None
        core = self._core
        if self._requests:
            self._send_requests()
        transport = self._transport
        if transport is None:
            return
        if self._refill and self._writable:
            self._flush_scheduled = True  # elements produced now go out in this very write
            self._refill_streams(transport)
            self._flush_scheduled = False
            if self._requests:  # a local publisher that relays a remote one asked for more
                self._send_requests()
        if self._packs:
            packs, self._packs = self._packs, []
            for stream in packs:
                stream.flush_pack()
        data = core.data_to_send()
        self._turn_bytes = 0
        if data and not transport.is_closing():
            if self._joins and len(data) > 1:
                _write_grouped(transport, data)
            else:
                transport.writelines(data)
            self.sent_at = self._loop.time()
        if (self._refill or core.has_data_to_send) and self._writable and not self._flush_scheduled:
            self._schedule_flush()  # room or the write limit was used up this turn: go on next turn

    def _send_requests(self) -> None:
        pending, self._requests = self._requests, {}
        core = self._core
        for subscription in pending:
            n = subscription.take_pending()
            if n and not subscription.done:
                core.send_request(subscription.sid, n)

    def _refill_streams(self, transport: Transport) -> None:
        """Ask the waiting streams for more, in order, while this turn's room lasts.

        Fair in two ways. Each stream is offered an equal share of the room (at least
        :data:`_MIN_SHARE`), so many streams progress at the same rate rather than one
        per turn. And round robin: a stream re-queues itself while it is being refilled
        (its elements arrive synchronously), so streams left without room are put back
        *ahead* of it and of any other that re-queued this turn; otherwise the first
        stream would be served first every turn and starve the rest.
        """
        high = self._high
        buffered = transport.get_write_buffer_size()
        streams = list(self._refill)
        self._refill.clear()
        share = max((high - buffered - self._turn_bytes) // len(streams), _MIN_SHARE)
        for index, stream in enumerate(streams):
            room = high - buffered - self._turn_bytes
            if room <= 0 or not self._writable:
                requeued = self._refill
                self._refill = dict.fromkeys(streams[index:])
                self._refill.update(requeued)
                return
            self._turn_bytes += stream.refill(min(room, share))


_MIN_SHARE = 16 * 1024
"""Least room offered to one stream in a refill, however many wait: keeps batches worth a turn."""

_DIRECT = 32 * 1024
"""Chunks at least this big are written on their own (see :func:`_write_grouped`)."""


def _write_grouped(transport: Transport, chunks: list[bytes]) -> None:
    """``writelines`` for transports whose ``writelines`` is ``write(b"".join(chunks))`` (asyncio's
    socket transports before Python 3.12): a large element is written on its own, not copied
    into the join (``b"".join`` of one ``bytes`` is that object); small chunks are still joined,
    so small frames still cost one ``send`` per turn."""
    small: list[bytes] = []
    for chunk in chunks:
        if len(chunk) >= _DIRECT:
            if small:
                transport.writelines(small)
                small = []
            transport.writelines([chunk])
        else:
            small.append(chunk)
    if small:
        transport.writelines(small)
