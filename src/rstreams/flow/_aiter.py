"""``async for x in flow``: a Publisher as an async iterator, with bounded demand.

Theory of operation. Two objects: the :class:`_AsyncFlowIterator` the user holds, and
the :class:`_Receiver` that is the Publisher's Subscriber. The publisher keeps the
receiver alive (it holds the subscription, which holds the subscriber); the receiver
never points back at the iterator. So when the user drops the iterator (``break``, an
exception out of ``async for``), its ``__del__`` runs at once and cancels the
subscription (rule 3.5); ``aclose()`` does the same explicitly.

* Subscription is lazy: the first ``__anext__`` captures the running loop and
  subscribes. ``on_subscribe`` requests ``window`` (rule 2.1); each time the consumer has
  taken ``ceil(window / 2)`` elements, that many are requested again, so outstanding
  demand plus buffered elements never exceed ``window`` (rule 1.1 keeps the publisher
  inside it).
* Signals may come from any thread. ``on_next`` only appends to a deque (thread-safe)
  and, when the consumer is parked on its waiter future, wakes it: directly if the
  signal runs on the loop's thread, with one ``call_soon_threadsafe`` otherwise. There
  is no per-element hop through the loop.
* Lost wake-ups are impossible: the consumer installs its waiter and *then* looks at
  the buffer again; a producer appends and *then* looks for a waiter. One of the two
  sees the other (each step is atomic under the interpreter lock); both may, and waking
  a resolved waiter is a no-op.
* Buffered elements are delivered before a terminal signal; an error is raised from
  ``__anext__`` once, after which the iterator is exhausted.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._sinks import check_publisher, check_window
from rstreams.rules import check_error

__all__ = ["iter_async"]

T = TypeVar("T")


class _Complete:
    """Marks normal completion in ``_Receiver.terminal``."""


_COMPLETE = _Complete()


class _Receiver(Subscriber[T], Generic[T]):
    __slots__ = (
        "buffer",
        "cancelled",
        "half",
        "loop",
        "loop_thread",
        "taken",
        "terminal",
        "upstream",
        "waiter",
        "wake_pending",
        "window",
    )

    def __init__(self, window: int, loop: asyncio.AbstractEventLoop) -> None:
        self.window = window
        self.half = (window + 1) // 2
        self.taken = 0  # elements taken by the consumer since the last request
        self.buffer: deque[T] = deque()
        self.terminal: BaseException | _Complete | None = None
        self.upstream: Subscription | None = None
        self.cancelled = False
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self.waiter: asyncio.Future[None] | None = None
        self.wake_pending = False

    # -- Subscriber (any thread) ---------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return  # rule 2.5
        self.upstream = subscription
        if self.cancelled:
            subscription.cancel()
            return
        subscription.request(self.window)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.cancelled:
            return  # rule 3.12: late elements after a cancel (one that races past is dropped in fill)
        self.buffer.append(item)
        if self.waiter is not None:
            self._wake()

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal of :mod:`rstreams.flow._signals`: ``on_next`` for each, in one step."""
        if self.cancelled:
            return
        self.buffer.extend(items)
        if self.waiter is not None:
            self._wake()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.terminal is None:
            self.terminal = error
            self._wake()

    def on_complete(self) -> None:
        if self.terminal is None:
            self.terminal = _COMPLETE
            self._wake()

    # -- waking the consumer -------------------------------------------------------

    def _wake(self) -> None:
        if self.waiter is None:
            return
        if threading.get_ident() == self.loop_thread:
            self._resolve()
        elif not self.wake_pending:
            self.wake_pending = True
            try:
                self.loop.call_soon_threadsafe(self._resolve)
            except RuntimeError as error:  # the loop is closed: nobody will ever consume
                self._stop()
                report_unhandled(error, "iter_async: waking a consumer whose event loop is closed")

    def _resolve(self) -> None:
        self.wake_pending = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- consumer side (the loop's thread) ----------------------------------------

    def replenish(self) -> None:
        self.taken = 0
        upstream = self.upstream
        if upstream is not None and not self.cancelled and self.terminal is None:
            upstream.request(self.half)

    async def fill(self) -> bool:
        """Wait until the buffer has an element (``True``) or the stream is over (``False``)."""
        while True:
            if self.cancelled:  # closed (a late element may have slipped in: drop it) or exhausted
                self.buffer.clear()
                return False
            terminal = self.terminal  # read before the buffer: see the module docstring
            if self.buffer:
                return True
            if terminal is not None:
                self.cancelled = True  # exhausted: later calls stop at once
                self.upstream = None
                if terminal is _COMPLETE:
                    return False
                assert isinstance(terminal, BaseException)
                raise terminal
            waiter = self.loop.create_future()
            self.waiter = waiter
            if self.buffer or self.terminal is not None:  # a signal raced with us: look again
                self.waiter = None
                continue
            try:
                await waiter
            finally:
                self.waiter = None

    def cancel(self) -> None:
        """Cancel (rule 3.5) and wake a consumer parked in :meth:`fill`; from any thread."""
        self._stop()
        self._wake()

    def _stop(self) -> None:
        self.cancelled = True
        self.buffer.clear()
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()


class _AsyncFlowIterator(AsyncIterator[T], Generic[T]):
    """What ``iter_async`` returns; made by the library only."""

    __slots__ = ("_publisher", "_receiver", "_window")

    def __init__(self, publisher: Publisher[T], window: int) -> None:
        self._publisher: Publisher[T] | None = publisher
        self._window = window
        self._receiver: _Receiver[T] | None = None

    def __aiter__(self) -> _AsyncFlowIterator[T]:
        return self

    async def __anext__(self) -> T:
        receiver = self._receiver
        if receiver is None:
            receiver = self._subscribe()
        buffer = receiver.buffer
        if (not buffer or receiver.cancelled) and not await receiver.fill():
            raise StopAsyncIteration
        item = buffer.popleft()
        receiver.taken += 1
        if receiver.taken >= receiver.half:
            receiver.replenish()
        return item

    def _subscribe(self) -> _Receiver[T]:
        receiver: _Receiver[T] = _Receiver(self._window, asyncio.get_running_loop())
        self._receiver = receiver
        publisher, self._publisher = self._publisher, None
        if publisher is None:  # closed before the first __anext__
            receiver.cancelled = True
        else:
            publisher.subscribe(receiver)
        return receiver

    async def aclose(self) -> None:
        """Cancel the subscription (rule 3.5); the iterator is then exhausted. Idempotent."""
        self.close()

    def close(self) -> None:
        """Like :meth:`aclose`, for synchronous code (safe from any thread)."""
        self._publisher = None
        receiver = self._receiver
        if receiver is not None:
            receiver.cancel()

    def __del__(self) -> None:
        # Leaving ``async for`` early drops the only reference: cancel now, not at GC time.
        receiver = self._receiver
        if receiver is not None and not receiver.cancelled:
            receiver.cancel()


def iter_async(publisher: Publisher[T], *, window: int = 256) -> AsyncIterator[T]:
    """``publisher`` as an async iterator keeping at most ``window`` elements outstanding.

    Subscribes on the first ``__anext__`` (so it must run inside an event loop). Elements
    may be signalled from any thread. ``ceil(window / 2)`` more are requested each time
    that many have been taken. ``aclose()``, ``break`` or an exception in the ``async for``
    body cancels the subscription; the stream's error is raised from ``__anext__``.
    """
    check_publisher(publisher, "iter_async")
    return _AsyncFlowIterator(publisher, check_window(window, "iter_async"))
