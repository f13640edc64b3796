"""``from_async_iterable``: a Flow over an async iterable, pulled on an asyncio event loop.

Each subscription owns one task on the loop that awaits ``__anext__`` only while there is
demand, so an async generator is never advanced beyond what was requested. All signals
are sent from the loop's thread, serially (rule 1.3).

Theory of operation: the subscription's state (demand, the task, the iterator) is touched
only on the loop's thread, so it needs no lock. ``request`` and ``cancel`` called on that
thread act at once; from any other thread they are handed over with
``loop.call_soon_threadsafe``. The task loops ``while demand: on_next(await __anext__())``
with no other await between elements; when demand runs out it awaits a future that the
next ``request`` resolves. ``request`` inside ``on_next`` only adds to the demand the loop
reads next (rule 3.3, no recursion). ``cancel`` cancels the task and ``aclose()``s the
iterator, so an async generator's ``finally`` runs; the subscriber is dropped at once
(rule 3.13).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import (
    AlreadySubscribedError,
    LoopClosedError,
    NoEventLoopError,
    NoneElementError,
    report_unhandled,
)
from rstreams.flow._signals import report_broken, signal_subscribe, signal_terminal
from rstreams.rules import check_subscriber

__all__ = ["AsyncIterableFlow", "from_async_iterable", "on_loop_thread", "resolve_loop"]

T = TypeVar("T")

_TASKS: set[asyncio.Task[None]] = set()
"""Strong references to running pull tasks: the loop itself only keeps weak ones."""


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running on this thread, or ``None``."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the caller runs inside ``loop`` (so it may touch loop-confined state)."""
    return _running_loop() is loop


def resolve_loop(
    loop: asyncio.AbstractEventLoop | None, who: str
) -> asyncio.AbstractEventLoop | RuntimeError:
    """``loop``, else the running loop, else the error to signal through ``on_error``."""
    if loop is not None:
        return loop
    running = _running_loop()
    if running is not None:
        return running
    return NoEventLoopError(
        f"{who}: subscribe() was called outside a running asyncio event loop and no loop= was "
        f"given; pass {who}(..., loop=the_loop) or subscribe from a coroutine on that loop"
    )


LOOP_METHODS = ("time", "call_at", "call_later", "call_soon_threadsafe")
"""What a clock or a backoff uses of its loop (a test's virtual loop provides just these)."""


def check_loop(loop: object, who: str) -> None:
    """Refuse at once a ``loop=`` that is not an event loop, naming ``who`` (``None`` is fine)."""
    if loop is not None and not all(callable(getattr(loop, name, None)) for name in LOOP_METHODS):
        raise TypeError(f"{who}(loop=) needs an asyncio event loop, got {loop!r}")


class AsyncIterableFlow(Publisher[T]):
    """A Publisher over the async iterator that ``factory()`` makes, one per subscription."""

    __slots__ = ("_factory", "_loop")

    def __init__(
        self, factory: Callable[[], AsyncIterator[T]], loop: asyncio.AbstractEventLoop | None
    ) -> None:
        self._factory = factory
        self._loop = loop

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        loop = resolve_loop(self._loop, "from_async_iterable")
        if isinstance(loop, RuntimeError):
            _fail_now(subscriber, loop)
            return
        subscription = _AsyncIterSubscription(subscriber, loop, self._factory)
        if on_loop_thread(loop):
            subscription.start()
            return
        try:
            loop.call_soon_threadsafe(subscription.start)
        except RuntimeError as exc:  # the loop is closed
            closed = LoopClosedError(f"from_async_iterable: cannot use the event loop: {exc}")
            closed.__cause__ = exc
            _fail_now(subscriber, closed)


class _Refused(Subscription):
    """The subscription handed over before an immediate ``on_error``: all calls are no-ops."""

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


def _fail_now(subscriber: Subscriber[Any], error: BaseException) -> None:
    """Rule 1.9 then 1.4: ``on_subscribe`` and ``on_error`` on the caller's thread."""
    if signal_subscribe(subscriber, _Refused()):
        signal_terminal(subscriber, error)


class _AsyncIterSubscription(Subscription, Generic[T]):
    __slots__ = (
        "_factory",
        "_iterator",
        "_loop",
        "_requested",
        "_stopped",
        "_subscriber",
        "_task",
        "_waiter",
    )

    def __init__(
        self,
        subscriber: Subscriber[T],
        loop: asyncio.AbstractEventLoop,
        factory: Callable[[], AsyncIterator[T]],
    ) -> None:
        self._subscriber: Subscriber[T] | None = subscriber
        self._loop = loop
        self._factory = factory
        self._iterator: AsyncIterator[T] | None = None
        self._requested = 0
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None

    # -- Subscription (any thread) -------------------------------------------------

    def request(self, n: int) -> None:
        if self._stopped:
            return  # rule 3.6
        if on_loop_thread(self._loop):
            self._on_request(n)
        else:
            self._hand_over(self._on_request, n)

    def cancel(self) -> None:
        if self._stopped:
            return  # rule 3.7
        self._stopped = True
        self._subscriber = None  # rule 3.13, at once, from whichever thread
        if on_loop_thread(self._loop):
            self._on_cancel()
        else:
            self._hand_over(self._on_cancel)

    def _hand_over(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError as exc:  # the loop is closed: nothing can run any more (3.16: no raise)
            if not self._stopped:
                self._stopped = True
                self._subscriber = None
                report_unhandled(exc, "from_async_iterable: request/cancel after its event loop closed")

    # -- on the loop's thread ------------------------------------------------------

    def start(self) -> None:
        """Signal ``on_subscribe``, then make the iterator; its failure goes to ``on_error``."""
        subscriber = self._subscriber
        assert subscriber is not None
        if not signal_subscribe(subscriber, self):  # rule 2.13
            self._stopped = True
            self._subscriber = None
            return
        if self._stopped:
            return  # cancelled inside on_subscribe: the iterator was never made
        try:
            self._iterator = self._factory()
        except Exception as exc:
            self._end(exc)
            return
        if self._requested:
            self._start_task()

    def _on_request(self, n: int) -> None:
        if self._stopped:
            return
        problem = demand.invalid(n)
        if problem is not None:  # rule 3.9: signal, then stop pulling
            self._end(problem)
            self._on_cancel()
            return
        self._requested = demand.add(self._requested, n)
        if self._iterator is None:
            return  # inside on_subscribe: start() launches the task afterwards
        if self._task is None:
            self._start_task()
        elif self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _on_cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()  # the task aclose()s the iterator on its way out
        self._iterator = None

    def _start_task(self) -> None:
        task = self._loop.create_task(self._pull())
        self._task = task
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)

    def _end(self, error: BaseException | None) -> None:
        """Send the terminal signal once: ``on_complete`` (``None``) or ``on_error``."""
        subscriber = self._subscriber
        self._stopped = True
        self._subscriber = None
        if subscriber is not None:
            signal_terminal(subscriber, error)

    async def _pull(self) -> None:
        """The pulling task: ``async for`` while there is demand, ``aclose`` on the way out.

        Leaving an ``async for`` with ``break`` does not close the iterator, so the task
        breaks out when demand runs out, waits, and enters a new ``async for`` over the same
        iterator; ``async for`` is about twice as fast as awaiting ``__anext__()`` by hand.
        """
        iterator = self._iterator
        assert iterator is not None
        unbounded = demand.UNBOUNDED
        subscriber: Subscriber[T] | None = None
        try:
            while not self._stopped:
                if not self._requested:
                    subscriber = None  # hold no reference while idle (rule 3.13)
                    self._waiter = self._loop.create_future()
                    await self._waiter
                    self._waiter = None
                    continue
                async for item in iterator:  # entered only with demand: never pulls ahead
                    subscriber = self._subscriber
                    if subscriber is None:
                        return  # cancelled while waiting for the element (rule 3.12)
                    if item is None:  # type: ignore[comparison-overlap, unused-ignore]
                        raise NoneElementError(
                            "rule 2.13: the async iterable produced None; None is never an element"
                        )
                    requested = self._requested
                    if requested != unbounded:
                        self._requested = requested - 1
                    try:
                        subscriber.on_next(item)
                    except Exception as exc:  # rule 2.13: consider the subscription cancelled
                        self._stopped = True
                        self._subscriber = None
                        report_broken(exc, subscriber, "on_next")
                        return
                    if not self._requested:
                        break
                else:
                    self._end(None)
                    return
        except asyncio.CancelledError as exc:
            if not self._stopped:  # cancelled by someone else, e.g. the loop shutting down
                error = LoopClosedError(
                    "from_async_iterable: the pulling task was cancelled (loop shutting down?)"
                )
                error.__cause__ = exc
                self._end(error)
            raise
        except Exception as exc:  # the async iterable failed
            self._end(exc)
        finally:
            await _aclose(iterator)


async def _aclose(iterator: AsyncIterator[Any]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception as exc:
        report_unhandled(exc, "from_async_iterable: aclose() of the async iterator")


class _OneShot:
    """``from_async_iterable(an_async_generator)``: the iterator can be consumed once."""

    __slots__ = ("_iterator",)

    def __init__(self, iterator: AsyncIterator[Any]) -> None:
        self._iterator: AsyncIterator[Any] | None = iterator

    def take(self) -> AsyncIterator[Any]:
        iterator, self._iterator = self._iterator, None
        if iterator is None:
            raise AlreadySubscribedError(
                "from_async_iterable() was given an async iterator (an async generator object), "
                "which can be consumed once; it was already subscribed. Pass the async generator "
                "function itself (from_async_iterable(gen), not gen()) for a fresh one per subscription"
            )
        return iterator


def _from_factory(factory: Callable[[], AsyncIterable[T]]) -> Callable[[], AsyncIterator[T]]:
    def make() -> AsyncIterator[T]:
        made: object = factory()
        if not isinstance(made, AsyncIterable):
            if inspect.iscoroutine(made):
                made.close()  # never awaited on purpose; close it so Python does not warn
                raise TypeError(
                    f"from_async_iterable(factory): {factory!r} returned a coroutine, not an async "
                    "iterable; an async generator function uses `yield` in its body"
                )
            raise TypeError(
                f"from_async_iterable(factory): {factory!r} returned {made!r}, not an async iterable"
            )
        return aiter(made)

    return make


def from_async_iterable(
    source: AsyncIterable[T] | Callable[[], AsyncIterable[T]],
    *,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Publisher[T]:
    """The publisher behind :func:`rstreams.from_async_iterable`."""
    if loop is not None and not isinstance(loop, asyncio.AbstractEventLoop):
        raise TypeError(f"from_async_iterable(loop=) needs an asyncio event loop, got {loop!r}")
    if isinstance(source, AsyncIterator):
        once = _OneShot(source)
        return AsyncIterableFlow(once.take, loop)
    if isinstance(source, AsyncIterable):
        iterable = source
        return AsyncIterableFlow(lambda: aiter(iterable), loop)
    if callable(source):
        return AsyncIterableFlow(_from_factory(source), loop)
    raise TypeError(
        f"from_async_iterable() needs an async iterable or a callable returning one, got {source!r}"
    )
