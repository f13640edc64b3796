"""The one shape of an operator: :class:`OperatorFlow` and :class:`OperatorSubscriber`.

An operator is a :class:`OperatorFlow`, a plain Publisher (it holds ``source`` and the
checked arguments, and makes one inner subscriber per subscription; it does not know
:class:`~rstreams.Flow`, which wraps it and offers the fluent methods) and an inner subscriber that is both
the upstream's Subscriber and the downstream's Subscription, with three fields:
``downstream``, ``upstream`` and ``done`` (no more upstream signals are taken: the
upstream terminated, or this operator cancelled it). Each signal method follows the same
steps in the same order:

* ``on_subscribe``: accept at most one subscription (2.5), keep it as ``upstream``, hand
  ``self`` downstream, then :meth:`OperatorSubscriber.on_start` (a hook).
* ``on_next``: reject ``None`` (2.13), ignore after ``done`` (late signals after a
  cancel, 3.12), do the operator's work, pass on. User code that raises ends the stream
  through :meth:`OperatorSubscriber.fail`: upstream cancelled, ``on_error`` downstream.
* ``on_error`` / ``on_complete``: reject ``None`` (2.13), ignore after ``done``, mark
  ``done``, pass on once.
* ``request`` / ``cancel``: pass upstream. An illegal ``n`` (3.9) is passed on unchanged,
  so the upstream signals the error in its own serial order; operators that change the
  demand (filter, take, buffer, ...) override ``request`` and keep that rule.

Operators with queues or several upstreams (``concat_map``, ``flat_map``, ``merge``,
``observe_on``) add the drain loop of :mod:`rstreams.flow._drain` to this shape.

Operators may also offer the internal batch signal ``on_next_many(items)`` (see
:mod:`rstreams.flow._signals`) and pass batches on with :meth:`OperatorSubscriber.emit_many`.

Writing a new operator: subclass both, keep the steps (tests/flow/test_operator_guide.py
runs this very example under the TCK)::

    class MapIndexedFlow(OperatorFlow[T, R]):  # from_publisher(MapIndexedFlow(source, fn))
        __slots__ = ("fn",)

        def __init__(self, source: Publisher[T], fn: Callable[[int, T], R]) -> None:
            super().__init__(source)
            self.fn = check_callable("map_indexed", fn)  # bad arguments fail when built

        def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
            return _MapIndexed(downstream, self.fn)

    class _MapIndexed(OperatorSubscriber[T, R]):
        __slots__ = ("fn", "index")

        def __init__(self, downstream: Subscriber[R], fn: Callable[[int, T], R]) -> None:
            super().__init__(downstream)
            self.fn, self.index = fn, 0

        def on_next(self, item: T) -> None:
            if item is None:
                raise TypeError(NONE_ITEM)            # rule 2.13
            if self.done:
                return                                # late, after a cancel (3.12)
            try:
                result = self.fn(self.index, item)
            except Exception as error:
                self.fail(error)                      # cancel upstream, on_error downstream
                return
            self.index += 1
            self.downstream.on_next(result)           # one out per one in: request passes through

An operator that drops elements re-requests them (see ``filter``); one that changes the
count overrides ``request`` (see ``take``, ``buffer``), passing an illegal ``n`` on.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from types import FunctionType
from typing import Any, Generic, TypeVar

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.flow._signals import NextMany, next_many
from rstreams.rules import check_error, check_subscriber

__all__ = ["MISSING", "OperatorFlow", "OperatorSubscriber", "check_callable", "check_count", "refuse_async"]

T = TypeVar("T")
R = TypeVar("R")

MISSING: Any = object()
"""No ``default=`` given (``first``/``last``/``element_at``), or no value held yet."""


def check_callable(operator: str, fn: object, what: str = "fn") -> Callable[..., Any]:
    """``fn`` if callable, else ``TypeError`` naming the operator: ``map(fn) needs a callable``.

    An ``async def`` function (or async generator function) is refused too: rstreams calls
    ``fn`` and uses what it returns at once, so it would get a coroutine nobody awaits
    (``map`` emitting coroutines, ``filter`` keeping everything, ``retry_when`` retrying
    for ever).
    """
    if not callable(fn):
        raise TypeError(f"{operator}({what}) needs a callable, got {fn!r}")
    return refuse_async(operator, fn, what)


def refuse_async(operator: str, fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``fn``, unless it is an async function (see :func:`check_callable`): ``TypeError``."""
    if _is_async(fn):
        raise TypeError(
            f"{operator}({what}) needs a plain function, got the async function {fn!r}: "
            f"{operator} calls it without awaiting, so it would get a coroutine. To await per "
            "element, yield from an async generator `gen(x)` and use "
            "concat_map(lambda x: rstreams.from_async_iterable(gen(x)))"
        )
    return fn


_ASYNC_CODE = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _is_async(fn: object) -> bool:
    """``async def`` or ``async def ... yield``, also behind ``functools.partial`` or ``__call__``."""
    if type(fn) is FunctionType:  # a def or a lambda: one flag test (inspect's walk costs ~1 us)
        return bool(fn.__code__.co_flags & _ASYNC_CODE)
    for candidate in (fn, getattr(fn, "__call__", None)):  # noqa: B004 - the method, not callable()
        if inspect.iscoroutinefunction(candidate) or inspect.isasyncgenfunction(candidate):
            return True
    return False


def check_count(operator: str, n: object, name: str = "n") -> int:
    """``n`` as an int >= 0, else ``TypeError``/``ValueError`` naming the operator."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{operator}({name}) needs an int, got {n!r}")
    if n < 0:
        raise ValueError(f"{operator}({name}) needs {name} >= 0, got {n}; use {operator}(0) for none")
    return n


def check_publishers(operator: str, publishers: tuple[object, ...]) -> None:
    """``TypeError`` naming the operator unless every one of ``publishers`` has ``subscribe``."""
    for publisher in publishers:
        if not callable(getattr(publisher, "subscribe", None)):
            raise TypeError(f"{operator}() needs Publishers (objects with subscribe), got {publisher!r}")


class OperatorFlow(Publisher[R], Generic[T, R]):
    """An operator's Publisher: ``source`` plus checked arguments; one inner subscriber per subscribe."""

    __slots__ = ("source",)

    def __init__(self, source: Publisher[T]) -> None:
        self.source = source

    def subscribe(self, subscriber: Subscriber[R]) -> None:
        self.source.subscribe(self.subscriber(check_subscriber(subscriber)))

    @abc.abstractmethod
    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
        """The inner subscriber that serves ``downstream`` (built per subscription)."""


class OperatorSubscriber(Subscriber[T], Subscription, Generic[T, R]):
    """Base for an operator's inner subscriber; subclasses write ``on_next`` (see the module)."""

    __slots__ = ("done", "downstream", "many", "upstream")

    def __init__(self, downstream: Subscriber[R]) -> None:
        self.downstream = downstream
        self.upstream: Subscription | None = None
        self.done = False
        self.many: NextMany | None = next_many(downstream)
        """``downstream.on_next_many`` when the downstream takes batches."""

    # -- upstream -> this -------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.downstream.on_subscribe(self)
        self.on_start()

    @abc.abstractmethod
    def on_next(self, item: T) -> None:
        """Reject ``None`` (2.13), ignore after ``done`` (3.12), do the work, pass on."""

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        self.done = True
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.downstream.on_complete()

    # -- downstream -> this -----------------------------------------------------------

    def request(self, n: int) -> None:
        if self.upstream is not None:
            self.upstream.request(n)

    def cancel(self) -> None:
        if self.done:
            return  # rule 3.7: already cancelled, or the upstream already ended
        self.done = True
        if self.upstream is not None:
            self.upstream.cancel()

    # -- for subclasses ---------------------------------------------------------------

    def on_start(self) -> None:
        """Called after the downstream's ``on_subscribe`` returned; nothing by default."""

    def fail(self, error: BaseException) -> None:
        """User code in this operator raised: cancel upstream, signal ``error`` downstream once."""
        if self.done:
            return
        self.done = True
        if self.upstream is not None:
            self.upstream.cancel()
        self.downstream.on_error(error)

    def emit_many(self, items: list[R]) -> None:
        """Pass a non-empty batch downstream: one ``on_next_many``, or ``on_next`` per element."""
        many = self.many
        if many is not None:
            many(items)
            return
        on_next = self.downstream.on_next
        for item in items:
            if self.done:
                return  # cancelled from inside on_next (3.12: stop soon)
            on_next(item)
