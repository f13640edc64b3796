"""The same numbers from three upstream shapes, for operator tests that must hold whatever the source.

* ``synchronous``: ``rstreams.range`` (an iterable source, which also hands batches to the
  operators that take them);
* ``threaded``: :class:`~testkit.publishers.ThreadPublisher`, every element from a thread of its
  own, one ``on_next`` at a time (streams of ``THREADED_LIMIT`` or more elements, such as the
  TCK's longest, fall back to the synchronous source);
* ``asyncio``: an async generator pulled on a loop that runs in another thread
  (:func:`loop_thread`).

A TCK run over a real thread or loop takes :func:`patient_env`: the TCK's default signal
timeout (500 ms) is a bound a loaded 2-core CI box can trip before a thread is scheduled.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Final

import rstreams
from rstreams.tck import TestEnvironment
from testkit import patience
from testkit.publishers import ThreadPublisher
from testkit.recording import WAIT

Upstream = Callable[[int], rstreams.Flow[int]]
"""Makes a publisher of ``0, 1, ..., n - 1``."""

SHAPES: Final = ("synchronous", "threaded", "asyncio")
THREADED_LIMIT: Final = 10_000


def patient_env() -> TestEnvironment:
    """A TCK environment for streams signalled from real threads or loops.

    It waits up to :data:`~testkit.recording.WAIT` for each expected signal, a bound only a
    hang trips; the window in which nothing may happen (``default_no_signals_timeout``) keeps
    its default, so every "expect no signal" check watches as long as in any other run.
    """
    return TestEnvironment(default_timeout=WAIT)


@contextmanager
def loop_thread(name: str) -> Iterator[asyncio.AbstractEventLoop]:
    """A new event loop running in a daemon thread called ``name``; stopped, joined and closed after."""
    event_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=event_loop.run_forever, name=name, daemon=True)
    thread.start()
    try:
        yield event_loop
    finally:
        event_loop.call_soon_threadsafe(event_loop.stop)
        patience.join(thread)
        event_loop.close()


def upstreams(loop: asyncio.AbstractEventLoop) -> dict[str, Upstream]:
    """Each shape in :data:`SHAPES` by name; the asyncio one runs its generator on ``loop``."""

    def from_async(n: int) -> rstreams.Flow[int]:
        async def numbers() -> AsyncIterator[int]:
            for i in range(n):
                yield i

        return rstreams.from_async_iterable(numbers, loop=loop)

    def threaded(n: int) -> rstreams.Flow[int]:
        return ThreadPublisher(range(n)) if n < THREADED_LIMIT else rstreams.range(0, n)

    return {"synchronous": lambda n: rstreams.range(0, n), "threaded": threaded, "asyncio": from_async}
