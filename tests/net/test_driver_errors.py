"""The driver under faults: a violation in a read, user code that raises; the connection stays sane."""

from __future__ import annotations

import asyncio

import pytest
from netsupport import WAIT, RecordingHandler, memory_pair

from rstreams.api import Subscriber, Subscription
from rstreams.net import Connection
from rstreams.wire import ClientHello, ConnectionClosed, Side, Subscribe, encode
from rstreams.wire import Connection as Core

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


class Never:
    """A Publisher that subscribes and then sends nothing."""

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        subscriber.on_subscribe(_Idle())


class _Idle(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


def goodbye_in(data: bytes) -> str:
    """The reason of the goodbye a client core reads in ``data`` (fails if there is none)."""
    core = Core(Side.CLIENT)
    core.receive_data(data)
    closed = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
    assert closed, f"no goodbye in {data.hex(' ')}"
    return closed[0].reason


async def test_violation_after_a_subscribe_in_one_read_still_says_goodbye() -> None:
    """hello + subscribe(1) + subscribe(1) in one read: the goodbye (§5.2) is written, nothing raises."""
    server = Connection(client=False, offer={"never": Never()})
    peer = RecordingHandler()
    memory_pair(server, peer)
    read = b"".join(
        encode(frame)
        for frame in (
            ClientHello(),
            Subscribe(publisher="never", subscriber=1, initial_demand=0),
            Subscribe(publisher="never", subscriber=1, initial_demand=0),
        )
    )
    server.data_received(memoryview(read))
    await asyncio.wait_for(peer.lost, WAIT)
    assert "§5" in goodbye_in(bytes(peer.data))
    assert server.closed
