"""Hostile input and random operation (PROTOCOL.md §10): events or our protocol error, never a hang."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rstreams.errors import LocalProtocolError, RemoteProtocolError
from rstreams.wire import (
    Cancel,
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    Event,
    OnComplete,
    OnNext,
    OnSubscribe,
    Request,
    Side,
    StreamState,
    Subscribe,
    encode,
)
from rstreams.wire.frames import Frame
from testkit.wire import ConnectionPair, frames_without_size

SMALL = ConnectionConfig(split_threshold=16, max_element_size=4096, max_reassembly_bytes=8192)


def _run(chunks: list[bytes], side: Side = Side.SERVER) -> list[Event]:
    conn = Connection(side, SMALL)
    events: list[Event] = []
    for chunk in chunks:
        if conn.state is ConnectionState.CLOSED:
            break
        conn.receive_data(chunk)
        events += conn.events_received()
        conn.data_to_send()
    conn.receive_eof()
    events += conn.events_received()
    return events


def _check(events: list[Event]) -> None:
    closed = [e for e in events if isinstance(e, ConnectionClosed)]
    assert len(closed) == 1 and events[-1] is closed[0]
    assert closed[0].error is None or isinstance(closed[0].error, RemoteProtocolError)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from([Side.SERVER, Side.CLIENT]))
def test_random_bytes(data: bytes, side: Side) -> None:
    """Random bytes give valid events then ConnectionClosed, never an exception."""
    _check(_run([data], side))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames_without_size, max_size=12), st.binary(max_size=8), st.data())
def test_random_frames_any_chunking(frames: list[Frame], junk: bytes, data: st.DataObject) -> None:
    """A plausible frame soup behaves the same however it is chunked, and always ends cleanly."""
    raw = encode(ClientHello()) + b"".join(encode(f) for f in frames) + junk
    reference = _run([raw])
    _check(reference)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert _run(chunks) == reference or _same_shape(_run(chunks), reference)


def _same_shape(a: list[Event], b: list[Event]) -> bool:
    """Equal except for the identity of exception objects inside ConnectionClosed/StreamError."""

    def key(e: Event) -> object:
        error = getattr(e, "error", None)
        if isinstance(error, BaseException):
            return (type(e), type(error), str(error))
        return e

    return [key(e) for e in a] == [key(e) for e in b]


class PairMachine(RuleBasedStateMachine):
    """Drives a client/server pair with random legal and illegal calls; checks invariants."""

    def __init__(self) -> None:
        super().__init__()
        self.pair = ConnectionPair(SMALL, SMALL)
        self.received: dict[int, int] = {}

    @rule(sid=st.integers(0, 3), demand=st.sampled_from([0, 1, 5, 2**63 - 1]))
    def subscribe(self, sid: int, demand: int) -> None:
        try:
            self.pair.client.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
        except LocalProtocolError:
            assert sid in self.pair.client.subscriptions(publishing=False)

    @rule(sid=st.integers(0, 3), n=st.integers(1, 2**64))
    def request(self, sid: int, n: int) -> None:
        try:
            self.pair.client.request(sid, n)
        except LocalProtocolError:
            pass

    @rule(sid=st.integers(0, 3))
    def cancel(self, sid: int) -> None:
        try:
            self.pair.client.send(Cancel(subscriber=sid))
        except LocalProtocolError:
            pass

    @rule(sid=st.integers(0, 3), size=st.sampled_from([0, 0, 4]))
    def on_subscribe(self, sid: int, size: int) -> None:
        try:
            self.pair.server.send(OnSubscribe(subscriber=sid, element_size=size))
        except LocalProtocolError:
            pass

    @rule(sid=st.integers(0, 3), element=st.binary(max_size=60))
    def on_next(self, sid: int, element: bytes) -> None:
        try:
            self.pair.server.send(OnNext(subscriber=sid, element=element))
        except LocalProtocolError:
            pass

    @rule(sid=st.integers(0, 3))
    def on_complete(self, sid: int) -> None:
        try:
            self.pair.server.send(OnComplete(subscriber=sid))
        except LocalProtocolError:
            pass

    @precondition(lambda self: self.pair.client.state is ConnectionState.OPEN)
    @rule()
    def pump(self) -> None:
        self.pair.pump()
        for event in self.pair.client.events_received():
            assert not isinstance(event, ConnectionClosed), "legal use must never break the connection"
            if isinstance(event, OnNext):
                self.received[event.subscriber] = self.received.get(event.subscriber, 0) + 1
        for event in self.pair.server.events_received():
            assert not isinstance(event, ConnectionClosed)
            if isinstance(event, Request):
                assert 0 < event.demand < 2**63

    @invariant()
    def demand_never_negative(self) -> None:
        for table in (self.pair.client._subscribing, self.pair.server._publishing):
            for stream in table.values():
                assert 0 <= stream.credit <= 2**63 - 1
                assert stream.state is not StreamState.CLOSED


TestPairMachine = PairMachine.TestCase
TestPairMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
