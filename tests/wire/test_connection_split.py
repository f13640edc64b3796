"""Split elements (PROTOCOL.md §8): automatic splitting, joining, interleaving, limits."""

from __future__ import annotations

from rstreams.wire import (
    Cancel,
    ConnectionClosed,
    ConnectionConfig,
    DemandExceededError,
    LimitExceededError,
    OnComplete,
    OnNext,
    OnNextLastPart,
    OnNextPart,
    OnSubscribe,
    Side,
    StreamError,
    StreamStateError,
    Subscribe,
)
from rstreams.wire.connection import Connection
from testkit.wire import ConnectionPair, connected, wire

SMALL = ConnectionConfig(
    split_threshold=10, max_element_size=100, max_reassembly_bytes=150, max_parts_in_flight=2
)


def test_large_elements_are_split_and_joined() -> None:
    """An element above split_threshold goes out as parts and comes back whole."""
    pair = ConnectionPair(SMALL, SMALL)
    pair.open(1, demand=3)
    element = bytes(range(35))
    pair.server.send(OnNext(subscriber=1, element=element))
    raw = b"".join(pair.server.data_to_send())
    assert raw[0] == 0x0A and raw.count(b"\x0a\x01\x00\x0a") == 3 and b"\x0b\x01\x00\x05" in raw
    pair.client.receive_data(raw)
    assert pair.client.events_received() == [OnNext(subscriber=1, element=element)]


def test_parts_of_two_streams_interleave_and_order_is_kept() -> None:
    """Parts go out round-robin across streams; a stream's later frames wait behind its split element."""
    pair = ConnectionPair(SMALL, SMALL)
    pair.open(1, demand=5)
    pair.open(2, demand=5)
    big1, big2 = b"A" * 30, b"B" * 30
    pair.server.send(OnNext(subscriber=1, element=big1))
    pair.server.send(OnNext(subscriber=1, element=b"small after"))
    pair.server.send(OnComplete(subscriber=1))
    pair.server.send(OnNext(subscriber=2, element=big2))
    raw = b"".join(pair.server.data_to_send(limit=25))
    # the first call yields parts of both streams before finishing either
    assert raw.count(b"\x0a\x01") >= 1 and raw.count(b"\x0a\x02") >= 1
    events = []
    pair.client.receive_data(raw)
    events += pair.client.events_received()
    while pair.server.has_data_to_send:
        for chunk in pair.server.data_to_send(limit=25):
            pair.client.receive_data(chunk)
        events += pair.client.events_received()
    stream1 = [e for e in events if getattr(e, "subscriber", None) == 1]
    assert stream1 == [
        OnNext(subscriber=1, element=big1),
        OnNext(subscriber=1, element=b"small after"),
        OnComplete(subscriber=1),
    ]
    assert OnNext(subscriber=2, element=big2) in events


def _client(config: ConnectionConfig = SMALL, streams: int = 1, demand: int = 10) -> Connection:
    client = connected(Side.CLIENT, config)
    for sid in range(1, streams + 1):
        client.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
        client.receive_data(wire(OnSubscribe(subscriber=sid)))
    client.data_to_send()
    client.events_received()
    return client


def test_hand_made_interleaved_parts_across_streams_and_elements() -> None:
    """Parts of different elements and streams may interleave; each element is joined by its own id."""
    client = _client(ConnectionConfig(), streams=2)
    client.receive_data(
        wire(
            OnNextPart(subscriber=1, element_id=0, data=b"a1"),
            OnNextPart(subscriber=2, element_id=0, data=b"b1"),
            OnNextPart(subscriber=1, element_id=1, data=b"c1"),
            OnNextLastPart(subscriber=2, element_id=0, data=b"b2"),
            OnNextLastPart(subscriber=1, element_id=1, data=b"c2"),
            OnNextLastPart(subscriber=1, element_id=0, data=b"a2"),
            OnNextLastPart(subscriber=1, element_id=0, data=b"solo"),
        )
    )
    assert client.events_received() == [
        OnNext(subscriber=2, element=b"b1b2"),
        OnNext(subscriber=1, element=b"c1c2"),
        OnNext(subscriber=1, element=b"a1a2"),
        OnNext(subscriber=1, element=b"solo"),
    ]


def test_part_after_completion() -> None:
    """A part for a completed subscription is a violation."""
    client = _client()
    client.receive_data(wire(OnComplete(subscriber=1), OnNextPart(subscriber=1, element_id=0, data=b"x")))
    events = client.events_received()
    assert events[0] == OnComplete(subscriber=1)
    assert isinstance(events[1], ConnectionClosed) and isinstance(events[1].error, StreamStateError)


def test_on_complete_with_unfinished_element() -> None:
    """onComplete while an element is half received loses it: a violation."""
    client = _client()
    client.receive_data(wire(OnNextPart(subscriber=1, element_id=0, data=b"x"), OnComplete(subscriber=1)))
    [closed] = client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, StreamStateError)


def test_joined_element_above_max_element_size_cancels_that_stream() -> None:
    """A split element growing past max_element_size cancels its subscription only (§8)."""
    client = _client(streams=2)
    parts = [OnNextPart(subscriber=1, element_id=0, data=b"x" * 60) for _ in range(2)]
    client.receive_data(wire(*parts))
    [event] = client.events_received()
    assert isinstance(event, StreamError) and not event.publishing and event.subscriber == 1
    assert isinstance(event.error, LimitExceededError) and event.error.limit == "max_element_size"
    assert client.data_to_send() == [b"\x06\x01"]  # cancel 1
    # late parts of the cancelled stream are dropped; stream 2 still works
    client.receive_data(
        wire(OnNextLastPart(subscriber=1, element_id=0, data=b"x"), OnNext(subscriber=2, element=b"ok"))
    )
    assert client.events_received() == [OnNext(subscriber=2, element=b"ok")]


def test_too_many_parts_in_flight() -> None:
    """More partial elements than max_parts_in_flight ends the connection."""
    client = _client()
    client.receive_data(wire(*(OnNextPart(subscriber=1, element_id=i, data=b"x") for i in range(3))))
    [closed] = client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, LimitExceededError)
    assert closed.error.limit == "max_parts_in_flight"


def test_reassembly_bytes_cap() -> None:
    """Partial elements holding more than max_reassembly_bytes end the connection."""
    client = _client(streams=2)
    client.receive_data(
        wire(
            OnNextPart(subscriber=1, element_id=0, data=b"x" * 80),
            OnNextPart(subscriber=2, element_id=0, data=b"y" * 80),
        )
    )
    [closed] = client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, LimitExceededError)
    assert closed.error.limit == "max_reassembly_bytes"


def test_first_part_takes_demand() -> None:
    """A split element costs one demand, taken at its first part."""
    client = _client(demand=1)
    client.receive_data(
        wire(
            OnNextPart(subscriber=1, element_id=0, data=b"a"),
            OnNextPart(subscriber=1, element_id=1, data=b"b"),
        )
    )
    [closed] = client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, DemandExceededError)


def test_cancel_frees_partial_elements() -> None:
    """Cancelling drops what was buffered for the stream."""
    client = _client()
    client.receive_data(wire(OnNextPart(subscriber=1, element_id=0, data=b"x" * 50)))
    assert client._assembler.held == (1, 50)
    client.request(1, 1)
    client.send(Cancel(subscriber=1))
    assert client._assembler.held == (0, 0)
