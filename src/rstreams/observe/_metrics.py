"""What a server's connections and streams did: counters fed by a narrow hook in ``rstreams.net``.

Theory of operation. Counting costs nothing when it is off: every connection's outbox has one
attribute, ``observer``, that is ``None`` unless the server was made with ``metrics=``; the
few places in ``rstreams.net`` where something worth counting happens test it and, when it is
set, call one method of a :class:`ConnectionObserver` (or of the :class:`StreamObserver` a
serving stream was given when it opened). Those places run per write, per read, per loop turn
of a stream or per protocol signal, never per element: elements and bytes are added a turn's
worth at a time.

Three levels keep what a scrape reads bounded:

* :class:`ServerMetrics`, one per server: the totals of connections that have closed, and
  one :class:`PatternTotals` per *publisher pattern*: the key the server's offer matched
  (``sensors/{id}``, not ``sensors/kitchen``), so labels stay as few as the offer's keys
  whatever names clients ask for;
* :class:`ConnectionObserver`, one per open connection: bytes, goodbyes, the time its
  transport refused more output;
* :class:`StreamObserver`, one per open serving stream: elements, bytes and demand, and the
  two ways a stream waits: *stalled on demand* (the subscriber has granted nothing more) and
  *stalled on the socket* (it has demand, but the transport is above its high-water mark).
  Stall time is measured on the server's clock (``time.monotonic``, which asyncio's own loop
  reads too, called directly: a C function) from the moment the state began to the moment
  it ended, so a stall still under way counts up to the moment of a snapshot.

A stream's numbers join its pattern's totals when it ends (its requests are counted there at
once), and a connection's join the server's when it closes, so totals only grow (Prometheus
counters) and a snapshot is the closed totals plus what the open ones hold. The pattern a
name matched is looked up once per name on a connection: a peer asks for the same names
again and again.

A stream answered from elements known before it opened (``just(x)``, ``empty()``: a
request's answer) and granted demand for all of them is *counted ahead*: when it opens,
:meth:`ConnectionObserver.known_stream_opened` adds to its pattern's totals what sending them
all and completing will add, in one call and without an observer; the serving side forgets
the stream's entry once it did (:attr:`ConnectionObserver.deferred`). Anything that would
have read or changed its observer before that (a request, a cancel, a pause of the socket,
the connection's end, a snapshot) takes the count back and makes the observer first, so every
number comes out as if it had had one from the start, and a snapshot never sees a count ahead.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rstreams.observe._trace import SubscriptionSpan

__all__ = [
    "UNBOUNDED",
    "ConnectionObserver",
    "PatternTotals",
    "ServerMetrics",
    "StreamObserver",
    "goodbye_reason",
    "stream_error_reason",
]

UNBOUNDED = 2**63 - 1
"""Demand that never runs out (rule 3.17): a stream granted it is never stalled on demand."""

Clock = Callable[[], float]


class Traceable(Protocol):
    """A subscribe's metadata (``rstreams.net``'s), as far as tracing reads it."""

    @property
    def traceparent(self) -> str | None:
        """Its W3C Trace Context entry, or ``None``."""
        ...


class Deferred(Protocol):
    """A serving stream (``rstreams.net``'s) whose observer is made only if it is needed
    (:meth:`ConnectionObserver.known_stream_opened`)."""

    obs: StreamObserver | None
    """Its observer: set by :meth:`ConnectionObserver.open_deferred`."""


class FrameTap(Protocol):
    """What logs every frame written and read (``rstreams.observe._log``'s frame log, set on
    :attr:`ConnectionObserver.frames` by the debug switch): typed here so that this module
    does not import the one that builds on it."""

    def sent(self, data: list[bytes]) -> None:
        """``data`` was handed to the transport."""
        ...

    def received(self, data: bytes | memoryview) -> None:
        """``data`` was read from the transport."""
        ...


class Patterns(Protocol):
    """What finds the publisher pattern a name matches (``rstreams.net``'s router)."""

    def pattern(self, name: str) -> str:
        """The offer's key ``name`` matches (``"(unknown)"`` when none does): a bounded label."""
        ...


# Goodbye and onError texts are free text; labels must not be. Each text is reduced to the
# first entry whose prefix it starts with, else "other".
_GOODBYES = (
    ("", "normal"),
    ("authentication failed", "authentication failed"),
    ("authentication required", "authentication required"),
    ("authentication timeout", "authentication timeout"),
    ("authentication not possible", "authentication not possible"),
    ("idle timeout", "idle timeout"),
    ("handshake timeout", "handshake timeout"),
    ("too many connections", "too many connections"),
    ("peer not reading", "peer not reading"),
    ("server closing", "server closing"),
    ("resume", "resume"),
)
_STREAM_ERRORS = (
    ("unauthorized", "unauthorized"),
    ("unauthenticated", "unauthenticated"),
    ("no publisher named", "unknown publisher"),
    ("publisher ", "publisher not created"),
)
AUTH_GOODBYES = frozenset(reason for _, reason in _GOODBYES if reason.startswith("authentication"))


def goodbye_reason(text: str) -> str:
    """The bounded label for a goodbye's reason text (``"other"`` for texts of no known kind)."""
    if not text:
        return "normal"
    for prefix, label in _GOODBYES[1:]:
        if text.startswith(prefix):
            return label
    return "other"


def stream_error_reason(text: str) -> str:
    """The bounded label for an ``onError`` text this side sent."""
    for prefix, label in _STREAM_ERRORS:
        if text.startswith(prefix):
            return label
    return "publisher error"


@dataclasses.dataclass(slots=True)
class PatternTotals:
    """The numbers of every stream served under one publisher pattern, ended or open."""

    pattern: str = ""
    others: int = 0
    """Subscribes that did not end completed or cancelled: refused, failed, or cut off by their
    connection's end (the subscriptions counted are these, the completed, the cancelled and the
    open ones: a stream that completes counts once, when it does)."""
    completed: int = 0
    cancelled: int = 0
    elements: int = 0
    bytes: int = 0
    requests: int = 0
    demand_granted: int = 0
    stalled_demand: float = 0.0
    stalled_socket: float = 0.0
    inputs: int = 0
    answers: int = 0
    """Streams that sent one known element on a grant of one and completed (a request's answer,
    :meth:`ConnectionObserver.known_stream_opened`): each is one more completed, elements and
    demand_granted (kept apart: one addition for the three)."""
    errors: Counter[str] = dataclasses.field(default_factory=Counter)


class StreamObserver:
    """One serving stream's numbers (the peer's subscription ``sid`` on our ``name``).

    Demand is tracked the way the stream tracks it, from the same signals: outstanding is
    what was granted minus what was sent, so the observer needs no view of the stream.
    Made by :meth:`ConnectionObserver.stream_opened`, which sets every field (every subscribe
    served makes one: one call, where an ``__init__`` would be a second).
    """

    __slots__ = (
        "bytes",
        "conn",
        "elements",
        "granted",
        "inputs",
        "name",
        "opened_at",
        "sid",
        "socket_since",
        "stalled_demand",
        "stalled_socket",
        "starved_since",
        "totals",
    )

    conn: ConnectionObserver
    name: str
    sid: int
    totals: PatternTotals
    """Its pattern's totals (requests are counted there at once: a stream shows none of its own)."""
    elements: int
    bytes: int
    inputs: int
    """Elements received on the stream's channel input (PROTOCOL.md §21), if it is a channel."""
    granted: int
    opened_at: float
    stalled_demand: float
    stalled_socket: float
    starved_since: float | None
    socket_since: float | None

    @property
    def pattern(self) -> str:
        """The publisher pattern the stream's name matched (its label)."""
        return self.totals.pattern

    @property
    def outstanding(self) -> int:
        """Elements the peer still allows us to send."""
        granted = self.granted
        return UNBOUNDED if granted >= UNBOUNDED else granted - self.elements

    # -- hooks (rstreams.net calls these) --------------------------------------------------------
    def sent(self, count: int, nbytes: int) -> None:
        """A turn's elements went to the core: ``count`` elements, ``nbytes`` payload bytes."""
        self.bytes += nbytes
        elements = self.elements = self.elements + count
        if elements >= self.granted and self.starved_since is None:
            clock = self.conn.clock  # read, then called: a slot's callable is no method
            now = self.starved_since = clock()
            since = self.socket_since
            if since is not None:
                self.stalled_socket += now - since
                self.socket_since = None

    def demand(self, n: int) -> None:
        """The peer sent ``request(n)``."""
        self.totals.requests += 1
        granted = self.granted + n
        self.granted = UNBOUNDED if granted >= UNBOUNDED else granted
        since = self.starved_since
        if since is not None:
            conn = self.conn
            clock = conn.clock
            now = clock()
            self.stalled_demand += now - since
            self.starved_since = None
            if conn.paused_since is not None:
                self.socket_since = now

    def ended(self, outcome: str, reason: str = "") -> None:
        """The stream ended: ``"completed"``, ``"cancelled"``, ``"error"`` (with ``reason``) or
        ``"closed"`` (the connection ended); its numbers join its pattern's totals."""
        conn = self.conn
        if conn.streams.pop(self.sid, None) is not self:
            return
        totals = self.totals
        totals.elements += self.elements
        totals.bytes += self.bytes
        if self.inputs:  # a channel's (the numbers that are mostly 0 are added when they are not)
            totals.inputs += self.inputs
        granted = self.granted
        if granted < UNBOUNDED:  # an unbounded grant is not counted (as bounded_grants)
            totals.demand_granted += granted
        demand, socket = self.stalled_demand, self.stalled_socket
        starved, paused = self.starved_since, self.socket_since
        if starved is not None or paused is not None:  # a stall under way ends now (as stalled())
            clock = conn.clock
            now = clock()
            if starved is not None:
                demand += now - starved
            if paused is not None:
                socket += now - paused
        if demand:
            totals.stalled_demand += demand
        if socket:
            totals.stalled_socket += socket
        if outcome == "completed":
            totals.completed += 1
        elif outcome == "cancelled":
            totals.cancelled += 1
        else:
            totals.others += 1
            if outcome == "error":
                totals.errors[stream_error_reason(reason)] += 1
        if conn.log is not None:
            conn.log_stream(self, outcome)

    # -- reading -------------------------------------------------------------------------------------
    def stalled(self, now: float) -> tuple[float, float]:
        """Seconds stalled on demand and on the socket so far, the current stall included."""
        demand, socket = self.stalled_demand, self.stalled_socket
        if self.starved_since is not None:
            demand += now - self.starved_since
        if self.socket_since is not None:
            socket += now - self.socket_since
        return demand, socket

    def bounded_grants(self) -> int:
        """Elements granted, an unbounded grant not counted (it would swamp every sum)."""
        return self.granted if self.granted < UNBOUNDED else 0

    def _socket_end(self, now: float) -> None:
        since = self.socket_since
        if since is not None:
            self.stalled_socket += now - since
            self.socket_since = None

    def socket_paused(self, now: float) -> None:
        if self.starved_since is None and self.socket_since is None:
            self.socket_since = now

    def socket_resumed(self, now: float) -> None:
        self._socket_end(now)

    def snapshot(self, now: float) -> dict[str, Any]:
        demand, socket = self.stalled(now)
        return {
            "connection": self.conn.id,
            "subscriber": self.sid,
            "publisher": self.name,
            "pattern": self.pattern,
            "demand": self.outstanding,
            "elements_sent": self.elements,
            "bytes_sent": self.bytes,
            "stalled_demand_seconds": demand,
            "stalled_socket_seconds": socket,
            "input_elements_received": self.inputs,
            "seconds": now - self.opened_at,
        }


class _TracedStream(StreamObserver):
    """A stream served while tracing (an OpenTelemetry SDK is installed): it has a span."""

    __slots__ = ("span",)

    span: SubscriptionSpan

    def sent(self, count: int, nbytes: int) -> None:
        self.span.element()
        StreamObserver.sent(self, count, nbytes)

    def ended(self, outcome: str, reason: str = "") -> None:
        if self.conn.streams.get(self.sid) is self:
            StreamObserver.ended(self, outcome, reason)
            self.span.end(outcome, reason)


class ConnectionObserver:
    """One connection's numbers and its open serving streams' observers."""

    __slots__ = (
        "client_spans",
        "clock",
        "deferred",
        "elements_received",
        "frames",
        "goodbyes",
        "id",
        "log",
        "names",
        "paused_since",
        "replayed_bytes",
        "resumptions",
        "server",
        "split_parts",
        "stalled_socket",
        "streams",
        "transferred",
    )

    def __init__(self, server: ServerMetrics) -> None:
        self.server = server
        self.id = 0
        """The connection's number on its server, from 1 in the order they opened (0 until then)."""
        self.clock = server.clock
        self.streams: dict[int, StreamObserver] = {}
        self.names: dict[str, PatternTotals] = {}
        """The totals of the pattern each name served on this connection matched (at most
        :data:`_NAMES_REMEMBERED`): a name asked for again needs no pattern lookup."""
        self.deferred: dict[
            int, tuple[Deferred, PatternTotals, str, int, Traceable | None, float, int, int]
        ] = {}
        """Streams counted ahead (:meth:`known_stream_opened`), by subscriber id: ``(stream,
        its pattern's totals, name, initial demand, metadata, time opened, elements, bytes)``.
        The serving side removes a stream's entry once it has sent them all and completed (its
        count then stands): a dict operation, not a call, on a request's answer."""
        self.client_spans: dict[int, SubscriptionSpan] = {}  # our subscriptions' spans, when tracing
        self.elements_received = 0
        self.resumptions = 0
        self.replayed_bytes = 0
        self.stalled_socket = 0.0
        self.paused_since: float | None = None
        self.goodbyes: Counter[tuple[str, str]] = Counter()
        self.split_parts: Callable[[], tuple[int, int]] = _none_yet
        """``() -> (split elements being sent, being received)``: set by the server."""
        self.transferred: Callable[[], tuple[int, int]] = _none_yet
        """``() -> (bytes sent, bytes received)`` so far: set by the connection, which counts
        them in plain fields (no call per read or write); read when scraped, and once more
        when the connection closes (its final counts join the server's totals)."""
        self.log: Callable[[str, StreamObserver | None, str], None] | None = None
        """Structured log records for this connection (:mod:`rstreams.observe._log`), or ``None``."""
        self.frames: FrameTap | None = None
        """Logs every frame written and read (the debug switch, :mod:`rstreams.observe._log`), or ``None``."""

    @property
    def tracing(self) -> bool:
        """Whether this connection's subscriptions get spans (an OpenTelemetry SDK is installed):
        a subscribe made before the peer's hello then waits for it, so that its ``traceparent``
        can go in subscribe metadata if the peer takes extension metadata (§4.4, §18)."""
        return self.server.tracer is not None

    # -- hooks (rstreams.net calls these) --------------------------------------------------------
    def wrote(self, data: list[bytes]) -> None:
        """``data`` was handed to the transport; called only while :attr:`frames` logs (the
        byte counts come from :attr:`transferred`)."""
        if self.frames is not None:
            self.frames.sent(data)

    def read(self, data: memoryview) -> None:
        """``data`` was read from the transport (and is about to be handled); called only
        while :attr:`frames` logs (the byte counts come from :attr:`transferred`)."""
        if self.frames is not None:
            self.frames.received(data)

    def received(self, count: int, sid: int) -> None:
        """Elements arrived for our subscription ``sid`` on the peer's publishers."""
        self.elements_received += count
        if self.client_spans:
            span = self.client_spans.get(sid)
            if span is not None:
                span.element()

    def input_received(self, sid: int) -> None:
        """An element arrived on the input of the channel we serve as the peer's ``sid`` (§21)."""
        stream = self.streams.get(sid)
        if stream is not None:
            stream.inputs += 1

    def subscribed(self, sid: int, name: str, metadata: bytes | None = None) -> bytes | None:
        """We subscribe to the peer's ``name`` as ``sid`` with ``metadata`` (its encoded entries,
        PROTOCOL.md §18). When tracing: a span, the child of the metadata's ``traceparent`` (or of
        the caller's current span); returns the metadata to send, which carries a
        ``traceparent`` (the span's, when it had none) so that the server's span joins the trace."""
        tracer = self.server.tracer
        if tracer is None:
            return metadata
        from rstreams.observe._trace import SubscriptionSpan, traceparent_of, with_traceparent

        path = name.partition("?")[0]  # no query: its values may be secrets
        given = traceparent_of(metadata)
        span = self.client_spans[sid] = SubscriptionSpan(
            tracer,
            "rstreams subscribe",
            server=False,
            traceparent=given,
            attributes={"rstreams.publisher": path, "rstreams.subscriber": sid},
        )
        return metadata if given is not None else with_traceparent(metadata, span.traceparent())

    def unsubscribed(self, sid: int, outcome: str, reason: str = "") -> None:
        """Our subscription ``sid`` ended: ``completed``, ``cancelled``, ``error`` or ``closed``."""
        if self.client_spans:
            span = self.client_spans.pop(sid, None)
            if span is not None:
                span.end(outcome, reason)

    def stream_opened(
        self,
        pattern: str | Patterns,
        name: str,
        sid: int,
        initial_demand: int,
        metadata: Traceable | None = None,
    ) -> StreamObserver:
        """A subscribe to ``name`` is being served as the peer's ``sid``. ``pattern``: the
        publisher pattern ``name`` matched, or what finds it (the serving side's router), asked
        once per name on this connection since a peer asks for the same names again and again;
        ``metadata``: the subscribe's (PROTOCOL.md §18), whose W3C ``traceparent`` is read only
        when tracing."""
        if isinstance(pattern, str):
            totals = self.server.pattern(pattern)
        else:
            known = self.names.get(name)
            totals = known if known is not None else self._totals_of(name, pattern)
        tracer = self.server.tracer
        self.streams[sid] = stream = StreamObserver() if tracer is None else _TracedStream()
        stream.conn = self
        stream.name = name
        stream.sid = sid
        stream.totals = totals
        stream.elements = stream.bytes = stream.inputs = 0
        stream.granted = initial_demand
        clock = self.clock
        stream.opened_at = now = clock()
        stream.stalled_demand = stream.stalled_socket = 0.0
        stream.starved_since = None if initial_demand else now
        stream.socket_since = now if self.paused_since is not None and initial_demand else None
        if tracer is not None:
            _trace(stream, tracer, None if metadata is None else metadata.traceparent)
        if self.log is not None:
            self.log("subscription opened", stream, name)
        return stream

    def _totals_of(self, name: str, patterns: Patterns) -> PatternTotals:
        """The totals of the pattern ``name`` matches, remembered for this connection (a bounded
        number of names: a peer asking for ever new ones makes it start over)."""
        names = self.names
        if len(names) >= _NAMES_REMEMBERED:
            names.clear()
        totals = names[name] = self.server.pattern(patterns.pattern(name))
        return totals

    def known_stream_opened(
        self,
        stream: Deferred,
        pattern: str | Patterns,
        name: str,
        sid: int,
        initial_demand: int,
        count: int,
        nbytes: int,
        metadata: Traceable | None = None,
    ) -> StreamObserver | None:
        """As :meth:`stream_opened`, for a ``stream`` that answers from ``count`` elements of
        ``nbytes`` bytes in all, known before it opened (``just(x)``, ``empty()``, a request's
        answer sent whole). When ``initial_demand`` covers them all (and no log or span needs an
        observer): ``None``, and the stream is counted ahead as sent and completed
        (:attr:`deferred`, :meth:`open_deferred`)."""
        if (
            initial_demand < count
            or self.paused_since is not None
            or self.log is not None
            or self.server.tracer is not None
        ):
            return self.stream_opened(pattern, name, sid, initial_demand, metadata)
        if isinstance(pattern, str):
            totals = self.server.pattern(pattern)
        else:
            known = self.names.get(name)
            totals = known if known is not None else self._totals_of(name, pattern)
        totals.bytes += nbytes  # _count_known(..., +1), inlined
        if count == 1 and initial_demand == 1:  # a request's answer
            totals.answers += 1
        else:
            totals.completed += 1
            totals.elements += count
            if initial_demand < UNBOUNDED:
                totals.demand_granted += initial_demand
        clock = self.clock
        self.deferred[sid] = (stream, totals, name, initial_demand, metadata, clock(), count, nbytes)
        return None

    def open_deferred(self, sid: int) -> StreamObserver | None:
        """Take back the count ahead of the stream ``sid`` and make its observer (something is
        about to read or change it), which the stream gets too; ``None`` if it has none."""
        entry = self.deferred.pop(sid, None)
        if entry is None:
            return None
        stream, totals, name, granted, metadata, opened_at, count, nbytes = entry
        _count_known(totals, count, nbytes, granted, -1)
        observer = stream.obs = self.stream_opened(totals.pattern, name, sid, granted, metadata)
        observer.opened_at = opened_at
        return observer

    def open_all_deferred(self) -> None:
        """:meth:`open_deferred` for every stream counted ahead (before a snapshot, a pause, the end)."""
        for sid in list(self.deferred):
            self.open_deferred(sid)

    def refused(self, pattern: str, message: str) -> None:
        """A subscribe was answered with ``onError`` at once (unknown, unauthorized, ...)."""
        totals = self.server.pattern(pattern)
        totals.others += 1
        totals.errors[stream_error_reason(message)] += 1
        if self.log is not None:
            self.log("subscription refused", None, message)

    def socket_paused(self) -> None:
        """The transport went above its high-water mark: streams with demand wait for it."""
        if self.paused_since is None:
            if self.deferred:  # they have demand: their socket stall starts now, as the others'
                self.open_all_deferred()
            self.paused_since = now = self.clock()
            for stream in self.streams.values():
                stream.socket_paused(now)

    def socket_resumed(self) -> None:
        since = self.paused_since
        if since is not None:
            self.paused_since = None
            now = self.clock()
            self.stalled_socket += now - since
            for stream in self.streams.values():
                stream.socket_resumed(now)

    def goodbye(self, reason: str, *, sent: bool) -> None:
        """A goodbye was said (``sent``) or heard; a protocol violation counts as ``"protocol error"``."""
        label = reason if reason == "protocol error" else goodbye_reason(reason)
        self.goodbyes["sent" if sent else "received", label] += 1
        if self.log is not None:
            self.log("goodbye sent" if sent else "goodbye received", None, reason)

    def resumed(self, replayed: int) -> None:
        """The session resumed on a new transport; ``replayed`` bytes were sent again."""
        self.resumptions += 1
        self.replayed_bytes += replayed

    def closed(self) -> None:
        """The transport closed: every stream left ends as ``"closed"``; the totals join the server's."""
        if self.deferred:
            self.open_all_deferred()
        for stream in list(self.streams.values()):
            stream.ended("closed")
        for sid in list(self.client_spans):
            self.unsubscribed(sid, "closed", "the connection closed")
        self.socket_resumed()
        self.server.connection_closed(self)

    def log_stream(self, stream: StreamObserver, outcome: str) -> None:
        if self.log is not None:
            self.log(f"subscription {outcome}", stream, "")


def _count_known(totals: PatternTotals, count: int, nbytes: int, granted: int, sign: int) -> None:
    """Add (``sign`` 1) or take back (-1) a stream's count ahead: ``count`` elements of ``nbytes``
    bytes sent on a grant of ``granted``, completed (as :meth:`ConnectionObserver.known_stream_opened`)."""
    totals.bytes += sign * nbytes
    if count == 1 and granted == 1:
        totals.answers += sign
        return
    totals.completed += sign
    totals.elements += sign * count
    if granted < UNBOUNDED:
        totals.demand_granted += sign * granted


_NAMES_REMEMBERED = 256
"""Names whose pattern a connection remembers (:attr:`ConnectionObserver.names`)."""


def _trace(stream: StreamObserver, tracer: Any, traceparent: str | None) -> None:
    """Give a stream served while tracing its span (:mod:`rstreams.observe._trace`)."""
    from rstreams.observe._trace import SubscriptionSpan

    assert isinstance(stream, _TracedStream)
    path = stream.name.partition("?")[0]  # no query: its values may be secrets
    stream.span = SubscriptionSpan(
        tracer,
        f"rstreams serve {stream.pattern}",
        server=True,
        traceparent=traceparent,
        attributes={
            "rstreams.publisher": path,
            "rstreams.pattern": stream.pattern,
            "rstreams.subscriber": stream.sid,
        },
    )


def _none_yet() -> tuple[int, int]:
    """``(0, 0)``: :attr:`ConnectionObserver.split_parts` and ``transferred`` until the server
    and the connection set theirs."""
    return 0, 0


class ServerMetrics:
    """A server's numbers; see the module docstring. Made by ``serve(..., metrics=...)``."""

    def __init__(
        self, clock: Clock = time.monotonic, *, version: Callable[[], str] = lambda: "", side: str = "server"
    ) -> None:
        self.clock = clock
        self.side = side
        """``"server"``, or ``"client"`` for the one that numbers a process's client connections (logs)."""
        self.started = clock()
        self.version = version
        """``() -> str``: the version a snapshot reports."""
        self.connections: dict[int, ConnectionObserver] = {}
        self.connections_total = 0
        self._next_id = 1
        self.patterns: dict[str, PatternTotals] = {}
        self.closed = ConnectionTotals()
        self.logger: Callable[[ConnectionObserver], None] | None = None
        """Called with each new connection's observer to attach its log (``None``: no logging)."""
        self.tracer: Any = None
        """The OpenTelemetry tracer of subscriptions' spans (:mod:`rstreams.observe._trace`), or ``None``."""
        self.sections: dict[str, Callable[[], dict[str, Any]]] = {}
        """Further numbers a snapshot includes under their name (``Server.add_metrics``)."""

    def pattern(self, pattern: str) -> PatternTotals:
        totals = self.patterns.get(pattern)
        if totals is None:
            totals = self.patterns[pattern] = PatternTotals(pattern)
        return totals

    def connection(self) -> ConnectionObserver:
        """The observer of a connection being made (it counts once :meth:`opened` says so)."""
        conn = ConnectionObserver(self)
        if self.logger is not None:
            self.logger(conn)
        return conn

    def opened(self, conn: ConnectionObserver) -> None:
        """The connection was accepted (its hello arrived, within the server's limits)."""
        conn.id = cid = self._next_id
        self._next_id = cid + 1
        self.connections[cid] = conn
        self.connections_total += 1
        if conn.log is not None:
            conn.log("connection opened", None, "")

    def connection_closed(self, conn: ConnectionObserver) -> None:
        if self.connections.pop(conn.id, None) is None:
            return
        self.closed.add(conn)
        if conn.log is not None:
            conn.log("connection closed", None, "")

    # -- reading -------------------------------------------------------------------------------------
    def snapshot(self, *, streams: bool = True) -> dict[str, Any]:
        """The server's numbers now, as plain data (JSON-able): see docs/observability.md."""
        now = self.clock()
        totals = ConnectionTotals()
        totals.merge(self.closed)
        open_patterns: dict[str, dict[str, Any]] = {}
        parts = [0, 0]
        stream_rows: list[dict[str, Any]] = []
        for conn in self.connections.values():
            if conn.deferred:  # open streams, counted as such
                conn.open_all_deferred()
            totals.add(conn, now)
            sending, receiving = conn.split_parts()
            parts[0] += sending
            parts[1] += receiving
            for stream in conn.streams.values():
                row = open_patterns.setdefault(stream.pattern, _open_row())
                demand, socket = stream.stalled(now)
                row["open"] += 1
                row["elements"] += stream.elements
                row["bytes"] += stream.bytes
                row["inputs"] += stream.inputs
                row["granted"] += stream.bounded_grants()
                row["demand"] = min(UNBOUNDED, row["demand"] + stream.outstanding)
                row["stalled_demand"] += demand
                row["stalled_socket"] += socket
                if streams:
                    stream_rows.append(stream.snapshot(now))
        publishers: dict[str, dict[str, Any]] = {}
        for pattern, closed in sorted(self.patterns.items()):
            row = open_patterns.get(pattern, _open_row())
            completed, answers = closed.completed + closed.answers, closed.answers
            publishers[pattern] = {
                "subscriptions_open": row["open"],
                "subscriptions_total": closed.others + completed + closed.cancelled + row["open"],
                "completed": completed,
                "cancelled": closed.cancelled,
                "errors": dict(closed.errors),
                "elements_sent": closed.elements + answers + row["elements"],
                "bytes_sent": closed.bytes + row["bytes"],
                "requests": closed.requests,  # counted at once, open streams' included
                "demand_granted": closed.demand_granted + answers + row["granted"],
                "demand_outstanding": row["demand"],
                "stalled_demand_seconds": closed.stalled_demand + row["stalled_demand"],
                "stalled_socket_seconds": closed.stalled_socket + row["stalled_socket"],
                "input_elements_received": closed.inputs + row["inputs"],
            }
        goodbyes = [
            {"direction": direction, "reason": reason, "count": count}
            for (direction, reason), count in sorted(totals.goodbyes.items())
        ]
        auth_failures = sum(
            count
            for (direction, reason), count in totals.goodbyes.items()
            if direction == "sent" and reason in AUTH_GOODBYES
        )
        snapshot: dict[str, Any] = {
            "version": self.version(),
            "uptime_seconds": now - self.started,
            "connections_open": len(self.connections),
            "connections_total": self.connections_total,
            "bytes_sent": totals.bytes_sent,
            "bytes_received": totals.bytes_received,
            "elements_received": totals.elements_received,
            "stalled_socket_seconds": totals.stalled_socket,
            "split_parts_sending": parts[0],
            "split_parts_receiving": parts[1],
            "goodbyes": goodbyes,
            "auth_failures": {
                "connection": auth_failures,
                "subscription": sum(
                    t.errors["unauthorized"] + t.errors["unauthenticated"] for t in self.patterns.values()
                ),
            },
            "idle_timeouts": totals.goodbyes["sent", "idle timeout"],
            "resumptions": totals.resumptions,
            "replayed_bytes": totals.replayed_bytes,
            "publishers": publishers,
        }
        for name, read in self.sections.items():
            snapshot[name] = read()
        if streams:
            snapshot["streams"] = stream_rows
        return snapshot


def _open_row() -> dict[str, Any]:
    return dict.fromkeys(
        (
            "open",
            "elements",
            "bytes",
            "inputs",
            "granted",
            "demand",
            "stalled_demand",
            "stalled_socket",
        ),
        0,
    )


class ConnectionTotals:
    """The sums over connections (the closed ones, kept by the server; or all, in a snapshot)."""

    __slots__ = (
        "bytes_received",
        "bytes_sent",
        "elements_received",
        "goodbyes",
        "replayed_bytes",
        "resumptions",
        "stalled_socket",
    )

    def __init__(self) -> None:
        self.bytes_sent = 0
        self.bytes_received = 0
        self.elements_received = 0
        self.resumptions = 0
        self.replayed_bytes = 0
        self.stalled_socket = 0.0
        self.goodbyes: Counter[tuple[str, str]] = Counter()

    def add(self, conn: ConnectionObserver, now: float | None = None) -> None:
        sent, received = conn.transferred()
        self.bytes_sent += sent
        self.bytes_received += received
        self.elements_received += conn.elements_received
        self.resumptions += conn.resumptions
        self.replayed_bytes += conn.replayed_bytes
        self.stalled_socket += conn.stalled_socket
        if now is not None and conn.paused_since is not None:
            self.stalled_socket += now - conn.paused_since
        self.goodbyes.update(conn.goodbyes)

    def merge(self, other: ConnectionTotals) -> None:
        self.bytes_sent += other.bytes_sent
        self.bytes_received += other.bytes_received
        self.elements_received += other.elements_received
        self.resumptions += other.resumptions
        self.replayed_bytes += other.replayed_bytes
        self.stalled_socket += other.stalled_socket
        self.goodbyes.update(other.goodbyes)
