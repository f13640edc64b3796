"""Demand (PROTOCOL.md §6): saturation, invalid requests, elements beyond demand, packed."""

from __future__ import annotations

import re

import pytest

from rstreams.demand import UNBOUNDED
from rstreams.errors import InvalidDemandError, LocalProtocolError
from rstreams.wire import (
    ConnectionClosed,
    DemandExceededError,
    OnError,
    OnNext,
    OnNextPacked,
    OnSubscribe,
    RemoteInvalidDemandError,
    Request,
    Side,
    StreamError,
    Subscribe,
)
from testkit.wire import ConnectionPair, connected, wire


def test_credit_follows_requests_and_elements() -> None:
    """Peer requests add credit; each element sent takes one."""
    pair = ConnectionPair()
    pair.open(1, demand=2)
    pair.client.send(Request(subscriber=1, demand=3))
    pair.pump()
    assert pair.server.events_received() == [Request(subscriber=1, demand=3)]
    assert pair.server.credit(1) == 5
    for i in range(5):
        pair.server.on_next(1, bytes([i]))
    assert pair.server.credit(1) == 0
    with pytest.raises(LocalProtocolError) as info:
        pair.server.on_next(1, b"one too many")
    assert info.value.subscriber == 1
    assert len(pair.events()[0]) == 5


def test_demand_saturates_at_2_63_minus_1() -> None:
    """Sums cap at 2**63-1, which then stays put (§6.1)."""
    pair = ConnectionPair()
    pair.open(1, demand=2**62)
    pair.client.send(Request(subscriber=1, demand=2**62))
    pair.client.send(Request(subscriber=1, demand=5))
    pair.pump()
    assert pair.server.credit(1) == UNBOUNDED
    for _ in range(3):
        pair.server.on_next(1, b"x")
    assert pair.server.credit(1) == UNBOUNDED
    assert len(pair.events()[0]) == 3


def test_local_request_above_unbounded_is_clamped() -> None:
    """request(n > 2**63-1) puts 2**63-1 on the wire."""
    pair = ConnectionPair()
    pair.open(1)
    pair.client.request(1, 2**70)
    pair.pump()
    assert pair.server.events_received() == [Request(subscriber=1, demand=UNBOUNDED)]


@pytest.mark.parametrize("n", [0, -1, 1.0, True])
def test_local_request_must_be_positive(n: object) -> None:
    """request(n) with n not an int above 0 is the local subscriber's rule-3.9 error, worded as
    InvalidDemandError's, and never sent."""
    pair = ConnectionPair()
    pair.open(1)
    said = f"rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got {n!r}"
    with pytest.raises(ValueError, match=re.escape(said)) as raised:
        pair.client.request(1, n)  # type: ignore[arg-type]  # the misuse under test
    assert str(raised.value) == said == str(InvalidDemandError(n))
    assert pair.client.data_to_send() == []


@pytest.mark.parametrize("demand", [0, 2**63, 2**64 - 1])
def test_request_zero_or_negative_is_a_stream_error(demand: int) -> None:
    """request(0) / request(>= 2**63) ends that subscription with onError; the connection lives (§6.2)."""
    server = connected()
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1), Subscribe(publisher="q", subscriber=2)))
    server.events_received()
    server.receive_data(wire(Request(subscriber=1, demand=demand)))
    [event] = server.events_received()
    assert isinstance(event, StreamError) and event.publishing and event.subscriber == 1
    assert isinstance(event.error, RemoteInvalidDemandError)
    [out] = server.data_to_send()
    assert out[:2] == b"\x0d\x01" and b"rule 3.9" in out
    server.receive_data(wire(Request(subscriber=2, demand=1)))
    assert server.events_received() == [Request(subscriber=2, demand=1)]
    server.send(OnNext(subscriber=1, element=b"late"))  # the app raced the error: dropped quietly
    assert server.data_to_send() == []


def test_negative_initial_demand_refuses_the_subscription() -> None:
    """subscribe with initialDemand >= 2**63 is refused with onError."""
    server = connected()
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1, initial_demand=2**63)))
    assert server.events_received() == []
    assert b"rule 3.9" in server.data_to_send()[0]


def test_on_next_beyond_demand_is_a_connection_error() -> None:
    """More elements than requested ends the connection with §6.3."""
    client = connected(Side.CLIENT)
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
    client.data_to_send()
    client.receive_data(
        wire(
            OnSubscribe(subscriber=1), OnNext(subscriber=1, element=b"a"), OnNext(subscriber=1, element=b"b")
        )
    )
    events = client.events_received()
    assert events[:2] == [OnSubscribe(subscriber=1), OnNext(subscriber=1, element=b"a")]
    closed = events[2]
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, DemandExceededError)
    assert b"6.3" in client.data_to_send()[0]


def test_packed_count_over_demand() -> None:
    """onNextPacked with count above the outstanding demand is a violation."""
    client = connected(Side.CLIENT)
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=2))
    client.data_to_send()
    client.receive_data(
        wire(OnSubscribe(subscriber=1, element_size=1), OnNextPacked(subscriber=1, count=3, elements=b"abc"))
    )
    events = client.events_received()
    assert isinstance(events[-1], ConnectionClosed) and isinstance(events[-1].error, DemandExceededError)


def test_packed_within_demand() -> None:
    """onNextPacked consumes count demand at both ends."""
    pair = ConnectionPair()
    pair.open(1, demand=5, element_size=2)
    pair.server.send(OnNextPacked(subscriber=1, count=2, elements=b"aabb"))
    assert pair.server.credit(1) == 3
    pair.server.send(OnNext(subscriber=1, element=b"cc"))
    assert pair.events()[0] == [
        OnNextPacked(subscriber=1, count=2, elements=b"aabb"),
        OnNext(subscriber=1, element=b"cc"),
    ]
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnNextPacked(subscriber=1, count=3, elements=b"xxyyzz"))  # 2 left
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnNextPacked(subscriber=1, count=1, elements=b"xyz"))  # wrong size
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnNext(subscriber=1, element=b"xyz"))  # wrong size


def test_refusal_after_error_event() -> None:
    """OnError as a publisher's terminal reaches the subscriber."""
    pair = ConnectionPair()
    pair.open(1, demand=1)
    pair.server.send(OnError(subscriber=1, error="e"))
    assert pair.events()[0] == [OnError(subscriber=1, error="e")]
