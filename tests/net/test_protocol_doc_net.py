"""What PROTOCOL.md says of a real server, checked on the wire (the rest: tests/wire/test_protocol_doc.py)."""

from __future__ import annotations

import pytest

from rstreams._cli_publishers import builtin_publishers
from rstreams.net import serve
from rstreams.wire import OnComplete, OnNext, OnSubscribe, Subscribe
from testkit.net import RawPeer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_a_finite_publisher_completes_without_spare_demand() -> None:
    """§6.1: `counter?to=10` with demand 10 sends its 10 elements and onComplete, no request needed."""
    async with await serve("tcp://127.0.0.1:0", builtin_publishers()) as server:
        peer = await RawPeer.open(server.url)
        peer.send(Subscribe(publisher="counter?to=10", subscriber=1, initial_demand=10))
        await peer.read_until(OnComplete)
        signals = [e for e in peer.seen if isinstance(e, OnSubscribe | OnNext | OnComplete)]
        assert signals[0] == OnSubscribe(subscriber=1)
        assert signals[1:] == [
            *(OnNext(subscriber=1, element=str(n).encode()) for n in range(10)),
            OnComplete(subscriber=1),
        ]
        peer.close()
