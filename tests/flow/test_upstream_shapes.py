"""Every operator under PublisherVerification over three upstream shapes.

Synchronous (an iterable source, which also hands batches to the operators that take
them), threaded (every element from a thread of its own, one ``on_next`` at a time) and
asyncio (an async generator pulled on a loop in another thread).
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from testkit.shapes import SHAPES, loop_thread, patient_env, upstreams

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
    with loop_thread("shapes-loop") as event_loop:
        yield event_loop


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", list(ONE_TO_ONE))
def test_operator_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """Rules 1.x-3.x hold whatever thread or loop the upstream signals from."""
    from rstreams.tck import verify_publisher

    upstream = upstreams(loop)[shape]
    build = ONE_TO_ONE[name]
    report = verify_publisher(
        lambda n: build(upstream(n)),
        create_failed_publisher=lambda: build(rstreams.error(RuntimeError("failed"))),
        max_elements=1000,
        env=patient_env(),
    )
    assert report.ok, str(report)
