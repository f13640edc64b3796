"""Tools for the observability tests: a clock the test moves, a subscriber that waits on events."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Self

from rstreams.api import Subscriber, Subscription
from rstreams.net import Server, serve
from testkit import patience
from testkit.bound import Bound

WAIT = 10.0
"""Upper bound for any wait; a correct implementation answers far sooner."""


class Clock:
    """A clock that stands still until the test moves it (the metrics' only time source)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def use_clock(server: Server, clock: Clock) -> None:
    """Make ``server``'s metrics read ``clock`` (before any connection: each copies it)."""
    metrics = server._metrics
    assert metrics is not None, "serve(..., metrics=True) first"
    assert not metrics.connections
    metrics.clock = clock
    metrics.started = clock()


class Waiter(Subscriber[Any]):
    """Starts with ``initial`` demand, requests on command; ``await wait(n)`` for n elements."""

    def __init__(self, initial: int = 0) -> None:
        self.initial = initial
        self.subscription: Subscription | None = None
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self._changed = asyncio.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        if self.initial:
            subscription.request(self.initial)

    def on_next(self, item: Any) -> None:
        self.items.append(item)
        self._changed.set()

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self._changed.set()

    def on_complete(self) -> None:
        self.completed = True
        self._changed.set()

    def request(self, n: int) -> None:
        assert self.subscription is not None
        self.subscription.request(n)

    async def wait(self, count: int = 0, *, done: bool = False) -> None:
        """Until ``count`` elements arrived (and the stream ended, with ``done``)."""
        async with Bound():
            while len(self.items) < count or (done and not (self.completed or self.error)):
                self._changed.clear()
                await self._changed.wait()


class Opened:
    """A publisher factory wrapper: ``await opened.wait(n)`` until ``n`` subscribes reached it."""

    def __init__(self, factory: Any) -> None:
        self._factory = factory
        self.count = 0
        self._changed = asyncio.Event()

    def __call__(self, params: dict[str, str]) -> Any:
        self.count += 1
        self._changed.set()
        return self._factory(params)

    async def wait(self, count: int) -> None:
        async with Bound():
            while self.count < count:
                self._changed.clear()
                await self._changed.wait()


@contextlib.contextmanager
def served(offer: Any, url: str = "tcp://127.0.0.1:0", **options: Any) -> Iterator[str]:
    """``serve(url, offer, **options)`` on a loop in a thread (the test's thread stays free, so a
    command's ``main()`` can run its own loop there); yields the URL served."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    urls: list[str] = []
    stop: list[asyncio.Event] = []

    async def run() -> None:
        server = await serve(url, offer, **options)
        stop.append(asyncio.Event())
        urls.append(server.url)
        ready.set()
        await stop[0].wait()
        await server.aclose()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),))
    thread.start()
    try:
        assert patience.wait(ready, WAIT), "the test server did not start"
        yield urls[0]
    finally:
        if stop:
            loop.call_soon_threadsafe(stop[0].set)
        patience.join(thread, WAIT)
        loop.close()


async def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of one scrape: (name, sorted labels) -> value (the scrape runs off the loop)."""

    def get() -> str:
        status, _, body = patience.urlopen(url)  # (the metrics server: a thread of this process)
        assert status == 200, (status, body)
        return body.decode()

    text = await asyncio.to_thread(get)
    from prometheus_client import parser  # the rstreams[metrics] extra

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in parser.text_string_to_metric_families(text)
        for sample in family.samples
    }


class PseudoTerminal:
    """A pseudo-terminal in this process: ``out`` is a text stream on its terminal end (``isatty()``
    is true), :meth:`read_until` reads what was drawn from the other end (newlines arrive as
    ``\\r\\n``, as a terminal shows them)."""

    def __init__(self) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.out = open(slave, "w", encoding="utf-8")  # noqa: SIM115 (closed by __exit__)
        self.screen = b""

    def read_until(self, text: bytes, times: int = 1) -> bytes:
        """Everything drawn so far, once ``text`` was (``times`` times); fails after :data:`WAIT`
        seconds without it."""
        import os
        import select

        deadline = time.monotonic() + WAIT
        while self.screen.count(text) < times:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} ({times}x) on the screen: {self.screen[-2000:]!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                self.screen += os.read(self.master, 65536)
        return self.screen

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        self.out.close()
        os.close(self.master)
