"""The publishing side of one stream: a local Publisher serving a remote subscriber.

Theory of operation. When the peer sends ``subscribe(name, id, initialDemand)``, the
connection resolves ``name`` to a local Publisher and subscribes a :class:`ServingStream`
to it. The stream is the local Publisher's Subscriber; every element it receives is
encoded and handed to the connection, which queues an ``onNext`` frame.

Demand, and why memory stays bounded: the peer's demand (``remote_demand``, up to
``2**63 - 1``) is a *permission*, not what we ask the local Publisher for. What we
request upstream (``outstanding``) is decided by :meth:`refill`, which the connection
calls once per event-loop turn, only while the transport is writable, with the room
left under the connection's high-water mark. So a peer that requested "unbounded" and
stopped reading stalls at ``high-water`` bytes plus one batch, whatever it asked for.
``refill`` asks for at most :data:`MAX_BATCH` elements, and fewer when elements are
large (room / estimated element size), so a batch of big elements cannot overshoot the
budget by much either.

Threads: a local Publisher may signal from any thread. Signals on the loop's thread are
handled at once (the hot path: a few attribute updates and one call into the protocol
core). Signals from other threads are appended to an inbox and handed over in batches
with one ``call_soon_threadsafe`` per batch, never one per element. Once the inbox holds
anything, later signals queue behind it, so the order of signals (rule 1.3) is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.rules import check_error

if TYPE_CHECKING:
    from rstreams.net._connection import Connection

__all__ = ["MAX_BATCH", "ServingStream"]

MAX_BATCH = 1024
"""Most elements requested from a local Publisher in one refill. 1024 amortises the
per-turn cost (a loop iteration, a write) over many elements (notes/machine-limits.md:
per-element cost stays near the minimal RS hop) and bounds one turn's output."""

_FRAME_OVERHEAD = 8
"""Rough per-element frame overhead (type byte, id and length varints) for the byte budget."""

_NEXT, _COMPLETE, _ERROR, _SUBSCRIBE = range(4)


class ServingStream(Subscriber[Any]):
    """Subscriber to a local Publisher on behalf of the peer's subscriber ``sid``."""

    __slots__ = (
        "_conn",
        "_encode",
        "_inbox",
        "_lock",
        "_loop_thread",
        "_scheduled",
        "done",
        "estimate",
        "outstanding",
        "remote_demand",
        "sid",
        "upstream",
    )

    def __init__(
        self,
        conn: Connection,
        sid: int,
        initial_demand: int,
        encode: Callable[[Any], bytes] | None,
    ) -> None:
        self._conn = conn
        self.sid = sid
        self._encode = encode
        self.remote_demand = initial_demand  # elements the peer still allows us to send
        self.outstanding = 0  # requested from the local Publisher, not yet received
        self.estimate = 64  # bytes per element on the wire, from the last element seen
        self.upstream: Subscription | None = None
        self.done = False  # a terminal signal was sent, or the peer cancelled
        self._loop_thread = threading.get_ident()
        self._inbox: list[tuple[int, Any]] | None = None
        self._scheduled = False
        self._lock = threading.Lock()

    # -- driven by the connection (loop thread) -----------------------------------------
    def add_demand(self, n: int) -> None:
        """The peer sent ``request(n)``."""
        self.remote_demand = demand.add(self.remote_demand, n)
        if not self.done:
            self._conn.want_refill(self)

    def refill(self, room: int) -> None:
        """Request more from the local Publisher, within the peer's demand and ``room`` bytes."""
        upstream = self.upstream
        if upstream is None or self.done:
            return
        want = min(self.remote_demand, MAX_BATCH) - self.outstanding
        if want <= 0:
            return
        n = min(want, max(1, room // self.estimate))
        self.outstanding += n
        upstream.request(n)

    def stop(self) -> None:
        """The peer cancelled, or the connection ended: cancel upstream, send nothing more."""
        if self.done:
            return
        self.done = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()

    # -- Subscriber (the local Publisher calls these, from any thread) --------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None) is illegal; pass a Subscription")
        if self._inbox is not None or threading.get_ident() != self._loop_thread:
            self._enqueue(_SUBSCRIBE, subscription)
            return
        self._subscribed(subscription)

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self._inbox is not None or threading.get_ident() != self._loop_thread:
            self._enqueue(_NEXT, item)
            return
        self._emit(item)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self._inbox is not None or threading.get_ident() != self._loop_thread:
            self._enqueue(_ERROR, error)
            return
        self._errored(error)

    def on_complete(self) -> None:
        if self._inbox is not None or threading.get_ident() != self._loop_thread:
            self._enqueue(_COMPLETE, None)
            return
        self._completed()

    # -- the work behind the signals (loop thread) -------------------------------------
    def _subscribed(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return
        if self.done:
            subscription.cancel()  # the peer cancelled before the Publisher answered
            return
        self.upstream = subscription
        self._conn.send_on_subscribe(self.sid)
        self._conn.want_refill(self)

    def _completed(self) -> None:
        if self.done:
            return
        self.done = True
        self.upstream = None
        self._conn.send_on_complete(self.sid)

    def _errored(self, error: BaseException) -> None:
        if self.done:
            return
        self.done = True
        self.upstream = None
        self._conn.send_on_error(self.sid, error)

    def _fail_locally(self, error: BaseException) -> None:
        """The codec failed on an element: cancel upstream and tell the peer."""
        upstream = self.upstream
        self._errored(error)
        if upstream is not None:
            upstream.cancel()

    # -- cross-thread hand-over ------------------------------------------------------------
    def _enqueue(self, kind: int, value: Any) -> None:
        with self._lock:
            if self._inbox is None:
                self._inbox = []
            self._inbox.append((kind, value))
            if self._scheduled:
                return
            self._scheduled = True
        self._conn.call_soon_threadsafe(self._drain_inbox)

    def _drain_inbox(self) -> None:
        """Replay queued signals in order on the loop's thread (one call per batch)."""
        while True:
            with self._lock:
                batch = self._inbox
                if not batch:
                    self._inbox = None
                    self._scheduled = False
                    return
                self._inbox = []
            for kind, value in batch:
                if kind == _NEXT:
                    self._emit(value)
                elif kind == _SUBSCRIBE:
                    self._subscribed(value)
                elif kind == _COMPLETE:
                    self._completed()
                else:
                    self._errored(value)

    def _emit(self, item: Any) -> None:
        """Send one element as ``onNext`` (loop thread): the hot path."""
        if self.done:
            return  # rule 3.12: after cancel, late elements are dropped
        encode = self._encode
        try:
            data = item if encode is None else encode(item)
            if type(data) is not bytes:
                data = _to_bytes(data)
        except Exception as error:
            self._fail_locally(error)
            return
        if self.remote_demand != demand.UNBOUNDED:
            self.remote_demand -= 1
        self.outstanding -= 1
        self.estimate = size = len(data) + _FRAME_OVERHEAD
        conn = self._conn
        conn.send_on_next(self.sid, data, size)
        if self.outstanding <= (MAX_BATCH >> 1) and self.remote_demand > self.outstanding:
            conn.want_refill(self)


def _to_bytes(data: object) -> bytes:
    """``bytearray``/``memoryview``/any buffer as ``bytes``; anything else is a ``TypeError``."""
    if isinstance(data, str | int):
        raise TypeError(
            f"elements are bytes on the wire, got {type(data).__name__}; pass codec=rstreams.net.JSON "
            "(or another Codec) to send Python objects"
        )
    return memoryview(data).tobytes()  # type: ignore[arg-type]
