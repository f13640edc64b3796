"""Sinks: ``collect``, ``reduce``, ``count``, ``for_each``, and the :class:`SinkResult` they return.

A sink is the Subscriber at the end of a chain. It subscribes at once and hands back a
:class:`SinkResult`: a :class:`concurrent.futures.Future` underneath, so the value can be
awaited from any event loop (``await flow.collect()``) or waited for from any thread
(``flow.collect().result(timeout)``). ``SinkResult.cancel()`` cancels the subscription.

Theory of operation: the sink subscribers request :data:`~rstreams.demand.UNBOUNDED`
once in ``on_subscribe`` (rule 3.17), so the source runs at full speed and ``on_next``
is a single line: this is the hot path of every benchmark. ``for_each(window=n)`` keeps
at most ``n`` requested instead and asks for half again when half has arrived.

Rules kept here: at most one subscription (2.5, via :func:`rstreams.demand.accept_subscription`),
``None`` arguments raise ``TypeError`` (2.13), nothing is requested or cancelled from
``on_complete``/``on_error`` (2.3), late signals after a cancel are ignored (3.12), and a
user function that raises cancels the subscription and fails the result with that
exception, never swallowing it.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import operator
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import BlockingInLoopError
from rstreams.flow._operator import refuse_async
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error

__all__ = [
    "SinkResult",
    "SinkSubscriber",
    "check_publisher",
    "check_timeout",
    "check_window",
    "collect",
    "count",
    "for_each",
    "reduce",
]

T = TypeVar("T")
A = TypeVar("A")


class SinkResult(Generic[T]):
    """The outcome of a sink: awaitable, or ``.result(timeout)`` for blocking use.

    Made by the sinks, not by users. Awaiting it from several loops or threads is fine:
    each ``await`` wraps the same :class:`concurrent.futures.Future`. Cancelling the
    awaiting task (or calling :meth:`cancel`) cancels the subscription (rule 3.5).
    """

    __slots__ = ("_future",)

    def __init__(self, future: concurrent.futures.Future[T]) -> None:
        self._future = future

    @property
    def future(self) -> concurrent.futures.Future[T]:
        """The underlying future (for ``concurrent.futures.wait`` and friends)."""
        return self._future

    def result(self, timeout: float | None = None) -> T:
        """Block until the stream ends; return the value or raise the stream's error.

        Raises :class:`TimeoutError` after ``timeout`` seconds (the subscription stays
        active: call :meth:`cancel` to stop it), :class:`concurrent.futures.CancelledError`
        after :meth:`cancel`. On the thread of a running event loop a result that is not
        there yet raises :class:`~rstreams.errors.BlockingInLoopError` (a ``RuntimeError``) at
        once: blocking would stop the very loop the stream may need; ``await`` the result there
        instead.
        """
        check_timeout(timeout, "SinkResult.result")
        future = self._future
        if not future.done() and _loop_running_here():
            raise BlockingInLoopError(
                "SinkResult.result() was called on the thread of a running asyncio event loop "
                "before the stream ended; blocking here would stop that loop. Use "
                "`await flow.collect()` (or `await result`) inside a coroutine instead"
            )
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done():
                raise  # the stream's own error (a StreamTimeoutError, say)
            raise TimeoutError(
                f"the stream did not end within timeout={timeout:g} s; its subscription is still "
                "active: call cancel() to stop it, or result() again to wait on"
            ) from None

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Block until the stream ends; the error it failed with, or ``None``."""
        return self._future.exception(timeout)

    def done(self) -> bool:
        """Whether the stream has ended (completed, failed or been cancelled)."""
        return self._future.done()

    def cancel(self) -> bool:
        """Cancel the subscription; the result then raises ``CancelledError``.

        Returns ``False`` when the stream had already ended. Idempotent (rule 3.7).
        """
        return self._future.cancel()

    def __await__(self) -> Generator[Any, None, T]:
        future = self._future
        if future.done():  # a synchronous source already finished: no trip through the loop
            if future.cancelled():
                raise asyncio.CancelledError("the sink's subscription was cancelled")
            return future.result()
        return (yield from asyncio.wrap_future(future).__await__())

    def __repr__(self) -> str:
        future = self._future
        state = "cancelled" if future.cancelled() else "done" if future.done() else "pending"
        return f"<SinkResult {state}>"


class SinkSubscriber(Subscriber[T], Generic[T, A]):
    """Base of the sink subscribers: demand, terminal signals, the future.

    Subclasses override :meth:`on_next` (keeping its first two lines: the ``None`` check
    of rule 2.13 and the ``done`` check of rule 3.12) and :meth:`value`.
    """

    __slots__ = ("_cancelled", "done", "future", "upstream")

    def __init__(self) -> None:
        self.upstream: Subscription | None = None
        self._cancelled = False
        self.done = False
        self.future: concurrent.futures.Future[A] = concurrent.futures.Future()
        self.future.add_done_callback(self._on_future_done)

    def start(self, publisher: Publisher[T]) -> SinkResult[A]:
        """Subscribe to ``publisher`` and return the result handle."""
        publisher.subscribe(self)
        return SinkResult(self.future)

    # -- Subscriber ----------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return  # rule 2.5: a second subscription was cancelled
        self.upstream = subscription
        if self._cancelled:  # SinkResult.cancel() came first
            subscription.cancel()
            return
        subscription.request(self.initial_demand())

    @abc.abstractmethod
    def on_next(self, item: T) -> None:
        """One element: check ``None`` (2.13), ignore after ``done`` (3.12), then fold it in."""

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        self.done = True
        self.upstream = None  # rule 3.13 in reverse: drop what we no longer need
        _settle(self.future, error=error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.upstream = None
        _settle(self.future, value=self.value())

    # -- for subclasses --------------------------------------------------------------

    def initial_demand(self) -> int:
        """What ``on_subscribe`` requests; unbounded unless a subclass windows it."""
        return demand.UNBOUNDED

    @abc.abstractmethod
    def value(self) -> A:
        """The result once the stream completed."""

    def fail(self, error: BaseException) -> None:
        """User code raised inside ``on_next``: cancel upstream, fail the result."""
        if self.done:
            return
        self.done = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()
        _settle(self.future, error=error)

    def _on_future_done(self, future: concurrent.futures.Future[A]) -> None:
        if future.cancelled():  # SinkResult.cancel(), or an awaiting task was cancelled
            self._cancelled = True
            self.done = True
            upstream, self.upstream = self.upstream, None
            if upstream is not None:
                upstream.cancel()


def _loop_running_here() -> bool:
    """Whether this thread is running an asyncio event loop right now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _settle(
    future: concurrent.futures.Future[A], *, value: Any = None, error: BaseException | None = None
) -> None:
    """Complete ``future`` unless it was cancelled meanwhile (a benign race with ``cancel``)."""
    try:
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
    except concurrent.futures.InvalidStateError:
        pass


class _Collect(SinkSubscriber[T, list[T]]):
    __slots__ = ("_items",)

    def __init__(self) -> None:
        super().__init__()
        self._items: list[T] = []

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        self._items.append(item)

    def on_next_many(self, items: list[T]) -> None:
        if not self.done:
            self._items.extend(items)

    def value(self) -> list[T]:
        return self._items


class _Reduce(SinkSubscriber[T, A]):
    __slots__ = ("_acc", "_fn")

    def __init__(self, fn: Callable[[A, T], A], initial: A) -> None:
        super().__init__()
        self._fn = fn
        self._acc = initial

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            self._acc = self._fn(self._acc, item)
        except Exception as error:
            self.fail(error)

    def on_next_many(self, items: list[T]) -> None:
        if self.done:
            return
        fn = self._fn
        acc = self._acc
        try:
            for item in items:
                acc = fn(acc, item)
        except Exception as error:
            self._acc = acc
            self.fail(error)
            return
        self._acc = acc

    def value(self) -> A:
        return self._acc


class _Sum(_Reduce[T, A]):
    """``reduce(operator.add, initial)``: ``acc + item`` inline saves a call per element.

    ``+`` is exactly ``operator.add``: the same types are accepted and the same errors
    raised, and a new accumulator is made each time (never ``+=``, which would change
    the caller's ``initial`` when it is a list).
    """

    __slots__ = ()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            self._acc = self._acc + item  # type: ignore[operator]
        except Exception as error:
            self.fail(error)

    def on_next_many(self, items: list[T]) -> None:
        if self.done:
            return
        acc: Any = self._acc
        try:
            for item in items:
                acc = acc + item
        except Exception as error:
            self._acc = acc
            self.fail(error)
            return
        self._acc = acc


class _Count(SinkSubscriber[object, int]):
    __slots__ = ("_n",)

    def __init__(self) -> None:
        super().__init__()
        self._n = 0

    def on_next(self, item: object) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        self._n += 1

    def on_next_many(self, items: list[object]) -> None:
        if not self.done:
            self._n += len(items)

    def value(self) -> int:
        return self._n


class _ForEach(SinkSubscriber[T, None]):
    """Calls ``fn`` per element; with a window, asks for half of it again when half arrived."""

    __slots__ = ("_fn", "_half", "_received", "_window")

    def __init__(self, fn: Callable[[T], object], window: int | None) -> None:
        super().__init__()
        self._fn = fn
        self._window = window
        self._half = 0 if window is None else (window + 1) // 2
        self._received = 0

    def initial_demand(self) -> int:
        return demand.UNBOUNDED if self._window is None else self._window

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            self._fn(item)
        except Exception as error:
            self.fail(error)
            return
        if self._half:
            self._received += 1
            if self._received == self._half:
                self._received = 0
                upstream = self.upstream
                if upstream is not None:
                    upstream.request(self._half)

    def value(self) -> None:
        return None


def check_publisher(publisher: Publisher[T], where: str) -> Publisher[T]:
    """``publisher`` must have ``subscribe(subscriber)``; ``None`` is refused (rule 1.9's spirit)."""
    if not callable(getattr(publisher, "subscribe", None)):
        raise TypeError(
            f"{where}() needs a Publisher (an object with subscribe(subscriber)), got {publisher!r}"
        )
    return publisher


def check_timeout(timeout: float | None, where: str) -> None:
    """``timeout`` must be ``None`` or a number of seconds >= 0 (``0``: do not wait)."""
    problem = f"{where}(timeout=) needs a number of seconds >= 0 or None, got {timeout!r}"
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(problem)
    if not timeout >= 0:  # also refuses nan
        raise ValueError(problem)


def check_window(window: int, where: str) -> int:
    """``window`` must be a positive int: a consumer's standing demand (rule 3.9 upfront)."""
    if type(window) is not int:
        raise TypeError(f"{where}(window=...) needs an int, got {window!r}")
    if window <= 0:
        raise ValueError(
            f"{where}(window=...) needs an int > 0, got {window!r}; "
            "it is the demand kept outstanding, and rule 3.9 forbids requesting <= 0"
        )
    return window


def collect(publisher: Publisher[T]) -> SinkResult[list[T]]:
    """Subscribe with unbounded demand; the result is every element, in order, in a list."""
    sink: _Collect[T] = _Collect()
    return sink.start(check_publisher(publisher, "collect"))


def reduce(publisher: Publisher[T], fn: Callable[[A, T], A], initial: A) -> SinkResult[A]:
    """Fold the elements with ``fn(accumulator, element)``, starting from ``initial``.

    If ``fn`` raises, the subscription is cancelled and the result fails with that error.
    """
    if not callable(fn):
        raise TypeError(f"reduce(fn, initial) needs a callable fn, got {fn!r}")
    refuse_async("reduce", fn, "fn")
    sink: _Reduce[T, A] = _Sum(fn, initial) if fn is operator.add else _Reduce(fn, initial)
    return sink.start(check_publisher(publisher, "reduce"))


def count(publisher: Publisher[Any]) -> SinkResult[int]:
    """The number of elements, once the stream completes."""
    return _Count().start(check_publisher(publisher, "count"))


def for_each(
    publisher: Publisher[T], on_next: Callable[[T], object], *, window: int | None = None
) -> SinkResult[None]:
    """Call ``on_next`` for every element; the result is ``None`` when the stream completes.

    ``window=None`` requests unbounded demand once (rule 3.17). ``window=n`` keeps at most
    ``n`` elements requested and asks for ``ceil(n / 2)`` more whenever that many arrived,
    so a publisher never holds more than ``n`` of demand. If ``on_next`` raises, the
    subscription is cancelled and the result fails with that error.
    """
    if not callable(on_next):
        raise TypeError(f"for_each(on_next) needs a callable, got {on_next!r}")
    refuse_async("for_each", on_next, "on_next")
    if window is not None:
        check_window(window, "for_each")
    return _ForEach(on_next, window).start(check_publisher(publisher, "for_each"))
