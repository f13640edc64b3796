"""``first``, ``last`` and ``element_at``: one element of a stream, as a Flow and as a sink.

:class:`ElementFlow` is an operator (``flow.first().map(f)``) and also awaitable like a
sink (``await flow.first()``, ``flow.last().result(timeout)``).

How each treats demand: nothing is asked of the upstream before the downstream's first
``request``. Then ``element_at(i)`` (and ``first()``, which is ``element_at(0)``) asks
for exactly ``i + 1`` elements, and once the ``i``-th arrives cancels the upstream and
completes; ``last()`` asks for everything (``UNBOUNDED``, rule 3.17) and emits the last
element when the upstream completes. A stream that ends too soon gives ``default`` when
one was passed (emitted as soon as there is demand), else
``on_error(NoSuchElementError)``, which needs no demand (rule 1.4). An upstream error goes
on at once; ``last()``'s element is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.errors import ReactiveStreamsError
from rstreams.flow._operator import MISSING, OperatorFlow, OperatorSubscriber
from rstreams.flow._signals import NONE_ITEM
from rstreams.flow._sinks import SinkResult, SinkSubscriber, check_publisher, check_timeout
from rstreams.rules import check_error

__all__ = ["MISSING", "ElementFlow", "NoSuchElementError"]

T = TypeVar("T")


class NoSuchElementError(ReactiveStreamsError, LookupError):
    """``first()``, ``last()`` or ``element_at(i)`` on a stream that ended before that element."""


class ElementFlow(OperatorFlow[T, T], Generic[T]):
    """``source.first()``, ``source.last()``, ``source.element_at(i)``: a Publisher of one element.

    Awaitable, and ``result(timeout)`` blocks, like a sink's :class:`~rstreams.SinkResult`;
    each of those subscribes anew (:class:`rstreams.Flow` offers both on the Flow it wraps
    this in).
    """

    __slots__ = ("default", "index", "name")

    def __init__(self, source: Publisher[T], index: int | None, default: T, name: str) -> None:
        """``index`` ``None`` is ``last()`` (and only that: ``element_at(None)`` is refused)."""
        super().__init__(source)
        if type(index) is not int and not (index is None and name == "last()"):
            raise TypeError(f"element_at(index) needs an int, got {index!r}")
        if index is not None and index < 0:
            raise ValueError(
                f"element_at(index) needs index >= 0, got {index}; the first element is element_at(0)"
            )
        if default is None:
            raise TypeError(f"{name}: default=None is refused; None is never a stream element (rule 2.13)")
        self.index = index  # None: the last element
        self.default = default
        self.name = name

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _ElementSubscriber(downstream, self.index, self.default, self.name)

    def sink(self) -> SinkResult[T]:
        """Subscribe now; the result is the element (or the stream's error)."""
        return _Single[T]().start(check_publisher(self, self.name))

    def result(self, timeout: float | None = None) -> T:
        """Subscribe and block until the element is there (see :meth:`SinkResult.result`).

        Nobody else holds the subscription this makes, so a wait that ends without the
        element (``timeout``, a refusal on a loop's thread, ``KeyboardInterrupt``) cancels it.
        """
        check_timeout(timeout, f"{self.name}.result")
        sink = self.sink()
        try:
            return sink.result(timeout)
        except BaseException as error:
            if sink.done():
                raise  # the stream's own error
            sink.cancel()
            if isinstance(error, TimeoutError):
                raise TimeoutError(
                    f"{self.name}: no element within timeout={timeout:g} s; its subscription was cancelled"
                ) from None
            raise

    def __await__(self) -> Generator[Any, None, T]:
        return self.sink().__await__()


class _ElementSubscriber(OperatorSubscriber[T, T]):
    """``held``: the last element so far (``last()``), then the value waiting for demand."""

    __slots__ = ("default", "held", "index", "lock", "name", "seen", "wanted")

    def __init__(self, downstream: Subscriber[T], index: int | None, default: T, name: str) -> None:
        super().__init__(downstream)
        self.index = index
        self.default = default
        self.name = name
        self.seen = 0
        self.held: Any = MISSING
        self.wanted = False  # the downstream has requested
        self.lock = threading.Lock()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        if self.index is None:
            self.held = item
            return
        if self.seen < self.index:
            self.seen += 1
            return
        self.done = True
        if self.upstream is not None:
            self.upstream.cancel()
        self.downstream.on_next(item)  # demand is there: upstream was asked only after a request
        self.downstream.on_complete()

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: keep the last one, or skip ahead to the wanted index."""
        if self.done:
            return
        if self.index is None:
            self.held = items[-1]
            return
        ahead = self.index - self.seen
        if ahead >= len(items):
            self.seen += len(items)
            return
        self.seen = self.index
        self.on_next(items[ahead])

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        with self.lock:  # what ``request`` reads: nothing goes out after the error (rule 1.7)
            self.done = True
            self.held = MISSING  # ``last()``'s element is dropped
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        value = self.held if self.held is not MISSING else self.default
        if value is MISSING:
            where = "no element" if self.index is None or not self.seen else f"{self.seen} element(s)"
            self.downstream.on_error(
                NoSuchElementError(
                    f"{self.name}: the stream completed with {where}; pass default=... for a value instead"
                )
            )
            return
        with self.lock:
            if not self.wanted:
                self.held = value  # emitted by the first request
                return
            self.held = MISSING
        self.downstream.on_next(value)
        self.downstream.on_complete()

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        with self.lock:
            first = not self.wanted and problem is None
            if problem is None:
                self.wanted = True
            waiting = self.done and self.held is not MISSING
            value, self.held = (self.held, MISSING) if waiting else (MISSING, self.held)
        if value is not MISSING:  # the upstream ended before the downstream asked
            if problem is None:
                self.downstream.on_next(value)
                self.downstream.on_complete()
            else:
                self.downstream.on_error(problem)  # rule 3.9; the upstream is gone
            return
        if self.upstream is None or (self.done and problem is None):
            return
        if problem is not None:
            self.upstream.request(n)  # the upstream signals the rule 3.9 error in order
        elif first:
            self.upstream.request(demand.UNBOUNDED if self.index is None else self.index + 1)


class _Single(SinkSubscriber[T, T]):
    """The sink behind :meth:`ElementFlow.result`: the one element an ElementFlow emits."""

    __slots__ = ("_item",)

    def __init__(self) -> None:
        super().__init__()
        self._item: Any = MISSING

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        self._item = item

    def value(self) -> T:
        return self._item  # type: ignore[no-any-return]
