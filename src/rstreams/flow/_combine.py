"""Several Publishers into one: ``concat``, ``zip``, ``combine_latest``, ``race``.

``concat`` is ``concat_map`` over the list of its Publishers (one subscribed at a time,
the outstanding demand carried from one to the next). The others are built on
:class:`rstreams.flow._drain.DrainSubscriber` (its module tells the theory of operation):
the Publishers arrive as the elements of a synchronous list source, each gets a
:class:`_Slot` (an inner Subscriber with its own bounded queue), and only the thread
holding the drain loop signals the downstream or calls any Subscription (rules 1.3, 2.7).

Demand (rule 1.1, and nothing requested before the downstream asks): every source is
asked for at most ``min(prefetch, outstanding downstream demand)`` elements beyond
what was taken from its queue, topped up when a quarter of ``prefetch`` is left or
three quarters can be asked at once. So every queue holds at most ``prefetch``
elements, and a source that sends more than it was asked fails the stream with
:class:`~rstreams.errors.OverflowStrategyError`.

* ``zip``: one tuple per element of each source; ``request(n)`` asks each source for
  ``n`` (what the slowest side needs; bounded by ``prefetch``). Completes as soon as
  one source has completed and its queue is empty, cancelling the others.
* ``combine_latest``: once every source has an element, a tuple of the latest element of
  each, for every element that arrives (in arrival order). Elements that come before
  every source has one only update the latest values. Completes when all sources have
  completed, or at once when one completes without any element.
* ``race``: the first source to signal anything wins; the others are cancelled and
  their signals ignored. Until then every source is asked for the same demand. The
  winner's error comes after the elements it sent (all within the demand).

The first error, from any source, cancels the others and is signalled once (rule 4.2).
"""

from __future__ import annotations

import abc
import threading
from collections import deque
from typing import Any, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.errors import OverflowStrategyError
from rstreams.flow._concat_map import ConcatMapFlow
from rstreams.flow._drain import OUTER, DrainSubscriber, InnerSubscriber, check_prefetch
from rstreams.flow._iterable import empty, from_iterable
from rstreams.flow._operator import MISSING, OperatorFlow, check_publishers
from rstreams.flow._signals import NONE_ITEM, report_broken
from rstreams.rules import check_error

__all__ = ["CombineFlow", "combine_latest", "concat", "race", "zip_"]

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_PREFETCH = 32
"""Most elements asked of one source ahead of the downstream (and so the bound of its queue)."""


def _checked(operator: str, publishers: tuple[Publisher[Any], ...], prefetch: int) -> None:
    check_publishers(operator, publishers)
    check_prefetch(operator, "prefetch", prefetch)


def _identity(publisher: Publisher[T]) -> Publisher[T]:
    return publisher


def concat(*publishers: Publisher[T], name: str = "concat") -> Publisher[T]:
    """The publisher behind :func:`rstreams.concat` (``name``: the operator errors name)."""
    _checked(name, publishers, 1)
    if not publishers:
        return empty()
    return ConcatMapFlow(from_iterable(publishers), _identity, prefetch=1)


def zip_(
    *publishers: Publisher[Any], prefetch: int = DEFAULT_PREFETCH, name: str = "zip"
) -> Publisher[tuple[Any, ...]]:
    """The publisher behind :func:`rstreams.zip` (``name``: the operator errors name)."""
    _checked(name, publishers, prefetch)
    if not publishers:
        return empty()
    return CombineFlow(from_iterable(publishers), _Zip, len(publishers), prefetch)


def combine_latest(
    *publishers: Publisher[Any], prefetch: int = DEFAULT_PREFETCH, name: str = "combine_latest"
) -> Publisher[tuple[Any, ...]]:
    """The publisher behind :func:`rstreams.combine_latest` (``name``: the operator errors name)."""
    _checked(name, publishers, prefetch)
    if not publishers:
        return empty()
    return CombineFlow(from_iterable(publishers), _CombineLatest, len(publishers), prefetch)


def race(*publishers: Publisher[T], prefetch: int = DEFAULT_PREFETCH, name: str = "race") -> Publisher[T]:
    """The publisher behind :func:`rstreams.race` (``name``: the operator errors name)."""
    _checked(name, publishers, prefetch)
    if not publishers:
        return empty()
    return CombineFlow(from_iterable(publishers), _Race, len(publishers), prefetch)


class CombineFlow(OperatorFlow[Publisher[Any], R]):
    """``zip``/``combine_latest``/``race`` over the Publishers that ``source`` emits."""

    __slots__ = ("kind", "prefetch", "sources")

    def __init__(
        self, source: Publisher[Publisher[Any]], kind: type[_Combining[Any]], count: int, prefetch: int
    ) -> None:
        super().__init__(source)
        self.kind = kind
        self.sources = count
        self.prefetch = prefetch

    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[Publisher[Any]]:
        return self.kind(downstream, self.sources, self.prefetch)


class _Slot(InnerSubscriber[Any, "_Combining[Any]"]):
    """Subscriber to one source: its elements go where the parent keeps them.

    ``asked``/``taken`` (requested of it, and taken from its queue) belong to the drain
    loop; ``received`` counts its elements, to catch one that sends unasked (rule 1.1).
    """

    __slots__ = ("asked", "index", "queue", "received", "taken")

    def __init__(self, parent: _Combining[Any], index: int) -> None:
        InnerSubscriber.__init__(self, parent)
        self.index = index
        self.queue: deque[Any] = deque()
        self.asked = 0
        self.taken = 0
        self.received = 0

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        parent = self.parent
        if not parent.claim(self):
            return
        self.received += 1
        if self.received > self.asked:
            self.done = True
            parent.fail(
                OverflowStrategyError(
                    f"rule 1.1: {parent.name} source {self.index} sent more than the "
                    f"{self.asked} elements requested of it"
                )
            )
            return
        if parent.accept(self, item):
            return  # delivered at once (the fast path)
        calling = parent.calling
        if calling is not self and calling is not OUTER:
            parent.drain()

    def on_next_many(self, items: list[Any]) -> None:
        """The batch signal: the whole list kept at once, then one drain."""
        if self.done:
            return
        parent = self.parent
        if not parent.claim(self):
            return
        self.received += len(items)
        if self.received > self.asked:
            self.done = True
            parent.fail(
                OverflowStrategyError(
                    f"rule 1.1: {parent.name} source {self.index} sent more than the "
                    f"{self.asked} elements requested of it"
                )
            )
            return
        parent.accept_many(self, items)
        calling = parent.calling
        if calling is not self and calling is not OUTER:
            parent.drain()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if not self.done and not self.parent.claim(self):
            self.done = True  # a race's loser: ignored
            return
        super().on_error(error)

    def on_complete(self) -> None:
        if not self.done and not self.parent.claim(self):
            self.done = True
            return
        super().on_complete()


class _WinnerSlot(_Slot):
    """A race's source: asked only within the downstream's demand, so once it has won, what
    it queued goes out before its error (``race(p)`` signals exactly what ``p`` does)."""

    __slots__ = ()

    ordered = True


class _Combining(DrainSubscriber[Publisher[Any], R]):
    """The drain loop over ``count`` sources; subclasses write :meth:`step`."""

    __slots__ = ("count", "limit", "prefetch", "slots")

    slot: type[_Slot] = _Slot
    """The class of the subscriber to each source."""

    def __init__(self, downstream: Subscriber[R], count: int, prefetch: int) -> None:
        super().__init__(downstream)
        self.count = count
        self.prefetch = prefetch
        self.limit = prefetch - (prefetch >> 2)
        self.slots: list[_Slot] = []

    def on_next(self, item: Publisher[Any]) -> None:
        """One of the sources, from the list source: subscribe a slot to it."""
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.cancelled or self.done or self.error is not None:
            return
        slot = self.slot(self, len(self.slots))
        self.slots.append(slot)
        try:
            item.subscribe(slot)
        except Exception as exc:  # a Publisher that raises instead of signalling (rule 1.9)
            self.fail(exc)

    def claim(self, slot: _Slot) -> bool:
        """Whether ``slot``'s signals count (only a race has losers)."""
        return True

    def accept(self, slot: _Slot, item: Any) -> bool:
        """Keep ``slot``'s element for the loop (on the source's thread); ``True``: delivered."""
        slot.queue.append(item)
        return False

    def accept_many(self, slot: _Slot, items: list[Any]) -> None:
        """Keep a batch of ``slot``'s elements for the loop."""
        slot.queue.extend(items)

    @abc.abstractmethod
    def step(self, emitted: int) -> tuple[int, bool]:
        """Emit what demand allows and ask the sources for more; ``True`` if it made progress."""

    def _pass(self, emitted: int) -> int:
        while True:
            if self._stopping():
                return emitted
            if self._start(self.count):
                continue  # the list source has handed over every source
            if len(self.slots) < self.count:
                return emitted
            emitted, progressed = self.step(emitted)
            if not progressed or self.cancelled:
                return emitted

    def target(self, emitted: int) -> int:
        """How many elements each source may owe: the outstanding demand, at most ``prefetch``."""
        requested = self.requested
        if requested == demand.UNBOUNDED:
            return self.prefetch
        outstanding = requested - emitted
        return outstanding if outstanding < self.prefetch else self.prefetch

    def top_up(self, slot: _Slot, target: int) -> bool:
        """Ask ``slot`` for what it may owe beyond what it owes; ``True`` if it was asked."""
        owed = slot.asked - slot.taken
        want = target - owed
        if want <= 0 or (owed > self.prefetch >> 2 and want < self.limit):
            return False
        subscription = slot.subscription
        if subscription is None or slot.done:
            return False
        slot.asked += want
        self.call(slot, subscription.request, want)
        return True

    def deliver(self, item: R) -> bool:
        """``on_next`` downstream (rule 2.13 guarded); ``False`` when the pass must stop."""
        try:
            self.downstream.on_next(item)
        except Exception as exc:  # rule 2.13: consider the subscription cancelled
            self.cancelled = True
            report_broken(exc, self.downstream, "on_next")
        return not (self.cancelled or self.error is not None)

    def finish(self) -> None:
        """No more elements can come: cancel every source, then complete."""
        self._clear()
        self._complete()

    def _clear(self) -> None:
        for slot in self.slots:
            slot.cancel()
            slot.queue.clear()
        self._cancel_upstream()


class _Zip(_Combining[tuple[Any, ...]]):
    __slots__ = ()

    name = "zip"

    def step(self, emitted: int) -> tuple[int, bool]:
        slots = self.slots
        requested = self.requested
        while emitted < requested or requested == demand.UNBOUNDED:
            for slot in slots:
                if not slot.queue:
                    break
            else:
                row = []
                for slot in slots:
                    row.append(slot.queue.popleft())
                    slot.taken += 1
                emitted += 1
                if not self.deliver(tuple(row)):
                    return emitted, False
                continue
            break
        for slot in slots:
            if slot.done and not slot.queue:  # done first: its elements came before on_complete
                self.finish()
                return emitted, False
        target = self.target(emitted)
        progressed = False
        for slot in slots:
            progressed = self.top_up(slot, target) or progressed
        return emitted, progressed


class _CombineLatest(_Combining[tuple[Any, ...]]):
    __slots__ = ("arrivals", "latest", "missing")

    name = "combine_latest"

    def __init__(self, downstream: Subscriber[tuple[Any, ...]], count: int, prefetch: int) -> None:
        super().__init__(downstream, count, prefetch)
        self.arrivals: deque[tuple[_Slot, Any]] = deque()  # every source's elements, in arrival order
        self.latest: list[Any] = [MISSING] * count
        self.missing = count  # sources without an element yet

    def accept_many(self, slot: _Slot, items: list[Any]) -> None:
        self.arrivals.extend([(slot, item) for item in items])

    def accept(self, slot: _Slot, item: Any) -> bool:
        with self.lock:
            fast = (
                not self.wip
                and not self.missing
                and not self.arrivals
                and self.requested > 0
                and self.error is None
                and not self.cancelled
            )
            if not fast:
                self.arrivals.append((slot, item))
                return False
            self.wip = 1  # reactor's tryEmit: deliver on this thread, holding the loop
        slot.taken += 1
        latest = self.latest
        latest[slot.index] = item
        try:
            self.downstream.on_next(tuple(latest))
        except Exception as exc:  # rule 2.13: consider the subscription cancelled
            self.cancelled = True
            report_broken(exc, self.downstream, "on_next")
        with self.lock:
            if self.requested != demand.UNBOUNDED:
                self.requested -= 1
            if self.cancelled or slot.asked - slot.taken <= self.prefetch >> 2:
                missed = self.wip  # the loop cleans up or asks the source for more
            else:
                self.wip -= 1
                if self.wip == 0:
                    return True
                missed = self.wip
        self.drain_loop(missed)
        return True

    def step(self, emitted: int) -> tuple[int, bool]:
        arrivals = self.arrivals
        latest = self.latest
        requested = self.requested
        while arrivals and (emitted < requested or requested == demand.UNBOUNDED):
            slot, item = arrivals.popleft()
            slot.taken += 1
            if latest[slot.index] is MISSING:
                self.missing -= 1
            latest[slot.index] = item
            if self.missing:
                continue
            emitted += 1
            if not self.deliver(tuple(latest)):
                return emitted, False
        slots = self.slots
        ended = True
        for slot in slots:
            if not slot.done:
                ended = False
            elif slot.received == 0:  # done first: it will never have an element
                self.finish()
                return emitted, False
        if ended and not arrivals:
            self.finish()
            return emitted, False
        target = self.target(emitted)
        progressed = False
        for slot in slots:
            progressed = self.top_up(slot, target) or progressed
        return emitted, progressed

    def _clear(self) -> None:
        super()._clear()
        self.arrivals.clear()


class _Race(_Combining[Any]):
    __slots__ = ("losers_cancelled", "race_lock", "winner")

    name = "race"
    slot = _WinnerSlot

    def __init__(self, downstream: Subscriber[Any], count: int, prefetch: int) -> None:
        super().__init__(downstream, count, prefetch)
        self.winner: _Slot | None = None
        self.race_lock = threading.Lock()
        self.losers_cancelled = False

    def claim(self, slot: _Slot) -> bool:
        winner = self.winner
        if winner is None:
            with self.race_lock:
                if self.winner is None:
                    self.winner = slot
                winner = self.winner
        return winner is slot

    def step(self, emitted: int) -> tuple[int, bool]:
        winner = self.winner
        target = self.target(emitted)
        if winner is None:
            progressed = False
            for slot in self.slots:
                progressed = self.top_up(slot, target) or progressed
            return emitted, progressed
        if not self.losers_cancelled:
            self.losers_cancelled = True
            for slot in self.slots:
                if slot is not winner:
                    slot.cancel()
        queue = winner.queue
        requested = self.requested
        while queue and (emitted < requested or requested == demand.UNBOUNDED):
            winner.taken += 1
            emitted += 1
            if not self.deliver(queue.popleft()):
                return emitted, False
        if winner.done and not queue:
            if winner.failure is not None:
                self.fail(winner.failure)
            else:
                self.finish()
            return emitted, False
        return emitted, self.top_up(winner, self.target(emitted))
