"""The subscribing side of one stream: a remote publisher seen as a local :class:`Flow`.

Theory of operation. ``conn.publisher(name)`` returns a :class:`RemotePublisher`, a cold
Flow: each ``subscribe`` opens a new remote subscription with a fresh subscriber id.
The local Subscriber gets its :class:`RemoteSubscription` in ``on_subscribe`` *before*
the ``subscribe`` frame is queued, so whatever it requests there travels as the frame's
``initialDemand`` (no extra round trip; a request/response is one frame each way).

* ``request(n)`` is checked here first (rule 3.9): an illegal ``n`` ends the stream
  locally with ``on_error(InvalidDemandError)``; no ``request`` frame is sent (only a
  ``cancel``, so the peer frees its side). Legal requests are summed (saturating at
  ``2**63 - 1``, rule 3.17) and sent as one ``request`` frame per subscription per
  event-loop turn, however many ``request`` calls were made.
* ``cancel()`` queues a ``cancel`` frame; elements already in flight are dropped (3.12).
* Incoming ``onNext`` frames are delivered straight from the connection's read callback
  to ``on_next`` (decoded by the codec, if any): no queue, no task hop.
* A Subscriber whose method raises is treated as having cancelled (rule 2.13), and the
  error goes to :func:`rstreams.errors.report_unhandled`.

Both ``request`` and ``cancel`` may be called from any thread; off the loop's thread
they are handed over with ``call_soon_threadsafe`` (one call per ``request``, never per
element).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.errors import LocalProtocolError, ResourceClosedError, report_unhandled
from rstreams.flow._element import NoSuchElementError
from rstreams.flow._flow import Flow
from rstreams.flow._signals import subscriber_name
from rstreams.net._codec import Codec, ContentTypeError, codec_for, decode_failed, identity, split_packed
from rstreams.net._outbox import Outbox
from rstreams.net._remote_errors import RemoteStreamError, remote_error
from rstreams.rules import check_subscriber
from rstreams.wire import (
    Answer,
    Cancel,
    ConnectionState,
    ExtensionMessage,
    OnComplete,
    OnError,
    OnNext,
    OnNextBatch,
    OnNextPacked,
)
from rstreams.wire._auth import Credentials, encode_subscribe_credentials
from rstreams.wire._content import same_media_type
from rstreams.wire.extensions import AUTH, AUTH_SUBSCRIBE_CREDENTIALS, ERROR_CODE

__all__ = [
    "Batching",
    "RemotePublisher",
    "RemoteStreamError",
    "RemoteSubscription",
    "ScalarRequest",
    "ScalarSubscriber",
    "SubscriptionTable",
]

T = TypeVar("T")


_ident = threading.get_ident

EARLY_REQUEST = 64
"""Demand that is written at once when requested while a read is being delivered, instead of
with everything else at the end of that read. A subscriber that re-requests half its window
as it consumes then has the next elements produced while it works through the rest of the
read (the two sides overlap instead of taking turns); smaller requests are coalesced."""


class RemotePublisher(Flow[T]):
    """The publisher named ``name`` on the other side of ``conn``; made by ``conn.publisher``.

    With ``batch`` (a :class:`Batching`), ``T`` is a list of elements: see :class:`Batching`.
    """

    __slots__ = ("_batch", "_codec", "_credentials", "_decode", "_metadata", "_prelude", "_table", "name")

    def __init__(
        self,
        table: SubscriptionTable,
        name: str,
        decode: Callable[[bytes], Any] | None,
        batch: Batching | None = None,
        credentials: Credentials | None = None,
        codec: Codec[Any] | None = None,
        metadata: bytes | None = None,
        prelude: Callable[[int], Exception | None] | None = None,
    ) -> None:
        self._table = table
        self.name = name
        self._metadata = metadata  # encoded subscribe metadata (§18), sent with every subscribe
        self._prelude = prelude  # checks after the peer's hello (metadata_required=True, §18.1)
        self._decode = decode
        self._batch = batch
        self._credentials = credentials  # this publisher's own (PROTOCOL.md §15.4); never shown
        self._codec = codec  # the explicit codec; None: decode by the announced type (§17)

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        table = self._table
        table.outbox.run_on_loop(
            table.open,
            self.name,
            subscriber,
            self._decode,
            self._batch,
            self._credentials,
            self._prelude,
            self._codec,
            self._metadata,
        )

    def __repr__(self) -> str:
        return f"<RemotePublisher {self.name!r} on {self._table.describe()}>"


class Batching:
    """How a batched remote subscription turns received elements into lists.

    ``conn.publisher(name, codec=..., batched=True)``: the local Subscriber's ``on_next``
    gets a non-empty ``list`` of elements: the decoded elements of one ``onNextPacked``
    frame (one ``decode_many`` call), or the run of ``onNext`` elements one read brought
    (each decoded). Demand is counted in *elements*, not in lists: ``request(n)`` lets
    ``n`` more elements arrive, so the lists of one subscription add up to at most the
    elements requested, and a list never holds more than the demand outstanding.
    """

    __slots__ = ("decode", "decode_packed", "lists")

    def __init__(self, codec: Codec[Any] | None, *, lists: bool = True) -> None:
        self.lists = lists
        """False: elements are still delivered one by one; only packed frames are decoded at once."""
        self.decode = codec.decode if codec is not None and codec.decode is not identity else None
        self.decode_packed = codec.decode_batch if codec is not None and codec.element_size else None


class RemoteSubscription(Subscription, Generic[T]):
    """The local half of one remote subscription, identified by ``sid`` on the wire."""

    __slots__ = (
        "_batch",
        "_codec",
        "_decode",
        "_lists",
        "_loop_thread",
        "_outbox",
        "_table",
        "content_type",
        "done",
        "name",
        "pending",
        "sid",
        "started",
        "subscriber",
    )

    def __init__(
        self,
        table: SubscriptionTable,
        sid: int,
        subscriber: Subscriber[T],
        decode: Callable[[bytes], T] | None,
        batch: Batching | None = None,
        codec: Codec[Any] | None = None,
    ) -> None:
        self._table = table
        self._outbox = table.outbox
        self.sid = sid
        self.subscriber: Subscriber[T] | None = subscriber
        self._decode = decode
        self._batch = batch
        self._lists = batch is not None and batch.lists
        self._codec = codec  # explicit; None: decode by the announced type (PROTOCOL.md §17)
        self.content_type: str | None = None
        """The media type the publisher announced (extension content-types, §17), if any."""
        self.name = "?"  # the publisher's name, once subscribed (for error messages)
        self.pending = 0  # demand requested locally, not yet sent
        self.started = False  # the subscribe frame was queued
        self.done = False  # cancelled or terminated: deliver nothing more
        self._loop_thread = table.loop_thread

    # -- Subscription (the local Subscriber calls these, from any thread) ----------------
    def request(self, n: int) -> None:
        if self.done:
            return  # rule 3.6
        if _ident() != self._loop_thread:
            self._outbox.call_soon_threadsafe(self.request, n)
            return
        if type(n) is not int or n <= 0:  # demand.invalid's common case, inlined
            problem = demand.invalid(n)
            if problem is not None:
                self.fail_locally(problem)
                return
        first = self.pending == 0
        pending = self.pending + n  # demand.add, inlined
        if pending >= demand.UNBOUNDED:
            pending = demand.UNBOUNDED
        self.pending = pending
        if not self.started:
            return
        outbox = self._outbox
        if pending >= EARLY_REQUEST and outbox.reading:
            self._table.request_now(self)  # mid-read: let the peer produce while we consume
        elif not first:
            return  # the request of this turn takes it too
        elif outbox.ended is None and outbox.write_soon(self.sid, pending):
            # Sent at once when nothing else waits for this turn's write: one element at a time
            # on an open stream costs no extra loop turn.
            self.pending = 0
        else:  # with the others, in the turn's flush (SubscriptionTable.send_requests)
            self._table.requests[self] = None
            outbox.mark_dirty()

    def cancel(self) -> None:
        if self.done:
            return  # rule 3.7
        if _ident() != self._loop_thread:
            self._outbox.call_soon_threadsafe(self.cancel)
            return
        self.done = True
        self.subscriber = None  # rule 3.13
        self._table.cancel(self)

    # -- driven by the connection (loop thread) ------------------------------------------
    def take_pending(self) -> int:
        """The demand to put in the next ``request`` frame; resets it."""
        n, self.pending = self.pending, 0
        return n

    def deliver(self, element: Any) -> None:  # bytes, then (decoded in place) the element
        """An ``onNext`` for this subscription: the hot path."""
        subscriber = self.subscriber
        if subscriber is None:
            return  # cancelled: late elements are dropped (3.12)
        if self._lists:
            self._deliver_list([element], self._batch.decode)  # type: ignore[union-attr]
            return
        decode = self._decode
        if decode is not None:
            try:
                element = decode(element)
            except Exception as error:  # bad data, not the Subscriber's fault: tell it
                self.fail_locally(decode_failed(self.name, decode, error))
                return
        try:
            subscriber.on_next(element)
        except Exception as error:
            self._broken(error, "on_next")

    def deliver_many(self, elements: list[Any], decoded: bool = False) -> None:
        """Several elements in order (an ``onNextPacked`` frame, or a run of ``onNext``);
        ``decoded``: a packed frame's codec decoded them already."""
        subscriber = self.subscriber
        if subscriber is None:
            return
        if self._lists:
            self._deliver_list(elements, None if decoded else self._batch.decode)  # type: ignore[union-attr]
            return
        if self._decode is not None and not decoded:
            for element in elements:
                self.deliver(element)
            return
        if len(elements) == 1:  # one element a read: an open stream's latency
            try:
                subscriber.on_next(elements[0])
            except Exception as error:
                self._broken(error, "on_next")
            return
        on_next = subscriber.on_next
        try:
            for element in elements:
                on_next(element)
                if self.subscriber is not subscriber:
                    return  # cancelled meanwhile, possibly by on_next itself (3.12)
        except Exception as error:
            self._broken(error, "on_next")

    def deliver_packed(self, payload: bytes, count: int) -> None:
        """The ``count`` fixed-size elements of an ``onNextPacked`` frame."""
        batch = self._batch
        if batch is None or batch.decode_packed is None:
            self.deliver_many(split_packed(payload, len(payload) // count))
            return
        if self.subscriber is None:
            return
        try:
            elements = batch.decode_packed(payload)
        except Exception as error:
            self.fail_locally(decode_failed(self.name, batch.decode_packed, error))
            return
        self.deliver_many(elements, True)

    def _deliver_list(self, elements: list[Any], decode: Callable[[bytes], Any] | None) -> None:
        """Batched mode: one ``on_next(list)``."""
        subscriber = self.subscriber
        if subscriber is None:
            return
        if decode is not None:
            try:
                elements = [decode(e) for e in elements]
            except Exception as error:
                self.fail_locally(decode_failed(self.name, decode, error))
                return
        try:
            subscriber.on_next(elements)  # type: ignore[arg-type]
        except Exception as error:
            self._broken(error, "on_next")

    def complete(self) -> None:
        subscriber = self._finish()
        if subscriber is not None:
            try:
                subscriber.on_complete()
            except Exception as error:
                report_unhandled(error, f"{type(subscriber).__name__}.on_complete")

    def answer(self, element: bytes) -> None:
        """A request/response's answer (the table took it out already): the element, then the
        completion."""
        self.deliver(element)
        self.complete()

    def error(self, error: BaseException) -> None:
        subscriber = self._finish()
        if subscriber is not None:
            try:
                subscriber.on_error(error)
            except Exception as exc:
                report_unhandled(exc, f"{type(subscriber).__name__}.on_error")

    def announced(self, media_type: str, name: str) -> None:
        """The publisher stated its elements' media type (contentType, before onSubscribe):
        check it against an explicit codec, or take the codec it names (§17)."""
        self.content_type = media_type
        codec = _announced_codec(self._codec, media_type, name, self.fail_locally)
        if codec is None:
            return  # explicit codec, or opaque bytes (octet-stream, or a type without a built-in codec)
        batch = self._batch
        if batch is not None or (codec.element_size and codec.decode_many is not None):
            self._batch = Batching(codec, lists=batch is not None and batch.lists)
        self._decode = codec.decode

    def fail_locally(self, error: BaseException) -> None:
        """End the stream here with ``error`` and cancel it on the wire."""
        if self.done:
            return
        self.done = True
        self._table.cancel(self)
        subscriber, self.subscriber = self.subscriber, None
        if subscriber is not None:
            try:
                subscriber.on_error(error)
            except Exception as exc:
                report_unhandled(exc, f"{type(subscriber).__name__}.on_error")

    def _finish(self) -> Subscriber[T] | None:
        self.done = True
        subscriber, self.subscriber = self.subscriber, None
        return subscriber

    def _broken(self, error: Exception, method: str) -> None:
        """Rule 2.13: a Subscriber that raised is considered to have cancelled."""
        subscriber = self.subscriber
        self.cancel()
        report_unhandled(error, f"{subscriber_name(subscriber)}.{method}")  # the user's, behind operators


class ScalarSubscriber(Subscriber[Any]):
    """Request/response: takes the single element of a stream into a future.

    The answer is normally followed by ``onComplete`` in the same read. If the publisher
    has more to say, the subscription is cancelled once that read has been handled, so a
    request/response never leaves a subscription open on the peer.
    """

    __slots__ = ("_defer", "_done", "_future", "_name", "_subscription")

    def __init__(
        self, future: Any, name: str, defer: Callable[[Callable[[], None]], object] | None = None
    ) -> None:
        self._future = future  # asyncio.Future, resolved on the loop's thread
        self._name = name
        self._subscription: Subscription | None = None
        self._done = False
        # How to run the check after the rest of the read: the connection's after-dispatch
        # list (no loop callback per request), else the loop's call_soon.
        self._defer = defer if defer is not None else future.get_loop().call_soon

    def on_subscribe(self, subscription: Subscription) -> None:
        if demand.accept_subscription(self._subscription, subscription):
            self._subscription = subscription
            subscription.request(1)

    def on_next(self, item: Any) -> None:
        if not self._future.done():
            self._future.set_result(item)
            self._defer(self._cancel_if_open)

    def _cancel_if_open(self) -> None:
        if not self._done:
            self.cancel()

    def on_error(self, error: BaseException) -> None:
        self._done = True
        if not self._future.done():
            self._future.set_exception(error)

    def on_complete(self) -> None:
        self._done = True
        if not self._future.done():
            empty = NoSuchElementError(f"publisher {self._name!r} completed without an element")
            self._future.set_exception(empty)

    def cancel(self) -> None:
        if self._subscription is not None:
            self._subscription.cancel()


class ScalarRequest:
    """Request/response in one object: one of our subscriptions, opened with demand 1 in its
    subscribe, whose single element goes into a future.

    What a :class:`ScalarSubscriber` does over a :class:`RemoteSubscription`, for
    ``conn.request``'s common case (:meth:`SubscriptionTable.open_request`) with fewer objects,
    fields and calls: the answer goes from the read to the future directly. It is no
    Subscription (no Subscriber ever sees it) and answers the table's calls as a
    :class:`RemoteSubscription` does. Whether it is still open is the table's to say: once
    ended or cancelled it is no longer in the table, which then routes nothing more to it and
    makes :meth:`cancel` a no-op. An element the publisher follows with more (no terminal
    signal in the same read) has the subscription cancelled once that read has been handled,
    as with :class:`ScalarSubscriber`.
    """

    __slots__ = ("codec", "decode", "future", "name", "sid", "table")

    # Made by the table alone (SubscriptionTable.open_request), which sets these fields without
    # an __init__ call (a request/response makes one each time):
    table: SubscriptionTable
    sid: int
    name: str
    """The publisher's name (for error messages)."""
    future: Any
    """The asyncio.Future the answer goes into, resolved on the loop's thread."""
    decode: Callable[[bytes], Any] | None
    codec: Codec[Any] | None
    """The explicit codec; ``None``: decode by the announced type (PROTOCOL.md §17)."""

    def cancel(self) -> None:
        """Cancel it on the wire (loop thread: ``conn.request`` and the deferred check call it);
        a no-op once it ended or was cancelled."""
        self.table.cancel(self)

    # -- the peer's signals, as the table routes them to a RemoteSubscription -------------------
    def answer(self, element: Any) -> None:  # bytes, then (decoded in place) the answer
        """The element, as the answer: into the future (the completion that follows it in an
        answer has nothing left to do)."""
        decode = self.decode
        if decode is not None:
            try:
                element = decode(element)
            except Exception as error:  # bad data: the request fails with it
                self.fail_locally(decode_failed(self.name, decode, error))
                return
        future = self.future
        if not future.done():
            future.set_result(element)

    def deliver(self, element: bytes) -> None:
        """The element of a stream still open: :meth:`answer`, then a cancel once the read is
        handled unless the stream's terminal signal came in it."""
        self.answer(element)
        if self.sid in self.table.outbox.core.ids_in_use:  # no onComplete/onError in this read
            self.table.defer(self.cancel)

    def deliver_many(self, elements: list[Any]) -> None:
        for element in elements:  # one (the core holds the publisher to demand 1)
            self.deliver(element)

    def deliver_packed(self, payload: bytes, count: int) -> None:
        self.deliver_many(split_packed(payload, len(payload) // count))

    def complete(self) -> None:
        future = self.future
        if not future.done():
            future.set_exception(NoSuchElementError(f"publisher {self.name!r} completed without an element"))

    def error(self, error: BaseException) -> None:
        future = self.future
        if not future.done():
            future.set_exception(error)

    def announced(self, media_type: str, name: str) -> None:
        """As :meth:`RemoteSubscription.announced`: check the explicit codec, or decode by the
        codec ``media_type`` names (§17)."""
        codec = _announced_codec(self.codec, media_type, name, self.fail_locally)
        if codec is not None:
            self.decode = codec.decode

    def fail_locally(self, error: BaseException) -> None:
        """End the request here with ``error`` and cancel it on the wire."""
        self.table.cancel(self)
        self.error(error)


def _announced_codec(
    explicit: Codec[Any] | None, media_type: str, name: str, fail: Callable[[BaseException], None]
) -> Codec[Any] | None:
    """A subscription's publisher announced ``media_type`` (§17): the codec to decode by from
    now on, the built-in one ``media_type`` names (``None``: none does). With an ``explicit``
    codec, ``None`` (it stays), after ``fail(ContentTypeError)`` if the two types differ."""
    if explicit is None:
        return codec_for(media_type)
    if explicit.media_type is not None and not same_media_type(explicit.media_type, media_type):
        fail(ContentTypeError(name, media_type, explicit))
    return None


Consumer = RemoteSubscription[Any] | ScalarRequest
"""One of our subscriptions, as the table keeps and signals it."""


class SubscriptionTable:
    """Our subscriptions on the peer's publishers: subscriber ids, demand, terminal signals.

    Ids are a namespace of our own (PROTOCOL.md §5.1), reused lowest first so that they stay
    small (one or two bytes on the wire, the parser's fast path; §5.3). Demand requested by
    local Subscribers is coalesced: one ``request`` frame per subscription per loop turn
    (:meth:`send_requests`, from the pump's flush), or at once mid-read for a big request.
    The pump routes the peer's ``onNext``/``onComplete``/``onError`` here.
    """

    __slots__ = (
        "_deferred",
        "_free_ids",
        "_next_id",
        "_unacked",
        "defer",
        "describe",
        "loop_thread",
        "outbox",
        "qualified",
        "requests",
        "subscriptions",
    )

    def __init__(self, outbox: Outbox, describe: Callable[[], str]) -> None:
        self.outbox = outbox
        self.loop_thread = _ident()
        """The event loop's thread, where the table is made and its subscriptions are signalled
        (they hand over a request or cancel made on another thread)."""
        self.describe = describe  # the connection's repr, for RemotePublisher's
        self.defer: Callable[[Callable[[], None]], object] = outbox.loop.call_soon
        """Runs a call once the current read is handled (the connection sets the pump's)."""
        self.subscriptions: dict[int, Consumer] = {}
        self.requests: dict[RemoteSubscription[Any], None] = {}
        """Subscriptions with demand to send this turn (the pump's flush reads it)."""
        self._next_id = 1  # the lowest id never used
        self._free_ids: list[int] = []  # a heap: ids whose terminal signal was received
        self._unacked: set[int] = set()  # cancelled ids, in use until the publisher's onComplete
        self._deferred: list[tuple[Any, ...]] = []  # subscribes with credentials, awaiting the hello
        self.qualified: dict[int, object] = {}
        """Qualifier type -> value for the peer's signal the pump routes next (PROTOCOL.md §19)."""

    # -- opening ------------------------------------------------------------------------------
    def open(
        self,
        name: str,
        subscriber: Subscriber[T],
        decode: Callable[[bytes], T] | None,
        batch: Batching | None = None,
        credentials: Credentials | None = None,
        prelude: Callable[[int], Exception | None] | None = None,
        codec: Codec[Any] | None = None,
        metadata: bytes | None = None,
    ) -> None:
        """Subscribe ``subscriber`` to the peer's ``name`` (loop thread); ``credentials``: its own
        (§15.4); ``codec``: the explicit one (``None``: decode by the announced type, §17);
        ``metadata``: encoded entries sent right before the subscribe (§18).

        ``prelude(sid)``, if given, runs after the peer's hello, just before the subscribe is
        queued: it sends what must precede it (extension channels' mark, §21) or returns the
        error that ends the subscription instead."""
        outbox = self.outbox
        core = outbox.core
        if (
            (
                credentials is not None
                or prelude is not None
                or metadata is not None
                or (outbox.observer is not None and outbox.observer.tracing)
            )
            and core.state is ConnectionState.AWAITING_HELLO
            and outbox.ended is None
        ):
            # subscribeCredentials, subscribeMetadata and a channel's mark are extension messages:
            # never before the peer's hello (§4.4), which also says whether the peer takes them;
            # when tracing, the subscribe's span puts its traceparent in metadata (§18)
            self._deferred.append((name, subscriber, decode, batch, credentials, prelude, codec, metadata))
            return
        sid = self._take_id()
        subscription: RemoteSubscription[T] = RemoteSubscription(self, sid, subscriber, decode, batch, codec)
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
        if outbox.ended is not None or outbox.closing:
            subscription.error(outbox.ended or ResourceClosedError("the connection is closing"))
            return
        if credentials is not None and AUTH.id not in core.extensions:
            heapq.heappush(self._free_ids, sid)
            subscription.error(
                LocalProtocolError(
                    f"can't subscribe to {name!r} with credentials: the peer does not offer "
                    f"extension auth (id 2) (PROTOCOL.md §15.2)"
                )
            )
            return
        if prelude is not None:
            problem = prelude(sid)
            if problem is not None:
                heapq.heappush(self._free_ids, sid)
                subscription.error(problem)
                return
        if credentials is not None:
            payload = encode_subscribe_credentials(sid, credentials)
            core.send(ExtensionMessage(type=AUTH_SUBSCRIBE_CREDENTIALS, payload=payload))
        self._start(name, subscription, metadata)

    def open_request(
        self,
        name: str,
        future: Any,
        decode: Callable[[bytes], Any] | None,
        codec: Codec[Any] | None,
        metadata: bytes | None,
    ) -> ScalarRequest | ScalarSubscriber:
        """Request/response (``conn.request``, loop thread): subscribe to ``name`` with demand
        1 and resolve ``future`` with its element; returns what cancels it. Usually one
        :class:`ScalarRequest`, so the Subscriber protocol's ``on_subscribe`` -> ``request(1)``
        round is skipped; what :meth:`open` handles specially (a subscribe held for the
        peer's hello, a closing connection) goes through it with a :class:`ScalarSubscriber`."""
        outbox = self.outbox
        if (
            outbox.ended is not None
            or outbox.closing
            or (
                (metadata is not None or (outbox.observer is not None and outbox.observer.tracing))
                and outbox.core.peer_hello is None  # no hello yet (an attribute; open() checks the state)
            )
        ):
            subscriber = ScalarSubscriber(future, name, self.defer)
            self.open(name, subscriber, decode, None, None, None, codec, metadata)
            return subscriber
        free = self._free_ids
        sid = heapq.heappop(free) if free and not self._unacked else self._take_id()  # _take_id's common case
        request = ScalarRequest()  # (it has no __init__: its fields, set here; cheaper than object.__new__)
        request.table = self
        request.sid = sid
        request.name = name
        request.future = future
        request.decode = decode
        request.codec = codec  # its demand, 1, goes in the subscribe
        self.subscriptions[sid] = request  # _start, inlined
        if outbox.observer is not None:  # tracing: the span's traceparent joins the metadata
            metadata = outbox.observer.subscribed(sid, name, metadata)
        outbox.core.send_subscribe_unchecked(name, sid, 1, metadata)  # our own id; metadata: §18
        outbox.write_soon()
        return request

    def _start(self, name: str, subscription: RemoteSubscription[Any], metadata: bytes | None) -> None:
        """Queue ``subscription``'s subscribe (with its pending demand and ``metadata``, §18) and
        write it at once unless other frames of this turn are to join it."""
        sid = subscription.sid
        self.subscriptions[sid] = subscription
        subscription.name = name
        subscription.started = True
        outbox = self.outbox
        if outbox.observer is not None:  # tracing: the span's traceparent joins the metadata
            metadata = outbox.observer.subscribed(sid, name, metadata)
        n, subscription.pending = subscription.pending, 0
        outbox.core.send_subscribe_unchecked(name, sid, n, metadata)  # our own id and demand; §18
        outbox.write_soon()

    def release_deferred(self) -> None:
        """The peer's hello arrived (or the connection ended): open the subscribes held for it."""
        deferred, self._deferred = self._deferred, []
        for args in deferred:
            self.open(*args)

    def _take_id(self) -> int:
        """The lowest free subscriber id. An id is free once its onComplete/onError was received
        (PROTOCOL.md §5.3); a cancelled id only once the publisher acknowledged the cancel."""
        if self._unacked:
            core = self.outbox.core
            acked = [sid for sid in self._unacked if not core.id_in_use(sid)]
            for sid in acked:
                self._unacked.discard(sid)
                heapq.heappush(self._free_ids, sid)
        if self._free_ids:
            return heapq.heappop(self._free_ids)
        sid = self._next_id
        self._next_id = sid + 1
        return sid

    # -- demand and cancel (from the subscriptions) ------------------------------------------------
    def request_now(self, subscription: RemoteSubscription[Any]) -> None:
        """Send ``subscription``'s pending demand, and anything else queued, in a write of its own."""
        self.requests.pop(subscription, None)
        n = subscription.take_pending()
        if not n or subscription.done or self.outbox.ended is not None:
            return
        self.outbox.core.request(subscription.sid, n)
        self.outbox.write_now()

    def send_requests(self) -> None:
        """Queue one ``request`` frame per subscription that asked for more this turn."""
        pending, self.requests = self.requests, {}
        core = self.outbox.core
        for subscription in pending:
            n = subscription.take_pending()
            if n and not subscription.done:
                core.request(subscription.sid, n)

    def cancel(self, subscription: Consumer) -> None:
        """Cancel ``subscription`` on the wire unless it ended or was cancelled already (then it
        is no longer the table's). Its demand still in :attr:`requests` is dropped by the flush:
        it is done."""
        sid = subscription.sid
        if self.subscriptions.get(sid) is subscription and self.outbox.ended is None:
            del self.subscriptions[sid]
            if self.outbox.observer is not None:
                self.outbox.observer.unsubscribed(sid, "cancelled")
            self.outbox.core.send(Cancel(subscriber=sid))
            self._unacked.add(sid)  # in use until the publisher's acknowledgement (§5.4)
            self.outbox.mark_dirty()

    # -- the peer's signals (routed by the pump) ---------------------------------------------------
    def on_next_batch(self, event: OnNextBatch) -> None:
        subscription = self.subscriptions.get(event.subscriber)
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.received(len(event.elements), event.subscriber)
            subscription.deliver_many(event.elements)

    def on_answer(self, event: Answer) -> None:
        """A request/response's answer, which the core took whole (its onSubscribe, one onNext
        and onComplete): the subscription leaves the table and gets the element and the
        completion in one call (``answer``); its id is free once that returned, as
        :meth:`on_complete` frees it (a subscribe made in ``on_next`` takes another)."""
        sid = event.subscriber
        subscription = self.subscriptions.pop(sid, None)
        if subscription is not None:
            observer = self.outbox.observer
            if observer is None:
                if subscription.__class__ is ScalarRequest and subscription.decode is None:
                    future = subscription.future  # ScalarRequest.answer's common case, inlined:
                    if not future.done():  # conn.request's answer, as bytes, into its future
                        future.set_result(event.element)
                else:
                    subscription.answer(event.element)
            else:
                observer.received(1, sid)
                subscription.answer(event.element)
                observer.unsubscribed(sid, "completed")
        if self._unacked:
            self._unacked.discard(sid)  # its terminal came: the id is free (a crossed cancel's too)
        heapq.heappush(self._free_ids, sid)

    def on_next(self, event: OnNext) -> None:
        subscription = self.subscriptions.get(event.subscriber)
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.received(1, event.subscriber)
            subscription.deliver(event.element)

    def on_next_packed(self, event: OnNextPacked) -> None:
        subscription = self.subscriptions.get(event.subscriber)
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.received(event.count, event.subscriber)
            subscription.deliver_packed(event.elements, event.count)

    def on_complete(self, event: OnComplete | Answer) -> None:
        sid = event.subscriber
        subscription = self.subscriptions.pop(sid, None)
        if self._unacked:
            self._unacked.discard(sid)  # its terminal came: the id is free (a crossed cancel's too)
        heapq.heappush(self._free_ids, sid)
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.unsubscribed(sid, "completed")
            subscription.complete()

    def content_type(self, sid: int, media_type: str) -> None:
        """The peer announced ``media_type`` for our ``sid``; its onSubscribe follows (§17)."""
        subscription = self.subscriptions.get(sid)
        if subscription is not None:
            subscription.announced(media_type, subscription.name)

    def on_error(self, event: OnError) -> None:
        sid = event.subscriber
        subscription = self.subscriptions.pop(sid, None)
        name = "?" if subscription is None else subscription.name
        if self._unacked:
            self._unacked.discard(sid)  # its terminal came: the id is free (a crossed cancel's too)
        heapq.heappush(self._free_ids, sid)
        code = self.qualified.pop(ERROR_CODE, None) if self.qualified else None
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.unsubscribed(sid, "error", event.error)
            subscription.error(
                remote_error(event.error, publisher=name, subscriber=sid, code=code)  # type: ignore[arg-type]
            )

    def stream_error(self, sid: int, error: BaseException) -> None:
        """The core found the peer breaking the rules on our ``sid`` and cancelled it."""
        subscription = self.subscriptions.pop(sid, None)
        self._unacked.add(sid)  # the core cancelled it: wait for the acknowledgement
        if subscription is not None:
            if self.outbox.observer is not None:
                self.outbox.observer.unsubscribed(sid, "error", str(error))
            subscription.error(error)

    def end(self, error: BaseException) -> None:
        """The connection ended: every subscription (and every held subscribe) fails with ``error``."""
        self.release_deferred()  # they fail at once: the outbox says the connection ended
        subscriptions, self.subscriptions = self.subscriptions, {}
        self.requests.clear()
        for subscription in subscriptions.values():
            subscription.error(error)
