"""Subscriptions: id spaces, state order, id reuse, cancel acknowledgement, refusals (PROTOCOL.md §5)."""

from __future__ import annotations

import pytest

from rstreams.errors import LocalProtocolError
from rstreams.wire import (
    Cancel,
    ConnectionClosed,
    ConnectionConfig,
    OnComplete,
    OnError,
    OnNext,
    OnSubscribe,
    Request,
    Side,
    StreamState,
    StreamStateError,
    Subscribe,
)
from testkit.wire import ConnectionPair, connected, wire


def test_both_sides_may_use_the_same_id() -> None:
    """Each side's ids are its own namespace (§5.1): client 1 and server 1 are different subscriptions."""
    pair = ConnectionPair()
    pair.client.send(Subscribe(publisher="a", subscriber=1, initial_demand=1))
    pair.server.send(Subscribe(publisher="b", subscriber=1, initial_demand=1))
    client_events, server_events = pair.events()
    assert server_events == [Subscribe(publisher="a", subscriber=1, initial_demand=1)]
    assert client_events == [Subscribe(publisher="b", subscriber=1, initial_demand=1)]
    pair.client.send(OnSubscribe(subscriber=1))
    pair.server.send(OnSubscribe(subscriber=1))
    pair.client.send(OnNext(subscriber=1, element=b"to server"))
    pair.server.send(OnNext(subscriber=1, element=b"to client"))
    client_events, server_events = pair.events()
    assert client_events == [OnSubscribe(subscriber=1), OnNext(subscriber=1, element=b"to client")]
    assert server_events == [OnSubscribe(subscriber=1), OnNext(subscriber=1, element=b"to server")]
    assert pair.client.subscriptions(publishing=True) == {1: StreamState.ACTIVE}
    assert pair.client.subscriptions(publishing=False) == {1: StreamState.ACTIVE}


def _violation(conn_frames: bytes) -> ConnectionClosed:
    client = connected(Side.CLIENT)
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=5))
    client.data_to_send()
    client.receive_data(conn_frames)
    closed = client.events_received()[-1]
    assert isinstance(closed, ConnectionClosed) and closed.error is not None
    return closed


def test_on_next_before_on_subscribe() -> None:
    """onNext in SUBSCRIBED is a connection error (§5.2)."""
    closed = _violation(wire(OnNext(subscriber=1, element=b"x")))
    assert isinstance(closed.error, StreamStateError) and closed.error.subscriber == 1


@pytest.mark.parametrize(
    "frame", [OnNext(subscriber=9, element=b"x"), OnSubscribe(subscriber=9), OnComplete(subscriber=9)]
)
def test_unknown_ids_from_a_publisher(frame: OnNext | OnSubscribe | OnComplete) -> None:
    """Publisher signals for ids we never subscribed with end the connection."""
    closed = _violation(wire(frame))
    assert isinstance(closed.error, StreamStateError) and "unknown subscriber id 9" in str(closed.error)


def test_second_on_subscribe() -> None:
    """onSubscribe twice is a violation."""
    closed = _violation(wire(OnSubscribe(subscriber=1), OnSubscribe(subscriber=1)))
    assert isinstance(closed.error, StreamStateError)


def test_signals_after_terminal() -> None:
    """After onComplete the id is gone: a further onNext is a violation."""
    closed = _violation(
        wire(OnSubscribe(subscriber=1), OnComplete(subscriber=1), OnNext(subscriber=1, element=b""))
    )
    assert isinstance(closed.error, StreamStateError)


def test_request_and_cancel_for_unknown_ids_are_ignored() -> None:
    """They may have crossed our terminal signal (§5.4)."""
    server = connected()
    server.receive_data(wire(Request(subscriber=4, demand=1), Cancel(subscriber=4)))
    assert server.events_received() == []
    assert server.data_to_send() == []


def test_cancel_is_acknowledged_and_late_signals_dropped() -> None:
    """The publisher answers cancel with onComplete; in-flight onNext is dropped quietly (§5.4)."""
    pair = ConnectionPair()
    pair.open(1, demand=10)
    pair.server.send(OnNext(subscriber=1, element=b"in flight"))
    pair.client.send(Cancel(subscriber=1))
    # deliver the client's cancel first, then the server's in-flight element and acknowledgement
    for chunk in pair.client.data_to_send():
        pair.server.receive_data(chunk)
    assert pair.server.events_received() == [Cancel(subscriber=1)]
    assert pair.client.subscriptions(publishing=False) == {1: StreamState.CANCELLED}
    client_events, _ = pair.events()
    assert client_events == []
    assert pair.client.subscriptions(publishing=False) == {}
    # late sends by the publisher's application are dropped, not errors
    pair.server.send(OnNext(subscriber=1, element=b"late"))
    pair.server.send(OnComplete(subscriber=1))
    assert pair.server.data_to_send() == []


def test_a_held_cancel_waits_for_acknowledge_cancel() -> None:
    """With acknowledge_cancels off (a server holding subscribes, §15.3), a cancel leaves the
    subscription CANCELLED and unanswered until the driver acknowledges it."""
    server = connected()
    server.acknowledge_cancels = False
    server.receive_data(
        wire(Subscribe(publisher="p", subscriber=1), Cancel(subscriber=1), Cancel(subscriber=1))
    )
    assert server.events_received()[1:] == [Cancel(subscriber=1), Cancel(subscriber=1)]
    assert server.data_to_send() == []
    assert server.subscriptions(publishing=True) == {1: StreamState.CANCELLED}
    server.receive_data(wire(Request(subscriber=1, demand=3)))  # a no-op after cancel (rule 3.6)
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1)))  # the id is still in use (§5.3)
    assert isinstance(server.error, StreamStateError)
    server.acknowledge_cancel(1)  # ended with the connection: nothing to do


def test_acknowledge_cancel_sends_the_oncomplete_once() -> None:
    server = connected()
    server.acknowledge_cancels = False
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1), Cancel(subscriber=1)))
    server.acknowledge_cancel(1)
    server.acknowledge_cancel(1)
    server.acknowledge_cancel(7)  # not open: nothing
    assert b"".join(server.data_to_send()) == wire(OnComplete(subscriber=1))
    assert server.subscriptions(publishing=True) == {}
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1)))  # the id is free again
    assert server.events_received()[-1] == Subscribe(publisher="p", subscriber=1)


def test_id_reuse_after_terminal_is_fine() -> None:
    """Once onComplete/onError arrived, the id may be reused at once (§5.3)."""
    pair = ConnectionPair()
    pair.open(1)
    pair.server.send(OnError(subscriber=1, error="boom"))
    assert pair.events()[0] == [OnError(subscriber=1, error="boom")]
    pair.open(1, demand=1, name="again")
    pair.server.send(OnNext(subscriber=1, element=b"new"))
    assert pair.events()[0] == [OnNext(subscriber=1, element=b"new")]


def test_id_reuse_before_terminal_is_refused_locally() -> None:
    """After cancel, the id stays in use until the acknowledgement arrives."""
    pair = ConnectionPair()
    pair.open(1)
    pair.client.send(Cancel(subscriber=1))
    with pytest.raises(LocalProtocolError) as info:
        pair.client.send(Subscribe(publisher="p", subscriber=1))
    assert info.value.subscriber == 1
    pair.pump()  # acknowledgement arrives
    pair.client.send(Subscribe(publisher="p", subscriber=1))


def test_id_reuse_before_terminal_is_a_remote_violation() -> None:
    """A subscribe for an id still open at the publisher ends the connection."""
    server = connected()
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1), Subscribe(publisher="p", subscriber=1)))
    events = server.events_received()
    assert isinstance(events[-1], ConnectionClosed) and isinstance(events[-1].error, StreamStateError)


def test_refused_subscription_may_end_without_on_subscribe() -> None:
    """onError straight after subscribe is a refusal."""
    pair = ConnectionPair()
    pair.client.send(Subscribe(publisher="nope", subscriber=1))
    pair.pump()
    pair.server.events_received()
    pair.server.send(OnError(subscriber=1, error="unknown publisher 'nope'"))
    assert pair.events()[0] == [OnError(subscriber=1, error="unknown publisher 'nope'")]


def test_max_subscriptions_refuses_with_on_error() -> None:
    """Beyond max_subscriptions a subscribe is refused; the connection stays (§11)."""
    server = connected(config=ConnectionConfig(max_subscriptions=2))
    server.receive_data(wire(*(Subscribe(publisher="p", subscriber=i) for i in range(3))))
    assert [e.subscriber for e in server.events_received()] == [0, 1]  # type: ignore[union-attr]
    [out] = server.data_to_send()
    assert out[:2] == b"\x0d\x02" and b"max_subscriptions=2 subscriptions" in out


def test_long_publisher_name_is_refused() -> None:
    """Names above max_name_length are refused with onError."""
    server = connected(config=ConnectionConfig(max_name_length=8))
    server.receive_data(wire(Subscribe(publisher="x" * 9, subscriber=1)))
    assert server.events_received() == []
    refusal = "refused: publisher name longer than max_name_length=8 bytes (PROTOCOL.md §11)"
    assert refusal.encode() in server.data_to_send()[0]


def test_limit_refusals_are_checked_in_every_bindings_order() -> None:
    """initialDemand first, then the name's length, then max_subscriptions, with the texts of
    JavaScript's and Java's (js limit-refusals.test.mjs, java LimitRefusalsTest)."""
    server = connected(config=ConnectionConfig(max_name_length=8, max_subscriptions=1))
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1)))
    server.receive_data(wire(Subscribe(publisher="x" * 9, subscriber=2, initial_demand=2**63)))
    server.receive_data(wire(Subscribe(publisher="x" * 9, subscriber=3)))
    server.receive_data(wire(Subscribe(publisher="p", subscriber=4)))
    sent = b"".join(server.data_to_send())
    for text in (
        "rule 3.9: initialDemand 9223372036854775808 is above 2**63 - 1 (PROTOCOL.md §6.2)",
        "refused: publisher name longer than max_name_length=8 bytes (PROTOCOL.md §11)",
        "refused: at most max_subscriptions=1 subscriptions per connection (PROTOCOL.md §11)",
    ):
        assert sent.count(text.encode()) == 1, text


def test_local_misuse_raises_and_changes_nothing() -> None:
    """Sending in the wrong state raises LocalProtocolError with the subscriber id."""
    pair = ConnectionPair()
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnNext(subscriber=1, element=b"x"))  # no such subscription
    with pytest.raises(LocalProtocolError):
        pair.client.send(Request(subscriber=1, demand=1))  # not subscribed
    pair.client.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
    pair.pump()
    pair.server.events_received()
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnNext(subscriber=1, element=b"x"))  # before onSubscribe
    pair.server.send(OnSubscribe(subscriber=1))
    with pytest.raises(LocalProtocolError):
        pair.server.send(OnSubscribe(subscriber=1))
    pair.server.send(OnNext(subscriber=1, element=b"x"))
    assert pair.events()[0] == [OnSubscribe(subscriber=1), OnNext(subscriber=1, element=b"x")]
