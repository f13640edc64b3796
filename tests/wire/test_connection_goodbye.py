"""Closing (PROTOCOL.md §9): goodbye, simultaneous goodbyes, end of input."""

from __future__ import annotations

import pytest

from rstreams.errors import ConnectionBrokenError, LocalProtocolError
from rstreams.wire import (
    AbruptCloseError,
    ConnectionClosed,
    ConnectionState,
    FrameError,
    Goodbye,
    OnNext,
    Side,
    Subscribe,
)
from testkit.wire import ConnectionPair, connected, wire


def test_goodbye_closes_all_streams_and_is_answered() -> None:
    """Goodbye ends every subscription in both directions; the peer answers (§9.1)."""
    pair = ConnectionPair()
    pair.open(1, demand=5)
    pair.server.send(Subscribe(publisher="back", subscriber=1))
    pair.client.send(Goodbye(reason="done"))
    assert pair.client.state is ConnectionState.CLOSING
    assert pair.client.subscriptions(publishing=False) == {} == pair.client.subscriptions(publishing=True)
    with pytest.raises(LocalProtocolError):
        pair.client.send(Subscribe(publisher="p", subscriber=2))
    client_events, server_events = pair.events()
    assert server_events == [Goodbye(reason="done"), ConnectionClosed(reason="done")]
    assert client_events == [
        Goodbye(reason="goodbye acknowledged"),
        ConnectionClosed(reason="goodbye acknowledged"),
    ]
    assert pair.client.state.name == pair.server.state.name == "CLOSED"
    with pytest.raises(ConnectionBrokenError):
        pair.server.send(OnNext(subscriber=1, element=b"x"))
    with pytest.raises(ConnectionBrokenError):
        pair.client.receive_data(b"\x00")
    pair.client.receive_eof()  # idempotent after close


def test_simultaneous_goodbyes() -> None:
    """Both say goodbye at once: each takes the other's as the answer; no third goodbye (§9.2)."""
    pair = ConnectionPair()
    pair.client.close("c")
    pair.server.close("s")
    c_out, s_out = pair.client.data_to_send(), pair.server.data_to_send()
    for chunk in c_out:
        pair.server.receive_data(chunk)
    for chunk in s_out:
        pair.client.receive_data(chunk)
    assert pair.client.data_to_send() == [] and pair.server.data_to_send() == []
    assert pair.client.events_received() == [Goodbye(reason="s"), ConnectionClosed(reason="s")]
    assert pair.server.events_received() == [Goodbye(reason="c"), ConnectionClosed(reason="c")]


def test_frames_after_our_goodbye_are_discarded() -> None:
    """While CLOSING, anything but goodbye is dropped."""
    client = connected(Side.CLIENT)
    client.close()
    client.data_to_send()
    client.receive_data(wire(OnNext(subscriber=1, element=b"x"), Goodbye(reason="ok")))
    assert client.events_received() == [Goodbye(reason="ok"), ConnectionClosed(reason="ok")]


def test_eof_without_goodbye() -> None:
    """The input ending without goodbye is an abrupt close (§9.3)."""
    server = connected()
    server.receive_eof()
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, AbruptCloseError)
    server.receive_eof()
    assert server.events_received() == []


def test_eof_after_our_goodbye_is_orderly() -> None:
    """A peer that closes after our goodbye without answering is fine."""
    server = connected()
    server.close()
    server.receive_eof()
    assert server.events_received() == [ConnectionClosed()]


def test_truncated_frame_at_eof() -> None:
    """End of input inside a frame is a framing error."""
    server = connected()
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1))[:-1])
    server.receive_eof()
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, FrameError)
    assert b"PROTOCOL.md \xc2\xa79.3" in server.data_to_send()[0]


def test_broken_error_names_the_cause() -> None:
    """After a violation, calls raise ConnectionBrokenError whose __cause__ is the violation."""
    server = connected()
    server.receive_data(b"\x00")
    with pytest.raises(ConnectionBrokenError) as info:
        server.receive_data(b"")
    assert isinstance(info.value.__cause__, FrameError)
