"""A stream answered from known elements (``just(x)``, ``empty()``) is counted without an observer
when its first refill sends everything (``ConnectionObserver.known_stream_opened``): the numbers a
scrape reads must be exactly those of the same elements served by subscribing, whatever comes
before that refill (a scrape, a request, a cancel, a pause of the socket, the connection's end)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.net import Connection, fixed_size, with_codec
from rstreams.net._serving import FIRST_BATCH
from rstreams.observe import ConnectionObserver, ServerMetrics, StreamObserver
from rstreams.observe._families import families
from rstreams.observe._metrics import Patterns, Traceable
from rstreams.wire import Cancel, OnComplete, Request, Subscribe
from testkit.net import MemoryPeer, connection, memory_pair, pump_of, run_virtual
from testkit.observe import Clock

pytestmark = pytest.mark.timeout(30)

WORDS = (b"a", b"bb", b"ccc")
MANY = tuple(bytes([i]) * i for i in range(1, FIRST_BATCH + 5))


class Spy(ConnectionObserver):
    """Counts the observers made (a stream served in one go makes none)."""

    def __init__(self, server: ServerMetrics) -> None:
        super().__init__(server)
        self.made = 0

    def stream_opened(
        self,
        pattern: str | Patterns,
        name: str,
        sid: int,
        initial_demand: int,
        metadata: Traceable | None = None,
    ) -> StreamObserver:
        self.made += 1
        return super().stream_opened(pattern, name, sid, initial_demand, metadata)


class Served:
    """A server connection counting into its own metrics, a frame-speaking peer, a clock."""

    def __init__(self, offer: dict[str, Any]) -> None:
        self.clock = Clock()
        self.metrics = ServerMetrics(self.clock, version=lambda: "test")
        self.observer = Spy(self.metrics)
        self.metrics.opened(self.observer)
        self.conn: Connection = connection(client=False, offer=offer, observer=self.observer)
        self.conn.add_close_callback(lambda _: self.observer.closed())
        self.peer = MemoryPeer()
        self.snapshots: list[dict[str, Any]] = []

    @property
    def outbox(self) -> Any:
        return pump_of(self.conn).outbox

    def send(self, *frames: Any) -> None:
        self.peer.send(*frames)

    def scrape(self) -> None:
        """What server.metrics() and /metrics would read now."""
        snapshot = self.metrics.snapshot()
        prometheus = [
            (f.name, f.kind, sorted(f.samples)) for f in families(self.metrics.snapshot(streams=False))
        ]
        self.snapshots.append({"snapshot": snapshot, "prometheus": prometheus})

    def hold_refills(self) -> None:
        """The next refills wait (as when the turn's room is used up; the socket is not paused)."""
        self.outbox.writable = False

    def release_refills(self) -> None:
        pump_of(self.conn).resume_writing()


Scenario = Callable[[Served, str], Awaitable[None]]


async def _turns() -> None:
    await asyncio.sleep(1.0)  # virtual time: until the server has answered all it will


async def request_answer(served: Served, name: str) -> None:
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=1))
    await _turns()
    served.scrape()


async def more_demand_than_elements(served: Served, name: str) -> None:
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=5))
    await _turns()
    served.send(Subscribe(publisher=name, subscriber=3, initial_demand=UNBOUNDED))
    await _turns()
    served.scrape()


async def less_demand_than_elements(served: Served, name: str) -> None:
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=1))
    await _turns()
    served.scrape()
    served.send(Request(subscriber=1, demand=5))
    await _turns()
    served.scrape()


async def cancelled_with_its_subscribe(served: Served, name: str) -> None:
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3), Cancel(subscriber=1))
    await _turns()
    served.scrape()


async def requested_with_its_subscribe(served: Served, name: str) -> None:
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3), Request(subscriber=1, demand=2))
    await _turns()
    served.scrape()


async def scraped_before_its_first_refill(served: Served, name: str) -> None:
    served.hold_refills()
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3))
    await _turns()
    served.clock.now += 2.0
    served.scrape()  # open, nothing sent yet
    served.release_refills()
    await _turns()
    served.scrape()


async def cancelled_before_its_first_refill(served: Served, name: str) -> None:
    served.hold_refills()
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3))
    await _turns()
    served.send(Cancel(subscriber=1))
    await _turns()
    served.scrape()
    served.release_refills()
    await _turns()
    served.scrape()


async def requested_before_its_first_refill(served: Served, name: str) -> None:
    served.hold_refills()
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3))
    await _turns()
    served.send(Request(subscriber=1, demand=4))
    await _turns()
    served.scrape()
    served.release_refills()
    await _turns()
    served.scrape()


async def socket_paused_before_its_first_refill(served: Served, name: str) -> None:
    served.hold_refills()
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3))
    await _turns()
    pump = pump_of(served.conn)
    pump.pause_writing()
    served.clock.now += 2.5  # stalled on the socket: it has demand
    served.scrape()
    pump.resume_writing()
    await _turns()
    served.scrape()


async def closed_before_its_first_refill(served: Served, name: str) -> None:
    served.hold_refills()
    served.send(Subscribe(publisher=name, subscriber=1, initial_demand=3))
    await _turns()
    served.clock.now += 1.0
    served.peer.transport.close()
    await _turns()
    assert served.conn.closed
    served.scrape()


SCENARIOS: list[Scenario] = [
    request_answer,
    more_demand_than_elements,
    less_demand_than_elements,
    cancelled_with_its_subscribe,
    requested_with_its_subscribe,
    scraped_before_its_first_refill,
    cancelled_before_its_first_refill,
    requested_before_its_first_refill,
    socket_paused_before_its_first_refill,
    closed_before_its_first_refill,
]

PUBLISHERS = {
    "one": (lambda: rstreams.just(b"12345678"), lambda: rstreams.from_iterable([b"12345678"])),
    "three": (lambda: rstreams.just(*WORDS), lambda: rstreams.from_iterable(list(WORDS))),
    "none": (rstreams.empty, lambda: rstreams.from_iterable([])),
    "many": (
        lambda: rstreams.just(*MANY),
        lambda: rstreams.from_iterable(list(MANY)),
    ),  # a refill's worth and more
    "fixed": (
        lambda: with_codec(rstreams.just(b"1234", b"5678"), fixed_size(4)),
        lambda: with_codec(rstreams.from_iterable([b"1234", b"5678"]), fixed_size(4)),
    ),
}


def _serve(publisher: Any, scenario: Scenario) -> Served:
    """``scenario`` against a server offering ``publisher`` as ``p/{k}`` (asked for as ``p/1``)."""

    async def main() -> Served:
        served = Served({"p/{k}": lambda params: publisher()})
        memory_pair(served.conn, served.peer)
        await _turns()  # both hellos
        await scenario(served, "p/1")
        return served

    return run_virtual(main)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
@pytest.mark.parametrize("publisher", PUBLISHERS, ids=list(PUBLISHERS))
def test_known_elements_count_as_their_subscription_would(publisher: str, scenario: Scenario) -> None:
    known, iterated = PUBLISHERS[publisher]
    served = _serve(known, scenario)
    subscribed = _serve(iterated, scenario)
    assert served.peer.events == subscribed.peer.events  # the same conversation
    assert served.snapshots == subscribed.snapshots
    assert served.snapshots[-1]["snapshot"]["publishers"]["p/{k}"]["subscriptions_total"] >= 1


def test_a_request_answer_makes_no_observer() -> None:
    """The cheap path is the one taken: one element, demand one, nothing before the first refill."""
    served = _serve(PUBLISHERS["one"][0], request_answer)
    assert served.observer.made == 0
    assert served.observer.deferred == {}
    row = served.snapshots[-1]["snapshot"]["publishers"]["p/{k}"]
    assert (row["completed"], row["elements_sent"], row["bytes_sent"], row["demand_granted"]) == (1, 1, 8, 1)
    assert len(served.peer.of(OnComplete)) == 1


def test_a_cancel_before_the_first_refill_counts_as_a_cancel() -> None:
    served = _serve(PUBLISHERS["one"][0], cancelled_before_its_first_refill)
    assert served.observer.made == 1  # the cancel made the observer it ends
    row = served.snapshots[-1]["snapshot"]["publishers"]["p/{k}"]
    assert (row["cancelled"], row["completed"], row["elements_sent"], row["subscriptions_total"]) == (
        1,
        0,
        0,
        1,
    )
    assert row["demand_granted"] == 3


def test_a_request_answer_goes_out_whole_while_counted() -> None:
    """With metrics on, ``just(x)`` asked for with demand 1 is still answered whole at its
    subscribe (``ServingTable._answer``): the next subscribe of the same read follows it."""

    async def two_in_one_read(served: Served, name: str) -> None:
        served.send(
            Subscribe(publisher=name, subscriber=1, initial_demand=1),
            Subscribe(publisher=name, subscriber=3, initial_demand=1),
        )
        await _turns()
        served.scrape()

    served = _serve(PUBLISHERS["one"][0], two_in_one_read)
    kinds = [(type(event).__name__, getattr(event, "subscriber", None)) for event in served.peer.events[1:]]
    assert kinds[:4] == [("OnSubscribe", 1), ("OnNext", 1), ("OnComplete", 1), ("OnSubscribe", 3)]
    assert served.observer.made == 0
    assert served.observer.deferred == {}
    assert pump_of(served.conn).serving.answered.sid == -1  # settled in the turn's flush
    row = served.snapshots[-1]["snapshot"]["publishers"]["p/{k}"]
    assert (row["completed"], row["elements_sent"], row["bytes_sent"], row["demand_granted"]) == (2, 2, 16, 2)
