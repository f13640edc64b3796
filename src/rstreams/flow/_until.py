"""``take_until(other)`` and ``skip_until(other)``: a second Publisher opens or closes the stream.

Both subscribe to ``other`` before the downstream gets its ``on_subscribe`` (so a trigger
that ``other`` sends at once comes before any of the source's elements, as in reactor)
and ask it for one element: its first ``on_next`` is the trigger, after which it is
cancelled. ``other`` completing without an element is a trigger too, as in reactor's
``takeUntilOther``/``skipUntilOther`` and RxJava's ``takeUntil``/``skipUntil``: ``other``
has said all it will, so waiting on for an element would wait forever.

* ``take_until(other)``: the source's elements pass (``request(n)`` passes through) until
  the trigger; then the source is cancelled and the stream completes.
* ``skip_until(other)``: the source's elements are dropped until the trigger, each one
  asked for again upstream (like ``filter``); from the trigger on they pass.

An error from ``other`` cancels the source and goes downstream; an error or completion
of the source cancels ``other``. The two upstreams may signal from different threads:
a terminal signal caused by ``other`` while the source's ``on_next`` runs is held and
sent right after it, so the downstream's signals never overlap (rule 1.3).
"""

from __future__ import annotations

from typing import Any, TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.flow._operator import MISSING, OperatorFlow
from rstreams.flow._side import Side, SideOperatorSubscriber
from rstreams.flow._signals import NONE_ITEM, signal_terminal

__all__ = ["SkipUntilFlow", "TakeUntilFlow"]

T = TypeVar("T")


def _check_other(operator: str, other: object) -> Publisher[Any]:
    if not callable(getattr(other, "subscribe", None)):
        raise TypeError(f"{operator}(other) needs a Publisher (an object with subscribe), got {other!r}")
    return other  # type: ignore[return-value]


class TakeUntilFlow(OperatorFlow[T, T]):
    """``source.take_until(other)``; see :meth:`rstreams.Flow.take_until`."""

    __slots__ = ("other",)

    def __init__(self, source: Publisher[T], other: Publisher[Any]) -> None:
        super().__init__(source)
        self.other = _check_other("take_until", other)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _UntilSubscriber(downstream, self.other, take=True)


class SkipUntilFlow(OperatorFlow[T, T]):
    """``source.skip_until(other)``; see :meth:`rstreams.Flow.skip_until`."""

    __slots__ = ("other",)

    def __init__(self, source: Publisher[T], other: Publisher[Any]) -> None:
        super().__init__(source)
        self.other = _check_other("skip_until", other)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _UntilSubscriber(downstream, self.other, take=False)


class _UntilSubscriber(SideOperatorSubscriber[T, T]):
    """The side is a :class:`_Trigger`: ``other``'s first element closes or opens the stream."""

    __slots__ = ("open", "take")

    def __init__(self, downstream: Subscriber[T], other: Publisher[Any], *, take: bool) -> None:
        self.take = take
        self.open = False  # skip_until: the trigger came, elements pass
        super().__init__(downstream, other)

    def make_side(self) -> _Trigger:
        return _Trigger(self)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        with self.lock:
            if self.done:
                return
            self.busy = True
        try:
            if self.take or self.open:
                self.downstream.on_next(item)
            elif self.upstream is not None:
                self.upstream.request(1)  # a dropped element's demand is not lost
        finally:
            with self.lock:
                self.busy = False
                held, self.held = self.held, MISSING
            if held is not MISSING:  # other ended the stream meanwhile
                signal_terminal(self.downstream, held)

    def triggered(self) -> None:
        """``other``'s first element: close (take_until) or open (skip_until) the stream."""
        if self.take:
            self.end(None, from_other=True)
        else:
            self.open = True


class _Trigger(Side):
    """The Subscriber to ``other``: one element wanted, then cancelled (``stopped``: fired)."""

    __slots__ = ()

    WANTED = 1
    NAME = "take_until/skip_until"
    parent: _UntilSubscriber[Any]

    def on_next(self, item: object) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.stopped:
            return
        self.stop()
        self.parent.triggered()

    def on_complete(self) -> None:
        if self.stopped:
            return
        self.stopped = True  # nothing to cancel: other has ended
        self.parent.triggered()  # no element, still a trigger: take_until completes, skip_until opens
