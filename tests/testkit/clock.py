"""A virtual clock for the time-based building blocks: time moves only when the test says.

:class:`VirtualLoop` is the part of an asyncio event loop that clocks use (``time``,
``call_at``, ``call_later``, ``call_soon``, ``call_soon_threadsafe``); ``advance(seconds)``
runs every callback due within that time, in order. Pass it where a ``loop=`` is taken
(cast to ``asyncio.AbstractEventLoop``): no real sleeps, fully deterministic.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, cast

import rstreams
from rstreams.api import Subscriber
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber


class _Handle:
    __slots__ = ("args", "callback", "cancelled", "seq", "when")

    def __init__(self, when: float, seq: int, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.when, self.seq, self.callback, self.args = when, seq, callback, args
        self.cancelled = False

    def __lt__(self, other: _Handle) -> bool:
        return (self.when, self.seq) < (other.when, other.seq)

    def cancel(self) -> None:
        self.cancelled = True


class VirtualLoop:
    """The part of an event loop the clocks use, with time that moves only in ``advance``."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[_Handle] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> _Handle:
        handle = _Handle(when, next(self._seq), callback, args)
        with self._lock:
            heapq.heappush(self._heap, handle)
        return handle

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> _Handle:
        return self.call_at(self.now + delay, callback, *args)

    def call_soon(self, callback: Callable[..., object], *args: Any) -> _Handle:
        return self.call_at(self.now, callback, *args)

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: Any) -> _Handle:
        return self.call_at(self.now, callback, *args)

    @property
    def pending(self) -> int:
        return sum(not h.cancelled for h in self._heap)

    def advance(self, seconds: float) -> None:
        """Run every callback due within ``seconds``, in time order, then set the clock."""
        target = self.now + seconds
        while True:
            with self._lock:
                if not self._heap or self._heap[0].when > target:
                    break
                handle = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self.now = max(self.now, handle.when)
            handle.callback(*handle.args)
        self.now = target


class JumpingLoop(asyncio.SelectorEventLoop):
    """A real event loop whose clock :meth:`jump` moves ahead: every timer due by then fires at
    once (for timers of code that asks the running loop, over real sockets)."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0.0
        self.slow_callback_duration = float("inf")  # (-X dev would call a step with a jump in it slow)

    def time(self) -> float:
        return super().time() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


def run_jumping(main: Callable[[JumpingLoop], Coroutine[Any, Any, None]]) -> None:
    """Run ``main(loop)`` to its end on a new :class:`JumpingLoop`."""
    with asyncio.Runner(loop_factory=JumpingLoop) as runner:
        loop = runner.get_loop()
        assert isinstance(loop, JumpingLoop)
        runner.run(main(loop))


def clock_and_loop() -> tuple[VirtualLoop, asyncio.AbstractEventLoop]:
    """A new :class:`VirtualLoop`, and the same object typed as the ``loop=`` operators take."""
    clock = VirtualLoop()
    return clock, cast(asyncio.AbstractEventLoop, clock)


class Stepped(OperatorFlow[int, int]):
    """range(0, n) that moves the virtual clock by ``step`` after each element went on."""

    def __init__(self, n: int, clock: VirtualLoop, step: float) -> None:
        super().__init__(rstreams.range(0, n))
        self.clock, self.step = clock, step

    def subscriber(self, downstream: Subscriber[int]) -> Subscriber[int]:
        return _StepAfter(downstream, self.clock, self.step)


class _StepAfter(OperatorSubscriber[int, int]):
    def __init__(self, downstream: Subscriber[int], clock: VirtualLoop, step: float) -> None:
        super().__init__(downstream)
        self.many = None
        self.clock, self.step = clock, step

    def on_next(self, item: int) -> None:
        if not self.done:
            self.downstream.on_next(item)
            self.clock.advance(self.step)
