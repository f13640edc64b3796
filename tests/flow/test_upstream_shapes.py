"""Every operator under PublisherVerification over three upstream shapes.

Synchronous (an iterable source, which also hands batches to the operators that take
them), threaded (every element from a thread of its own, one ``on_next`` at a time) and
asyncio (an async generator pulled on a loop in another thread).
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import rstreams
from testkit.publishers import ThreadPublisher
from testkit.recording import WAIT

Build = Callable[[rstreams.Flow[int]], rstreams.Flow[Any]]
Upstream = Callable[[int], rstreams.Flow[int]]

# operators that give one element per upstream element (so n in gives n out)
ONE_TO_ONE: dict[str, Build] = {
    "map": lambda f: f.map(lambda x: x + 1),
    "scan": lambda f: f.scan(operator.add, 0),
    "tap": lambda f: f.tap(lambda _: None, on_complete=lambda: None, on_request=lambda _: None),
    "distinct": lambda f: f.distinct(),
    "distinct_until_changed": lambda f: f.distinct_until_changed(),
    "skip_while": lambda f: f.skip_while(lambda x: x < 0),
    "take_while": lambda f: f.take_while(lambda x: x >= 0),
    "filter": lambda f: f.filter(lambda x: x >= 0),
}


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    thread = threading.Thread(target=event_loop.run_forever, name="shapes-loop", daemon=True)
    thread.start()
    yield event_loop
    event_loop.call_soon_threadsafe(event_loop.stop)
    thread.join(WAIT)
    event_loop.close()


def _upstreams(loop: asyncio.AbstractEventLoop) -> dict[str, Upstream]:
    def from_async(n: int) -> rstreams.Flow[int]:
        async def numbers() -> AsyncIterator[int]:
            for i in range(n):
                yield i

        return rstreams.from_async_iterable(numbers, loop=loop)

    return {
        "synchronous": lambda n: rstreams.range(0, n),
        "threaded": lambda n: ThreadPublisher(list(range(n))),
        "asyncio": from_async,
    }


@pytest.mark.parametrize("shape", ["synchronous", "threaded", "asyncio"])
@pytest.mark.parametrize("name", list(ONE_TO_ONE))
def test_operator_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """Rules 1.x-3.x hold whatever thread or loop the upstream signals from."""
    from rstreams.tck import verify_publisher

    upstream = _upstreams(loop)[shape]
    build = ONE_TO_ONE[name]
    report = verify_publisher(
        lambda n: build(upstream(n)),
        create_failed_publisher=lambda: build(rstreams.error(RuntimeError("failed"))),
        max_elements=1000,
    )
    assert report.ok, str(report)
