"""The publishing side of one stream: a local Publisher serving a remote subscriber.

Theory of operation. When the peer sends ``subscribe(name, id, initialDemand)``, the
connection resolves ``name`` to a local Publisher and subscribes a :class:`ServingStream`
to it. The stream is the local Publisher's Subscriber; every element it receives is
encoded and collected in the stream's pack, which goes to the protocol core in one call:
``onNext`` frames encoded together (``send_on_next_many``), or, when the codec declares a
fixed ``element_size``, ``onNextPacked`` frames (at most :data:`PACK_BYTES` each). One
owner sends each pack, before the turn's write: the refill whose request brought its
elements at once (the common case: a synchronous Publisher), right after that request
returns; otherwise (elements from a timer, another thread, a later callback) the pack
registers with the table and goes out in the turn's ``flush_packs``, in the order the
packs registered. One element pulled at a time (an open stream's latency) goes to the core
at once, without a pack, when no pack waits before it. :class:`BatchServingStream` serves
publishers whose elements are lists (``with_codec(..., batched=True)``).

Demand, and why memory stays bounded: the peer's demand (``remote_demand``, up to
``2**63 - 1``) is a *permission*, not what we ask the local Publisher for. What we
request upstream (``outstanding``) is decided by :meth:`refill`, which the connection
calls once per event-loop turn, only while the transport is writable, with the room
left under the connection's high-water mark. So a peer that requested "unbounded" and
stopped reading stalls at ``high-water`` bytes plus one batch, whatever it asked for.
``refill`` asks for at most :data:`MAX_BATCH` elements, and fewer when elements are
large (room / estimated element size), so a batch of big elements cannot overshoot the
budget by much either. One exception, bounded the same way: a request that leaves an open
stream of an iterable source one element to send, while nothing waits for the turn's write,
pulls that element in the read that brought it (:meth:`ServingStream.pull_one`: an element
at a time without waiting for the refill), while the transport is writable and once a read.

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
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import ConnectionBrokenError, ReactiveStreamsError, RuleViolationError, report_unhandled
from rstreams.flow._flow import known_elements
from rstreams.flow._iterable import Pull, puller
from rstreams.net._codec import Codec, ElementSizeError, encode_failed, identity, not_bytes
from rstreams.net._metadata import CURRENT, EMPTY, Metadata
from rstreams.net._outbox import Outbox
from rstreams.net._remote_errors import RemoteStreamError, code_of
from rstreams.net._routes import (
    MalformedNameError,
    NameTable,
    Offer,
    Router,
    UnknownPublisherError,
    failed_message,
    subscribe_failed_message,
    unknown_message,
)
from rstreams.rules import check_error
from rstreams.wire import ConnectionState, ErrorCode, OnNextPacked, Request, Subscribe

if TYPE_CHECKING:
    from rstreams.observe import StreamObserver

__all__ = ["FIRST_BATCH", "MAX_BATCH", "PACK_BYTES", "BatchServingStream", "ServingStream", "ServingTable"]

MAX_BATCH = 1024
"""Most elements requested from a local Publisher in one refill. 1024 amortises the
per-turn cost (a loop iteration, a write) over many elements (notes/machine-limits.md:
batches of 1024 make the hop nearly free) and bounds one turn's output."""

PACK_BYTES = 64 * 1024
"""Largest ``onNextPacked`` payload: the core's split threshold, so a packed frame delays
other streams no longer than one part of a split element would. Fixed-size elements
larger than half of it are sent as separate ``onNext`` frames."""

FIRST_BATCH = 16
"""Elements requested before any element size is known (variable-size streams): bounds the
first turn's output while the size estimate is learned."""

_FRAME_OVERHEAD = 8
"""Rough per-element frame overhead (type byte, id and length varints) for the byte budget."""

_ELEMENT_HEAD = 3
"""Typical onNext frame bytes before the element (type, small id, length): what the reply
count (input backpressure) takes as element bytes, erring low so replies are not missed."""

_MIN_SHARE = 16 * 1024
"""Least room offered to one stream in a refill, however many wait: keeps batches worth a turn."""

_HALF_BATCH = MAX_BATCH >> 1
_CLOSED = ConnectionState.CLOSED
UNBOUNDED = demand.UNBOUNDED
_NEXT, _COMPLETE, _ERROR, _SUBSCRIBE = range(4)
_ident = threading.get_ident
_BYTES = {bytes}


def _as_is(items: list[Any], size: int) -> bool:
    """Whether raw ``items`` go out as they are: all ``bytes``, each ``size`` long when the size
    is fixed (not 0). What :meth:`ServingStream.on_next_many` and a refill's pulled batch check."""
    return set(map(type, items)) == _BYTES and (not size or set(map(len, items)) == {size})


class _SubscribeFailed(ReactiveStreamsError):
    """A publisher's ``subscribe()`` raised (PROTOCOL.md §19.2): the onError's ``text`` and
    ``code`` the peer is sent instead of the error's own text."""

    def __init__(self, text: str, code: int) -> None:
        super().__init__(text)
        self.text = text
        self.code = code


class ServingStream(Subscriber[Any]):
    """Subscriber to a local Publisher on behalf of the peer's subscriber ``sid``."""

    _pulls = True
    """Whether :meth:`refill` pulls an iterable source's elements (:func:`puller`) rather than
    requesting them; not a batched stream's (its elements are lists, one request at a time)."""

    __slots__ = (
        "_core",
        "_encode",
        "_inbox",
        "_known",
        "_known_at",
        "_ledger",
        "_loop_thread",
        "_pack",
        "_pack_limit",
        "_pull",
        "_raw",
        "_refilling",
        "_scheduled",
        "_table",
        "content_type",
        "done",
        "element_size",
        "estimate",
        "metadata",
        "obs",
        "outstanding",
        "queued",
        "remote_demand",
        "sid",
        "upstream",
    )

    def __init__(self, table: ServingTable, sid: int, initial_demand: int, codec: Codec[Any] | None) -> None:
        self._table = table
        self._core = table.outbox.core
        self._ledger = table.outbox.ledger  # the element bytes handed to the core are counted there
        self.sid = sid
        encode = codec.encode if codec is not None else None
        self._encode: Callable[[Any], bytes] | None = None if encode is identity else encode
        self._raw = self._encode is None  # elements are sent as they are; False once done
        size = codec.element_size if codec is not None else 0
        self.element_size = size
        self.content_type = codec.media_type if codec is not None else None  # announced (§17)
        self.metadata = EMPTY
        """The subscribe's metadata (extension metadata, PROTOCOL.md §18): a read-only mapping."""
        # The encoded elements of this event-loop turn wait here and go out together when
        # the connection writes: packed in onNextPacked frames (fixed sizes up to
        # PACK_BYTES / 2), else as onNext frames encoded by one send_on_next_many call.
        self._pack: list[bytes] = []
        self._pack_limit = PACK_BYTES // size if 0 < size <= PACK_BYTES // 2 else 0
        self.remote_demand = initial_demand  # elements the peer still allows us to send
        self.outstanding = 0  # requested from the local Publisher, not yet received
        self.queued = False  # waiting in the connection's refill set
        self._refilling = False  # in refill's request: the elements it brings are the refill's to send
        # Wire bytes per element: a decaying maximum of what was seen; unknown (0) at first.
        self.estimate = size + _FRAME_OVERHEAD if size else 0
        self.upstream: Subscription | None = None
        self.done = False  # a terminal signal was sent, or the peer cancelled
        self.obs: StreamObserver | None = None  # counts what it sends (rstreams.observe), if asked
        self._loop_thread = _ident()
        self._inbox: list[tuple[int, Any]] | None = None
        self._scheduled = False
        self._known: tuple[bytes, ...] | None = None  # elements served without a Subscription
        self._pull: Pull | None = None  # an iterable source's, pulled in refill instead of requested
        self._known_at = 0  # how many of them were sent

    # -- driven by the connection (loop thread) -----------------------------------------
    def refill(self, room: int) -> int:
        """Request more from the local Publisher, within the peer's demand and ``room`` bytes.

        Returns the bytes this may produce (requested elements x estimated size), which
        the connection takes off its room for the other streams of this turn.
        """
        self.queued = False
        upstream = self.upstream
        if upstream is None or self.done:
            return 0
        # (comparisons, not min() and max(), which parse keyword arguments: a refill per element
        # on an open stream)
        remote = self.remote_demand
        want = (remote if remote < MAX_BATCH else MAX_BATCH) - self.outstanding
        if want <= 0:
            return 0
        estimate = self.estimate
        if estimate:
            n = room // estimate  # min(want, max(1, room // estimate)):
            if n < 1:
                n = 1
            if n > want:
                n = want
        else:  # element sizes unknown yet: a small first batch to learn them
            n = want if want < FIRST_BATCH else FIRST_BATCH
            estimate = room // FIRST_BATCH  # assume the worst for this turn's budget
        # What this refill brings at once into an empty pack is the refill's to send (below),
        # not a pack registered for the turn's flush_packs (a pack that holds elements already
        # is registered: they join it).
        mine = not self._pack
        pull = self._pull
        if pull is not None:  # an iterable source: its elements taken now, no request, no drain loop
            items, end = pull(n)
            if self._take(items, end, mine):
                return n * estimate  # one at a time (an open stream's latency): sent, no pack
        else:
            self.outstanding += n
            if self._known is None:
                self._refilling = mine  # (on_next leaves the table alone meanwhile)
                try:  # _request, inlined: once per batch
                    upstream.request(n)
                except Exception as error:
                    self._request_failed(upstream, n, error)
                finally:
                    self._refilling = False
            elif self._take_known(n):
                return n * estimate  # completed: the pack went out first
        if mine and self._pack:
            if self._table.packs:  # packs from before this refill wait: this one goes behind them
                self._table.want_pack(self)
            else:
                self.flush_pack()
        return n * estimate

    def _take(self, items: list[Any], end: bool | BaseException, mine: bool) -> bool:
        """Take what a pull brought (``end``: the source's state after them, as a
        :data:`~rstreams.flow._iterable.Pull` returns it) as the signals would (``mine``: as
        :meth:`refill` has it). ``True`` when the one element went to the core at once (no pack)."""
        count = len(items)
        size = self.element_size
        if (
            count
            and self._raw
            and (
                items[0].__class__ is bytes and (not size or len(items[0]) == size)
                if count == 1  # one at a time (an open stream's latency)
                else _as_is(items, size)
            )
        ):
            # Bytes that go out as they are: into the pack as on_next and on_next_many take them
            # (their checks of the demand and the thread hold here: pulled within the demand, on
            # the loop's thread), without their calls. Nothing is outstanding on a pulled stream.
            # tests/net/test_pulled.py holds the bytes equal to those of the signals' way.
            remote = self.remote_demand
            if remote != UNBOUNDED:
                remote = self.remote_demand = remote - count
            if remote and not self.queued:
                self._table.want_refill(self)
            if count == 1 and mine and end is False and not self._pack_limit and not self._table.packs:
                self._send_one(items[0])  # one at a time (an open stream's latency): no pack
                return True
            if mine:
                self._pack = items
            else:
                self._pack += items
        elif count:  # to encode, or not all bytes: one by one, as on_next takes them
            self.outstanding += count
            self._refilling = mine
            try:
                for item in items:
                    self.on_next(item)
            finally:
                self._refilling = False
        if end is not False:
            self._pulled_all(end)
        return False

    def pull_one(self) -> None:
        """The one element the peer asked for, pulled now: :meth:`refill` for one element, which
        the table's :meth:`~ServingTable.request` calls instead of queueing the stream for the
        turn's refill (one element asked of an open stream of an iterable source while nothing
        waits for the turn's write). Its common case first: bytes that go out as they are, to
        the core at once, as :meth:`refill` sends one."""
        pull = self._pull
        if pull is None:
            return
        items, end = pull(1)
        size = self.element_size
        if (
            end is False
            and items
            and self._raw
            and not self._pack
            and not self._pack_limit
            and not self._table.packs
            and items[0].__class__ is bytes
            and (not size or len(items[0]) == size)
        ):
            self.remote_demand -= 1  # the one asked for (the table saw a demand of 1)
            element = items[0]  # _send_one, inlined: an open stream's every element, one at a time
            size = len(element)
            self._ledger.element_bytes += size + _ELEMENT_HEAD
            obs = self.obs
            if obs is not None:
                obs.sent(1, size)
            size += _FRAME_OVERHEAD
            estimate = self.estimate
            self.estimate = size if size >= estimate else estimate - ((estimate - size) >> 3)
            self._core.on_next(self.sid, element)
            return
        mine = not self._pack
        if not self._take(items, end, mine) and mine and self._pack:
            if self._table.packs:  # as refill sends its pack
                self._table.want_pack(self)
            else:
                self.flush_pack()

    def _pulled_all(self, end: bool | BaseException) -> None:
        """The pulled source completed (``True``) or failed with ``end``: what its ``on_complete``
        or ``on_error`` would do, after the elements of the same pull."""
        self._pull = None
        if end is True:
            self._completed()
        else:
            assert isinstance(end, BaseException)
            self._errored(end)

    def _take_known(self, n: int) -> bool:
        """Put up to ``n`` of the known elements (:meth:`serve_known`) in the pack, as their
        subscription would emit them; ``True`` when that was the last (the stream completed)."""
        known = self._known
        assert known is not None
        at = self._known_at
        chunk = known[at : at + n]
        count = len(chunk)
        self._known_at = at = at + count
        self.outstanding -= count
        if self.remote_demand != UNBOUNDED:
            self.remote_demand -= count
        self._pack += chunk
        if at == len(known):  # the end is known: complete with the last element (rule 1.5)
            self._known = None
            if self.obs is None and at == count:  # all at the first refill, as counted ahead
                observer = self._table.outbox.observer
                if observer is not None:  # the count stands (rstreams.observe)
                    observer.deferred.pop(self.sid, None)
            self._completed()  # sends the pack first
            return True
        if self.obs is None and at == count:  # more to come: counted by an observer after all
            observer = self._table.outbox.observer
            if observer is not None:
                observer.open_deferred(self.sid)
        if self.remote_demand > self.outstanding and not self.queued:
            self._table.want_refill(self)
        return False

    def flush_pack(self) -> None:
        """Send the pack's elements to the core (its refill calls it, or the table's
        :meth:`~ServingTable.flush_packs`, before the turn's write)."""
        pack = self._pack
        if not pack or self.done:
            return
        self._pack = []
        limit = self._pack_limit
        core, sid = self._core, self.sid
        obs = self.obs
        if limit:
            nbytes = len(pack) * self.element_size
            self._ledger.element_bytes += nbytes
            if obs is not None:
                obs.sent(len(pack), nbytes)
            for start in range(0, len(pack), limit):
                chunk = pack[start : start + limit]
                if len(chunk) == 1:
                    core.on_next(sid, chunk[0])
                else:
                    core.send(OnNextPacked(subscriber=sid, count=len(chunk), elements=b"".join(chunk)))
            return
        count = len(pack)
        if count == 1:  # one element a turn: a request-driven publisher's, one at a time
            self._send_one(pack[0])
            return
        nbytes = sum(map(len, pack))
        size = max(map(len, pack))
        self._ledger.element_bytes += nbytes + count * _ELEMENT_HEAD
        if obs is not None:
            obs.sent(count, nbytes)
        size += _FRAME_OVERHEAD
        estimate = self.estimate
        # decaying maximum: a jump up counts at once, a drop slowly (1/8 per batch)
        self.estimate = size if size >= estimate else estimate - ((estimate - size) >> 3)
        core.on_next_many(sid, pack)

    def _send_one(self, element: bytes) -> None:
        """Send one element as it is, an onNext frame of its own: counted and learned from as
        :meth:`flush_pack` counts a pack (the ledger, the observer, the size estimate)."""
        size = len(element)
        self._ledger.element_bytes += size + _ELEMENT_HEAD
        obs = self.obs
        if obs is not None:
            obs.sent(1, size)
        size += _FRAME_OVERHEAD
        estimate = self.estimate
        self.estimate = size if size >= estimate else estimate - ((estimate - size) >> 3)
        self._core.on_next(self.sid, element)

    def stop(self) -> None:
        """The peer cancelled, or the connection ended: cancel upstream, send nothing more."""
        if self.done:
            return
        self.done = True
        self._raw = False
        self._pull = None
        if self._pack:
            self._pack.clear()
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            _cancel(upstream)

    def serve_known(
        self, elements: tuple[Any, ...], name: str, pattern: str | None, metadata: Metadata
    ) -> bool:
        """Serve elements fixed before subscribing (``just(...)``, ``empty()``: see
        :func:`~rstreams.flow._flow.known_elements`) without subscribing: onSubscribe now,
        the elements in :meth:`refill` as the peer's demand and the room allow, onComplete
        with the last one (at once when there is none). ``False``, and nothing done, unless
        they go out as they are (bytes, of the codec's ``element_size`` if it has one).
        ``name``, ``pattern``, ``metadata``: the subscribe's, as :meth:`ServingTable.attach` has them."""
        if not self._raw:
            return False
        size = self.element_size
        for element in elements:
            if element.__class__ is not bytes or (size and len(element) != size):
                return False
        observer = self._table.outbox.observer
        if observer is not None:  # None: counted ahead, as the first refill may send them all
            self.obs = observer.known_stream_opened(
                self,
                self._table._router if pattern is None else pattern,
                name,
                self.sid,
                self.remote_demand,
                len(elements),
                len(elements[0]) if len(elements) == 1 else sum(map(len, elements)),
                metadata,
            )
        self._known = elements
        self.upstream = _KNOWN
        self._table.opened(self)
        if not elements:
            self._known = None
            if observer is not None and self.obs is None:  # the count ahead stands
                observer.deferred.pop(self.sid, None)
            self._completed()
        return True

    # -- user code, guarded: a Subscription that raises fails only its stream -----------------
    def _request(self, upstream: Subscription, n: int) -> None:
        """``upstream.request(n)``; if it raises (rule 3.16), end this stream with onError."""
        try:
            upstream.request(n)
        except Exception as error:
            self._request_failed(upstream, n, error)

    def _request_failed(self, upstream: Subscription, n: int, error: Exception) -> None:
        what = f"{type(upstream).__name__}.request"
        report_unhandled(error, what)
        if not self.done:
            self._fail_locally(
                RuleViolationError(f"rule 3.16: {what}({n}) must return normally, it raised {error!r}")
            )

    # -- Subscriber (the local Publisher calls these, from any thread) --------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None) is illegal; pass a Subscription")
        if self._inbox is not None or _ident() != self._loop_thread:
            self._enqueue(_SUBSCRIBE, subscription)
            return
        self._subscribed(subscription)

    def on_next(self, item: Any) -> None:
        # The serving hot path, for raw bytes on the loop's thread: _emit inlined.
        outstanding = self.outstanding - 1
        if (
            item.__class__ is bytes
            and self._raw
            and outstanding >= 0
            and self._inbox is None
            and _ident() == self._loop_thread
            and (not self.element_size or len(item) == self.element_size)
        ):
            self.outstanding = outstanding
            remote = self.remote_demand
            if remote != UNBOUNDED:
                remote = self.remote_demand = remote - 1
            pack = self._pack
            if not pack and not self._refilling:  # (in its refill, the refill sends it)
                self._table.want_pack(self)
            pack.append(item)
            if outstanding <= _HALF_BATCH and remote > outstanding and not self.queued:
                self._table.want_refill(self)
            return
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self._inbox is not None or _ident() != self._loop_thread:
            self._enqueue(_NEXT, item)
            return
        self._emit(item)  # encodes, or fails the stream (wrong size, rule 1.1), or drops (done)

    def on_next_many(self, items: list[Any]) -> None:
        """The internal batch signal (:mod:`rstreams.flow._signals`): exactly ``on_next(x)`` for
        each ``x``. Raw bytes on the loop's thread within the demand (:meth:`on_next`'s fast
        path, for all of them) join this turn's pack at once; anything else goes one by one."""
        count = len(items)
        outstanding = self.outstanding - count
        size = self.element_size
        if (
            self._raw
            and outstanding >= 0
            and self._inbox is None
            and _ident() == self._loop_thread
            and _as_is(items, size)
        ):
            self.outstanding = outstanding
            remote = self.remote_demand
            if remote != UNBOUNDED:
                remote = self.remote_demand = remote - count
            pack = self._pack
            if not pack and not self._refilling:  # (in its refill, the refill sends it)
                self._table.want_pack(self)
            pack += items
            if outstanding <= _HALF_BATCH and remote > outstanding and not self.queued:
                self._table.want_refill(self)  # as on_next asks, at the element that gets here
            return
        for item in items:
            self.on_next(item)

    def on_error(self, error: BaseException) -> None:
        check_error(error)  # rule 2.13: a caller that breaks the contract's type passes None (TypeError)
        if self._inbox is not None or _ident() != self._loop_thread:
            self._enqueue(_ERROR, error)
            return
        self._errored(error)

    def on_complete(self) -> None:
        if self._inbox is not None or _ident() != self._loop_thread:
            self._enqueue(_COMPLETE, None)
            return
        self._completed()

    # -- the work behind the signals (loop thread) -------------------------------------
    def _emit(self, item: Any) -> None:
        """Send one element (loop thread): the hot path."""
        if self.done:
            return  # rule 3.12: after cancel, late elements are dropped
        if self.outstanding <= 0:
            unasked = RuleViolationError("rule 1.1: the publisher sent more elements than were requested")
            self._fail_locally(unasked)
            return
        encode = self._encode
        if encode is None and item.__class__ is bytes:
            data = item
        else:
            try:
                data = item if encode is None else encode(item)
                if data.__class__ is not bytes:
                    data = _to_bytes(data)
            except Exception as error:
                self._fail_locally(error if encode is None else encode_failed(encode, item, error))
                return
        if self.element_size and len(data) != self.element_size:
            self._fail_locally(_wrong_size(len(data), self.element_size))
            return
        if self.remote_demand != UNBOUNDED:
            self.remote_demand -= 1
        outstanding = self.outstanding = self.outstanding - 1
        pack = self._pack
        if not pack and not self._refilling:  # (in its refill, the refill sends it)
            self._table.want_pack(self)
        pack.append(data)
        if outstanding <= _HALF_BATCH and not self.queued and self.remote_demand > outstanding:
            self._table.want_refill(self)

    def _subscribed(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return
        if self.done:
            _cancel(subscription)  # the peer cancelled before the Publisher answered
            return
        self.upstream = subscription
        if self._pulls:  # an iterable source: its elements are taken in refill (raw or encoded)
            self._pull = puller(subscription)
        self._table.opened(self)

    def _completed(self) -> None:
        if self.done:
            return
        self.flush_pack()
        self.done = True
        self._raw = False
        self.upstream = None
        self._table.completed(self)

    def _errored(self, error: BaseException) -> None:
        if self.done:
            return
        self.flush_pack()
        self.done = True
        self._raw = False
        self.upstream = None
        self._table.errored(self, error)

    def _fail_locally(self, error: BaseException) -> None:
        """The codec failed on an element: cancel upstream and tell the peer."""
        upstream = self.upstream
        self._errored(error)
        if upstream is not None:
            _cancel(upstream)

    # -- cross-thread hand-over ------------------------------------------------------------
    def _enqueue(self, kind: int, value: Any) -> None:
        with self._table.lock:
            if self._inbox is None:
                self._inbox = []
            self._inbox.append((kind, value))
            if self._scheduled:
                return
            self._scheduled = True
        self._table.outbox.call_soon_threadsafe(self._drain_inbox)

    def _drain_inbox(self) -> None:
        """Replay queued signals in order on the loop's thread (one call per batch)."""
        while True:
            with self._table.lock:
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


class _Known(Subscription):
    """The upstream of a stream that serves known elements itself: nothing to ask or cancel."""

    __slots__ = ()

    def request(self, n: int) -> None:
        """Never called: :meth:`ServingStream.refill` sends the elements."""

    def cancel(self) -> None:
        """Nothing runs upstream."""


_KNOWN = _Known()


def _cancel(subscription: Subscription) -> None:
    """``subscription.cancel()``; if it raises (rule 3.15), report it: the stream is over anyway."""
    try:
        subscription.cancel()
    except Exception as error:
        report_unhandled(error, f"{type(subscription).__name__}.cancel")


def _to_bytes(data: object) -> bytes:
    """``bytearray``/``memoryview``/any buffer as ``bytes``; anything else is an
    :class:`~rstreams.net.EncodeError` (a ``TypeError``) saying what it is and what to pass."""
    try:
        return memoryview(data).tobytes()  # type: ignore[arg-type]
    except TypeError:
        raise not_bytes(data) from None


def _wrong_size(size: int, expected: int, batch: bool = False) -> ElementSizeError:
    return ElementSizeError(size, expected, batch=batch)


class BatchServingStream(ServingStream):
    """Serves a *batched* local Publisher: each ``on_next`` carries a list of elements.

    Made for ``with_codec(target, codec, batched=True)`` with a fixed-size codec. Upstream
    demand counts batches: :meth:`refill` requests one batch at a time, and only when the
    previous one has been sent, so at most one batch is held beyond what the transport
    holds. A batch is encoded with one ``codec.encode_batch`` call and sent as
    ``onNextPacked`` frames of at most :data:`PACK_BYTES`, as far as the peer's demand
    (counted in elements) allows; the rest is held until the peer requests more. An
    ``on_complete`` waits for the held elements to go out first; ``on_error`` does not.
    """

    __slots__ = ("_codec", "_complete_after", "_held", "_held_at")

    _pulls = False

    def __init__(self, table: ServingTable, sid: int, initial_demand: int, codec: Codec[Any]) -> None:
        super().__init__(table, sid, initial_demand, codec)
        self._codec = codec
        self._held = b""  # encoded elements not yet sent (for want of demand)
        self._held_at = 0  # how much of _held was sent
        self._complete_after = False  # upstream completed; complete once _held is sent
        self._raw = False  # elements are lists: always through _emit
        self._pack_limit = max(1, PACK_BYTES // codec.element_size)
        self.estimate = 0  # bytes of the last batch

    def refill(self, room: int) -> int:
        self.queued = False
        if self.done:
            return 0
        produced = self._send_held()
        # A synchronous publisher emits inside request(1): keep asking while there is room.
        while (
            not self._held
            and self.upstream is not None
            and self.outstanding == 0
            and self.remote_demand > 0
            and produced < room
            and not self.done
        ):
            self.outstanding = 1
            self._request(self.upstream, 1)
            produced += self.estimate
        return produced

    def _emit(self, item: Any) -> None:
        if self.done:
            return
        if self.outstanding <= 0:
            unasked = RuleViolationError("rule 1.1: the publisher sent more batches than were requested")
            self._fail_locally(unasked)
            return
        size = self.element_size
        try:
            payload = self._codec.encode_batch(item)
            if payload.__class__ is not bytes:
                payload = _to_bytes(payload)
        except Exception as error:
            self._fail_locally(encode_failed(self._codec.encode_batch, item, error))
            return
        if len(payload) % size:
            self._fail_locally(_wrong_size(len(payload), size, True))
            return
        self.outstanding -= 1
        self.estimate = len(payload)
        if self._held:
            self._held = self._held[self._held_at :] + payload
        else:
            self._held = payload
        self._held_at = 0
        self._send_held()
        if not self._held and not self.queued and self.remote_demand > 0:
            self._table.want_refill(self)

    def _send_held(self) -> int:
        """Send what the peer's demand allows of the held elements; return the bytes sent."""
        held, at = self._held, self._held_at
        if not held:
            return 0
        size = self.element_size
        count = min((len(held) - at) // size, self.remote_demand)
        if count <= 0:
            return 0
        if self.remote_demand != UNBOUNDED:
            self.remote_demand -= count
        if self.obs is not None:
            self.obs.sent(count, count * size)
        limit = self._pack_limit
        core, sid = self._core, self.sid
        end = at + count * size
        self._ledger.element_bytes += end - at
        while at < end:
            n = min(limit, (end - at) // size)
            stop = at + n * size
            core.send(
                OnNextPacked(
                    subscriber=sid, count=n, elements=held if at == 0 and stop == len(held) else held[at:stop]
                )
            )
            at = stop
        self._table.outbox.mark_dirty()
        if at >= len(held):
            self._held, self._held_at = b"", 0
            if self._complete_after:
                self._complete_after = False
                super()._completed()
        else:
            self._held_at = at
        return count * size

    def _completed(self) -> None:
        if self.done:
            return
        if self._held:
            self.upstream = None
            self._complete_after = True  # after the held elements (rule 1.3 order)
            return
        super()._completed()

    def stop(self) -> None:
        self._held, self._held_at, self._complete_after = b"", 0, False
        super().stop()


def _no_channels(name: str, sid: int, initial_demand: int) -> None:
    raise RuntimeError("a channel mark without the channels piece")


class ServingTable:
    """The peer's subscriptions on our publishers: one :class:`ServingStream` per subscriber id.

    The pump hands it the peer's ``subscribe``/``request``/``cancel``; once per loop turn,
    before writing, it calls :meth:`refill` (while the transport is writable, with the room
    left under the high-water mark) and, when packs registered, :meth:`flush_packs`. Streams
    reach the table (and through its outbox the core) for everything they send.
    """

    __slots__ = (
        "_router",
        "answered",
        "channel_marks",
        "held_metadata",
        "lock",
        "open_channel",
        "outbox",
        "packs",
        "refills",
        "streams",
    )

    def __init__(self, outbox: Outbox, offer: Offer | None, codec: Codec[Any] | None) -> None:
        self.outbox = outbox
        self._router = Router(offer, codec)
        self.streams: dict[int, ServingStream] = {}
        self.refills: dict[ServingStream, None] = {}
        """Streams waiting to be refilled, in order (the pump's flush reads it: plain fields,
        not properties, on the per-turn path)."""
        self.packs: list[ServingStream | _Answered] = []
        """Streams holding elements for this turn's write (and answers counted in it)."""
        self.answered = _Answered(self)
        """The count of the answer sent whole (:meth:`_answer`, at most one a turn) while an
        observer counts the connection, until this turn's :meth:`flush_packs` (its ``sid``
        is -1 when there is none)."""
        self.lock = threading.Lock()
        """Guards the streams' hand-over of signals from other threads (one lock for all: it is
        held for a list append or swap, and a stream costs no lock of its own)."""
        self.channel_marks: set[int] = set()
        """Subscriber ids whose subscribe, accepted by the core and routed next (or held by the
        auth gate), opens a channel (extension channels, PROTOCOL.md §21.3)."""
        self.open_channel: Callable[[str, int, int], None] = _no_channels
        """Serves a marked subscribe (``name, sid, initial_demand``); set by the channels piece."""
        self.held_metadata: list[Metadata] = []
        """The subscribeMetadata of the subscribe the core reports next (§18), if any: the pump
        routes it here, and :meth:`received` (or the auth gate's route) takes it."""

    # -- the peer's signals (from the pump) -----------------------------------------------
    def subscribe(self, name: str, sid: int, initial_demand: int, metadata: Metadata = EMPTY) -> None:
        """Serve the peer's subscribe: resolve ``name`` and subscribe a stream to its publisher
        (:meth:`received`, for a subscribe the auth gate held).

        ``metadata`` (extension metadata, §18) is :func:`subscribe_metadata` while the factory
        and the Publisher's ``subscribe`` run, and the stream's ``metadata``."""
        self.received(Subscribe(publisher=name, subscriber=sid, initial_demand=initial_demand), metadata)

    def received(self, event: Subscribe, metadata: Metadata | None = None) -> None:
        """The peer's subscribe as the core reports it: the pump routes it here (without an auth
        gate, which holds subscribes until authenticated). Its ``metadata`` (§18) is the one
        :attr:`held_metadata` holds, unless given. A violation later in the same read may have
        closed the core: the goodbye ended this subscription then, and no local publisher is
        started for it (refuse, :meth:`_answer` and :meth:`attach` check the core's state, as
        late as they can: the core is open all but always)."""
        if metadata is None:
            held = self.held_metadata
            metadata = held.pop() if held else EMPTY  # a subscribeMetadata right before (§18)
        if self.outbox.closing:
            return
        name, sid = event.publisher, event.subscriber
        if self.channel_marks and sid in self.channel_marks:  # extension channels (§21)
            self.channel_marks.discard(sid)
            if self.outbox.core.state is not _CLOSED:
                self.open_channel(name, sid, event.initial_demand)
            return
        token = CURRENT.set(metadata) if metadata is not EMPTY else None  # none: no cost (§18)
        try:
            found = self._router.find_batched(name)
        except UnknownPublisherError as unknown:  # raised by a factory: refused like a miss
            self.refuse(sid, str(unknown), ErrorCode.UNKNOWN_PUBLISHER, name)
            return
        except MalformedNameError as malformed:  # a name that matches, malformed (§5.5)
            self.refuse(sid, str(malformed), ErrorCode.APPLICATION, name)
            return
        except Exception as error:
            if isinstance(error, RemoteStreamError) and error.code is not None:  # refused on purpose
                self.refuse(sid, error.message, error.code, name)  # its text and code, as in JS, Java
                return
            report_unhandled(error, f"the publisher factory for {name!r}")
            self.refuse(sid, failed_message(name), ErrorCode.INTERNAL, name)
            return
        else:
            if found is None:  # no exception for an unknown name: refusals come in floods
                self.refuse(sid, unknown_message(name), ErrorCode.UNKNOWN_PUBLISHER, name)
            else:  # attach's steps (its answer inlined: a request/response's, once per subscribe)
                publisher, codec, batched = found
                demand = event.initial_demand
                known = known_elements(publisher)
                if known is None and not callable(getattr(publisher, "subscribe", None)):
                    self._not_a_publisher(sid, name, publisher)  # (known elements: a Publisher's)
                    return
                if (
                    known is None
                    or len(known) != 1
                    or batched
                    or not self._answer(sid, demand, codec, known[0], name, None, metadata)
                ):
                    self._open(name, sid, demand, publisher, codec, batched, metadata, None, known)
        finally:
            if token is not None:
                CURRENT.reset(token)

    def _not_a_publisher(self, sid: int, name: str, made: object) -> None:
        """A factory returned ``made``, which has no ``subscribe``: refused as a factory that
        raised is (code 9, the same text in every binding, §19.2); the log names what it was."""
        what = type(made).__name__
        error = TypeError(f"the publisher factory for {name!r} returned {what}, not a Publisher")
        report_unhandled(error, f"the publisher factory for {name!r}")
        self.refuse(sid, failed_message(name), ErrorCode.INTERNAL, name)

    def offer_channels(self, channels: NameTable[Any]) -> None:
        """The names this side also offers as channels: a plain subscribe to one of them that no
        publisher answers is refused saying it is a channel (:meth:`Router.offer_channels`)."""
        self._router.offer_channels(channels)

    def attach(
        self,
        name: str,
        sid: int,
        initial_demand: int,
        publisher: Publisher[Any],
        codec: Codec[Any] | None,
        batched: bool = False,
        metadata: Metadata = EMPTY,
        pattern: str | None = None,
    ) -> None:
        """Serve ``publisher`` to the peer's subscriber ``sid`` (a resolved subscribe; ``metadata``:
        its subscribe's, §18; ``pattern``: its metrics label when not the offer's, a channel's)."""
        known = known_elements(publisher)
        if (
            known is not None
            and len(known) == 1
            and not batched
            and self._answer(sid, initial_demand, codec, known[0], name, pattern, metadata)
        ):
            return
        self._open(name, sid, initial_demand, publisher, codec, batched, metadata, pattern, known)

    def _open(
        self,
        name: str,
        sid: int,
        initial_demand: int,
        publisher: Publisher[Any],
        codec: Codec[Any] | None,
        batched: bool,
        metadata: Metadata,
        pattern: str | None,
        known: tuple[Any, ...] | None,
    ) -> None:
        """:meth:`attach`'s stream, for a subscribe not answered whole (``known``: the known
        elements of ``publisher``, if it has them)."""
        if self.outbox.core.state is _CLOSED:
            return  # a violation later in the read that brought the subscribe (see received)
        if batched and codec is not None:
            stream: ServingStream = BatchServingStream(self, sid, initial_demand, codec)
        else:
            stream = ServingStream(self, sid, initial_demand, codec)
        self.streams[sid] = stream
        if metadata is not EMPTY:
            stream.metadata = metadata
        if known is not None and stream.serve_known(known, name, pattern, metadata):
            return
        observer = self.outbox.observer
        if observer is not None:  # the pattern is looked up once per name (rstreams.observe)
            stream.obs = observer.stream_opened(
                self._router if pattern is None else pattern,
                name,
                sid,
                initial_demand,
                metadata,  # its traceparent is read only when tracing
            )
        try:
            publisher.subscribe(stream)
        except Exception as error:  # rule 1.9 broken: a serving-side failure, as a factory's (§19.2)
            report_unhandled(error, f"{type(publisher).__name__}.subscribe")
            if not stream.done:
                if isinstance(error, RemoteStreamError) and error.code is not None:  # on purpose
                    stream.on_error(_SubscribeFailed(error.message, error.code))
                else:
                    stream.on_error(_SubscribeFailed(subscribe_failed_message(name), ErrorCode.INTERNAL))

    def _answer(
        self,
        sid: int,
        initial_demand: int,
        codec: Codec[Any] | None,
        element: Any,
        name: str,
        pattern: str | None,
        metadata: Metadata,
    ) -> bool:
        """Send the whole answer of a known one-element publisher (``just(x)``) at once, in one
        call to the core, without a stream: the onSubscribe, onNext and onComplete that
        :meth:`ServingStream.serve_known` and the turn's refill would send. Only when the peer
        asked for the element, the transport is writable, the element goes out as it is, and
        nothing waits for this turn's flush (no stream's output, no request moves behind it).
        Each stream's frames are the same as on the stream's way; what later events of the
        same read cause (another subscribe's onSubscribe) follows the whole answer instead of
        coming between its onSubscribe and its onNext. A cancel of the subscription in the
        same read (the core has it already) leaves it to the stream's way. When an observer
        counts the connection, the answer is counted as its stream would be: ahead when it
        opens, and at this turn's flush as sent and completed by an :class:`_Answered`, which
        a request of the same read reaches (:meth:`request`). ``False``, and nothing done,
        otherwise."""
        if codec is None:
            size, media_type = 0, None
        elif codec.encode is identity:
            size, media_type = codec.element_size, codec.media_type
        else:
            return False
        outbox = self.outbox
        observer = outbox.observer
        if (
            element.__class__ is not bytes
            or (size and len(element) != size)
            or not initial_demand
            or outbox.flush_scheduled
            or not outbox.writable
            or (observer is not None and self.answered.sid >= 0)  # (one a turn: not yet settled)
            or not outbox.core.send_answer(sid, size, media_type, element)
        ):
            return False
        outbox.ledger.element_bytes += len(element) + _ELEMENT_HEAD
        if observer is not None:  # counted as serve_known and the first refill count it
            answered = self.answered
            answered.sid = sid
            answered.nbytes = len(element)
            self.packs.append(answered)  # its count is settled in this turn's flush_packs
            answered.obs = observer.known_stream_opened(
                answered,
                self._router if pattern is None else pattern,
                name,
                sid,
                initial_demand,
                1,
                answered.nbytes,
                metadata,
            )
        if outbox.reading:  # the read's end writes it (what mark_dirty does while reading)
            outbox.flush_scheduled = True
        else:
            outbox.mark_dirty()
        return True

    def refuse(self, sid: int, message: str, code: int, name: str = "") -> None:
        """Refuse a subscribe (to ``name``): onError without onSubscribe (PROTOCOL.md §5.2), with
        ``code`` (§19)."""
        self.channel_marks.discard(sid)
        observer = self.outbox.observer
        if observer is not None:
            observer.refused(self._router.pattern(name), message)
        if self.outbox.core.state is not _CLOSED:
            self.outbox.core.send_error(sid, message, code)
            self.outbox.mark_dirty()

    def request(self, event: Request) -> bool:
        """The peer's ``request(n)`` (the pump routes it here as the core reports it); ``False``
        if its subscription is not served here."""
        sid, n = event.subscriber, event.demand
        stream = self.streams.get(sid)
        if stream is None:
            answered = self.answered
            if answered.sid == sid:  # counted as its stream's request would be (rstreams.observe)
                answered.request(n)
                return True
            return False
        # The stream's demand grows and it waits for a refill (want_refill): once per request
        # received (one element at a time on an open stream), so inlined here.
        remote = stream.remote_demand + n  # demand.add, inlined
        stream.remote_demand = remote if remote < UNBOUNDED else UNBOUNDED
        obs = stream.obs
        if obs is not None:
            obs.demand(n)
        elif self.outbox.observer is not None:  # before a deferred stream's first refill
            obs = self.outbox.observer.open_deferred(sid)
            if obs is not None:
                obs.demand(n)
        if not stream.done:
            outbox = self.outbox
            if (
                remote == 1
                and stream._pull is not None
                and not outbox.flush_scheduled
                and outbox.reading
                and outbox.writable
                and not self.refills
            ):
                # One element asked of an open stream of an iterable source while nothing waits
                # for this turn's write (an element at a time: its latency): pulled now, not by
                # the turn's refill, and written at the read's end. One a read: what it sets
                # sends the read's other requests to the refill (the room is asked there).
                outbox.flush_scheduled = True  # (what mark_dirty does while reading)
                stream.pull_one()  # one element whatever the room: there is some (writable)
                return True
            stream.queued = True
            self.refills[stream] = None
            if not outbox.reading:  # a read's end flushes when streams wait for a refill
                outbox.mark_dirty()
        return True

    def cancel(self, sid: int) -> None:
        """The peer cancelled ``sid`` (the core acknowledged it), or the core ended it."""
        self.channel_marks.discard(sid)
        stream = self.streams.pop(sid, None)
        if stream is not None:
            self.refills.pop(stream, None)
            stream.queued = False
            obs = stream.obs
            if obs is None and self.outbox.observer is not None:  # before a deferred stream's first refill
                obs = self.outbox.observer.open_deferred(sid)
            if obs is not None:
                obs.ended("cancelled")
            stream.stop()

    def stop_all(self) -> None:
        """The connection ended: cancel every local publisher."""
        streams, self.streams = self.streams, {}
        self.refills.clear()
        self.packs.clear()
        self.answered.sid = -1
        for stream in streams.values():
            stream.stop()

    # -- from the streams -------------------------------------------------------------------
    def want_refill(self, stream: ServingStream) -> None:
        stream.queued = True
        self.refills[stream] = None
        if not self.outbox.flush_scheduled:  # mark_dirty's own test first (in a flush, it is)
            self.outbox.mark_dirty()

    def want_pack(self, stream: ServingStream) -> None:
        """``stream`` holds elements to send in this turn's write."""
        self.packs.append(stream)
        if not self.outbox.flush_scheduled:  # mark_dirty's own test first (in a flush, it is)
            self.outbox.mark_dirty()

    def opened(self, stream: ServingStream) -> None:
        """The local publisher called ``on_subscribe``: tell the peer, and queue the stream's
        first refill (:meth:`want_refill`, inlined)."""
        outbox = self.outbox
        if self.streams.get(stream.sid) is stream:
            try:
                outbox.core.send_on_subscribe(stream.sid, stream.element_size, stream.content_type)
            except ConnectionBrokenError:
                pass  # the core closed (a violation later in this read): not sent
        stream.queued = True
        self.refills[stream] = None
        if not outbox.flush_scheduled:  # mark_dirty's own test first: most often a read's flush is due
            outbox.mark_dirty()

    def completed(self, stream: ServingStream) -> None:
        if stream.obs is not None:
            stream.obs.ended("completed")
        if self.streams.pop(stream.sid, None) is not None:
            outbox = self.outbox
            try:
                outbox.core.send_on_complete(stream.sid)
            except ConnectionBrokenError:  # the core closed (in this read): its goodbye ended the stream
                return
            if not outbox.flush_scheduled:  # mark_dirty's own test first: most often it runs in the flush
                outbox.mark_dirty()

    def errored(self, stream: ServingStream, error: BaseException) -> None:
        obs = stream.obs
        if obs is None and self.outbox.observer is not None:  # a deferred stream (none errs so far)
            obs = self.outbox.observer.open_deferred(stream.sid)
        if obs is not None:
            obs.ended("error", f"{type(error).__name__}: {error}")
        if self.streams.pop(stream.sid, None) is not None and self.outbox.core.state is not _CLOSED:
            # The peer sees the error's type and text: what a Publisher signals is its
            # public outcome. Internal failures (a factory, a subscribe() that raised) are
            # summarised (§19.2).
            if isinstance(error, _SubscribeFailed):  # what the peer is told, not the error's text
                self.outbox.core.send_error(stream.sid, error.text, error.code)
            else:
                self.outbox.core.send_error(stream.sid, f"{type(error).__name__}: {error}", code_of(error))
            self.outbox.mark_dirty()

    # -- once per turn (from the pump's flush) ----------------------------------------------
    def refill(self, room: int) -> int:
        """Ask the waiting streams for more, in order, while ``room`` bytes last; returns the bytes used.

        Fair in two ways. Each stream is offered an equal share of the room (at least
        :data:`_MIN_SHARE`), so many streams progress at the same rate rather than one
        per turn. And round robin: a stream re-queues itself while it is being refilled
        (its elements arrive synchronously), so streams left without room are put back
        *ahead* of it and of any other that re-queued this turn; otherwise the first
        stream would be served first every turn and starve the rest. (A stream that waits
        alone gets all the room from the pump's flush, without this call.)
        """
        streams = list(self.refills)
        self.refills.clear()
        share = max(room // len(streams), _MIN_SHARE)
        used = 0
        outbox = self.outbox
        for index, stream in enumerate(streams):
            left = room - used
            if left <= 0 or not outbox.writable:
                requeued = self.refills
                self.refills = dict.fromkeys(streams[index:])
                self.refills.update(requeued)
                break
            used += stream.refill(min(left, share))
        return used

    def flush_packs(self) -> None:
        """Hand the elements the streams collected this turn to the core."""
        packs, self.packs = self.packs, []
        for stream in packs:
            stream.flush_pack()


class _Answered:
    """The count of an answer sent whole (:meth:`ServingTable._answer`) while an observer counts
    the connection: what its :class:`ServingStream` would count from its opening to its first
    refill, at this turn's :meth:`ServingTable.flush_packs`, where that refill would send it
    and complete. A request of the same read (the core took it before the answer went out)
    counts as it would on the stream: its count ahead is taken back (:attr:`obs`). One per
    table, used again each turn (a turn sends at most one answer whole)."""

    __slots__ = ("_table", "nbytes", "obs", "sid")

    def __init__(self, table: ServingTable) -> None:
        self._table = table
        self.sid = -1
        """The answer's subscriber id; -1: none now (the table's one is free)."""
        self.nbytes = 0
        self.obs: StreamObserver | None = None

    def request(self, n: int) -> None:
        """The peer's ``request(n)``, in the read of the answer's subscribe."""
        obs = self.obs
        if obs is None:
            observer = self._table.outbox.observer
            if observer is None:
                return
            obs = observer.open_deferred(self.sid)
            if obs is None:
                return
        obs.demand(n)

    def flush_pack(self) -> None:
        """Its first refill's count: sent and completed (as counted ahead, unless taken back)."""
        sid = self.sid
        self.sid = -1
        obs = self.obs
        if obs is None:  # the count ahead stands
            observer = self._table.outbox.observer
            if observer is not None:
                observer.deferred.pop(sid, None)
            return
        self.obs = None
        obs.sent(1, self.nbytes)
        obs.ended("completed")
