"""The TCK against the shipped components not already verified beside their own tests.

Each flow module's tests run the TCK on that module's publishers (tests/flow/test_*.py),
the sinks run the blackbox verification in test_subscriber_verification.py and the
MulticastProcessor the processor verification in test_processor_verification.py. This
file covers the rest: the unfused ``map``, fused chains, ``from_publisher`` wrapping a
foreign Publisher, ``from_observable``, and the ``async for`` receiver.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber
from rstreams.demand import UNBOUNDED
from rstreams.flow._aiter import _Receiver
from rstreams.flow._map import MapFlow
from rstreams.tck import TestEnvironment, verify_publisher, verify_subscriber_blackbox
from testkit import patience
from testkit.shapes import patient_env


def _numbers(elements: int) -> rstreams.Flow[int]:
    if elements == UNBOUNDED:
        return rstreams.from_iterable(itertools.count())
    return rstreams.range(elements)


class _Foreign:
    """A Publisher from "another library": only a subscribe method, no Flow behind it."""

    def __init__(self, elements: int) -> None:
        self._elements = elements

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        _numbers(self._elements).subscribe(subscriber)


def _on_the_calling_thread() -> TestEnvironment:
    """The defaults but for the windows in which nothing may happen: 30 ms, not 100. These
    publishers signal on the thread that subscribes or requests, so what a window could see has
    come before it opens; each case's waits for an expected signal keep the default."""
    return TestEnvironment(default_no_signals_timeout=0.03)


def _failed() -> Publisher[int]:
    return rstreams.error(RuntimeError("failed on purpose"))


CASES: dict[str, tuple[Any, Any]] = {
    # MapFlow itself (the fused path never builds one): over a wrapped foreign publisher
    "map_unfused": (lambda n: MapFlow(rstreams.from_publisher(_Foreign(n)), lambda x: x + 1), None),
    "map_filter_fused": (lambda n: _numbers(n).map(lambda x: x * 2).filter(lambda x: x % 2 == 0), _failed),
    "from_publisher": (lambda n: rstreams.from_publisher(_Foreign(n)), None),
    "failed_map": (lambda n: _numbers(n).map(str), lambda: MapFlow(_failed(), str)),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(CASES))
def test_shipped_publisher_passes_the_publisher_verification(name: str) -> None:
    """Every required case passes (optional ones pass or skip for a stated reason)."""
    create, failed = CASES[name]
    report = verify_publisher(create, create_failed_publisher=failed, env=_on_the_calling_thread())
    assert report.ok, f"{name}:\n{report}"
    assert len(report.passed) >= 25


@pytest.mark.timeout(120)
def test_from_observable_passes_the_publisher_verification() -> None:
    """A cold reactivex Observable behind from_observable(capacity=...) obeys the rules.

    An Observable pushes everything at subscribe time, so the stream is bounded by the
    buffer: max_elements caps the cases at what the buffer can hold.
    """
    reactivex = pytest.importorskip("reactivex")

    def create(elements: int) -> rstreams.Flow[int]:
        return rstreams.from_observable(
            reactivex.range(elements), overflow="buffer", capacity=max(elements, 1)
        )

    def failed() -> rstreams.Flow[int]:
        return rstreams.from_observable(reactivex.throw(RuntimeError("failed on purpose")))

    report = verify_publisher(
        create, create_failed_publisher=failed, max_elements=1024, env=_on_the_calling_thread()
    )
    assert report.ok, str(report)


@pytest.fixture
def loop_in_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        patience.join(thread)  # own time: a loaded machine does not fail the stop
        loop.close()


@pytest.mark.timeout(120)
def test_async_for_receiver_passes_the_blackbox_verification(
    loop_in_thread: asyncio.AbstractEventLoop,
) -> None:
    """The subscriber behind `async for` obeys rules 2.x, fed from the TCK's threads."""
    report = verify_subscriber_blackbox(lambda: _Receiver(8, loop_in_thread), env=patient_env())
    assert report.ok, str(report)
