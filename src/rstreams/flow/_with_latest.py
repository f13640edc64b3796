"""``with_latest_from(other)``: each element paired with ``other``'s latest element.

``other`` is subscribed before the downstream gets its ``on_subscribe`` (so what a
synchronous ``other`` sends is there for the source's first element, as in reactor) and asked for
everything (``UNBOUNDED``): it is read continuously and only its latest element is kept,
so the memory is one element whatever its pace (a synchronous ``other`` is read to its
end inside that ``subscribe``; give it an end or an asynchronous source).

* Demand: ``request(n)`` passes through to the source; a source element that arrives
  before ``other`` has one is dropped and asked for again (like ``filter``).
* Termination: the source's completion or error ends the stream and cancels ``other``;
  ``other``'s error ends it too; ``other`` completing without any element completes the
  stream (no pair can ever be made); completing after one changes nothing.

The two upstreams may signal from different threads: a terminal signal caused by
``other`` while the source's ``on_next`` runs is held and sent right after it, so the
downstream's signals never overlap (rule 1.3).
"""

from __future__ import annotations

from typing import Any, TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.flow._operator import MISSING, OperatorFlow
from rstreams.flow._side import Side, SideOperatorSubscriber
from rstreams.flow._signals import NONE_ITEM, signal_terminal

__all__ = ["WithLatestFromFlow"]

T = TypeVar("T")


class WithLatestFromFlow(OperatorFlow[T, tuple[T, Any]]):
    """``source.with_latest_from(other)``; see :meth:`rstreams.Flow.with_latest_from`."""

    __slots__ = ("other",)

    def __init__(self, source: Publisher[T], other: Publisher[Any]) -> None:
        super().__init__(source)
        if not callable(getattr(other, "subscribe", None)):
            raise TypeError(
                f"with_latest_from(other) needs a Publisher (an object with subscribe), got {other!r}"
            )
        self.other = other

    def subscriber(self, downstream: Subscriber[tuple[T, Any]]) -> Subscriber[T]:
        return _WithLatest(downstream, self.other)


class _WithLatest(SideOperatorSubscriber[T, tuple[T, Any]]):
    """The side is a :class:`_Latest`: it keeps ``other``'s latest element."""

    __slots__ = ("latest",)

    def __init__(self, downstream: Subscriber[tuple[T, Any]], other: Publisher[Any]) -> None:
        self.latest: Any = MISSING
        super().__init__(downstream, other)
        self.many = None

    def make_side(self) -> _Latest:
        return _Latest(self)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        with self.lock:
            if self.done:
                return
            self.busy = True
        try:
            latest = self.latest
            if latest is not MISSING:
                self.downstream.on_next((item, latest))
            elif self.upstream is not None:
                self.upstream.request(1)  # a dropped element's demand is not lost
        finally:
            with self.lock:
                self.busy = False
                held, self.held = self.held, MISSING
            if held is not MISSING:  # other ended the stream meanwhile
                signal_terminal(self.downstream, held)


class _Latest(Side):
    """The Subscriber to ``other``: asks for everything, keeps the latest element."""

    __slots__ = ()

    NAME = "with_latest_from"
    parent: _WithLatest[Any]

    def on_next(self, item: object) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if not self.stopped:
            self.parent.latest = item

    def on_complete(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.parent.latest is MISSING:  # no pair can ever be made
            self.parent.end(None, from_other=True)
