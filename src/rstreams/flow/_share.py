"""``share()`` / ``ref_count()`` and ``replay(n)``: one upstream subscription for many
subscribers, while any is there (a reference count).

Built on :class:`~rstreams.flow._multicast.Multicast` (its module tells how one
upstream serves many subscribers, paced by the slowest, with at most ``buffer_size``
elements held ahead of it). ``share`` adds the reference count: the first subscriber
makes a processor and subscribes it to the source; later ones join that processor and
see the elements that arrive after they joined; when the last one leaves (cancels or
receives the end), the processor cancels the upstream if it still runs, and the next
subscriber starts over with a fresh subscription to the source. ``replay(n)`` is the same
with a processor that keeps the last ``n`` elements for subscribers that join later
(``Multicast(replay=n)``); a fresh start replays nothing of the previous one. Its
upstream error is kept in that history, behind the elements each subscriber had still
to take (the processor's ``ordered_errors``), as reactor's and RxJava's ``replay`` do;
``share``'s goes on at once, as reactor's ``publish`` does.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.flow._multicast import Multicast
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error, check_subscriber

__all__ = ["ShareFlow"]

T = TypeVar("T")


class ShareFlow(Publisher[T]):
    """``source.share(buffer_size=256)`` (``ref_count``, ``replay(n)``); see :meth:`rstreams.Flow.share`."""

    __slots__ = ("_buffer_size", "_lock", "_members", "_processor", "_replay", "_source")

    def __init__(
        self, source: Publisher[T], buffer_size: int, operator: str = "share", replay: int = 0
    ) -> None:
        if type(buffer_size) is not int:
            raise TypeError(f"{operator}(buffer_size=) needs an int, got {buffer_size!r}")
        if buffer_size <= 0:
            raise ValueError(f"{operator}(buffer_size=) needs an int > 0, got {buffer_size!r}")
        self._source = source
        self._buffer_size = buffer_size
        self._replay = replay
        self._lock = threading.Lock()
        self._processor: Multicast[T] | None = None
        self._members = 0

    @property
    def subscriber_count(self) -> int:
        """Subscribers currently sharing the upstream subscription."""
        return self._members

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        with self._lock:
            processor = self._processor
            first = processor is None
            if processor is None:
                processor = self._processor = Multicast(buffer_size=self._buffer_size, replay=self._replay)
                processor._ordered_errors = self._replay > 0
            self._members += 1
        processor.subscribe(_Member(self, processor, subscriber))
        if first:
            self._source.subscribe(processor)

    def leave(self, member: _Member[T]) -> None:
        """``member`` left (once); the last one of its processor lets the next subscriber start over."""
        with self._lock:
            if member.left:
                return
            member.left = True
            if self._processor is not member.processor:
                return  # an earlier generation
            self._members -= 1
            if self._members == 0:
                self._processor = None


class _Member(Subscriber[T], Subscription, Generic[T]):
    """One subscriber of the share: passes everything on, and tells the share when it leaves."""

    __slots__ = ("_share", "downstream", "left", "processor", "upstream")

    def __init__(self, share: ShareFlow[T], processor: Multicast[T], downstream: Subscriber[T]) -> None:
        self._share = share
        self.processor = processor
        self.downstream = downstream
        self.upstream: Subscription | None = None
        self.left = False  # guarded by the share's lock

    def _leave(self) -> None:
        if not self.left:
            self._share.leave(self)

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.downstream.on_subscribe(self)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        self.downstream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        self._leave()
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        self._leave()
        self.downstream.on_complete()

    def request(self, n: int) -> None:
        if self.upstream is not None:
            self.upstream.request(n)

    def cancel(self) -> None:
        self._leave()
        if self.upstream is not None:
            self.upstream.cancel()
