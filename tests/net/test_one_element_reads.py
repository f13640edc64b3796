"""An element asked for alone on an open stream of an iterable source is pulled in the read that
asked for it (its latency: no wait for the turn's refill), one a read: a read of many such
requests still produces no more than the room under the high-water mark allows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams.wire import OnNext, OnSubscribe, Request, Subscribe
from testkit.net import MemoryPeer, connection, memory_pair, run_virtual

pytestmark = pytest.mark.timeout(30)

SIZE = 16 * 1024
HIGH = 64 * 1024


def test_a_read_of_many_one_element_requests_stays_under_the_high_water_mark() -> None:
    pulled: list[int] = []

    def elements() -> Iterator[bytes]:
        while True:
            pulled.append(1)
            yield b"x" * SIZE

    offer: dict[str, Any] = {"big": lambda params: rstreams.from_iterable(elements())}

    async def main() -> None:
        server = connection(client=False, offer=offer, high_water=HIGH, low_water=HIGH // 4)
        peer = MemoryPeer()
        served, peers = memory_pair(server, peer, high=HIGH, low=HIGH // 4)
        await asyncio.sleep(1.0)
        peer.send(Subscribe(publisher="big", subscriber=1, initial_demand=1))
        await asyncio.sleep(1.0)
        assert len(peer.of(OnSubscribe)) == 1
        assert len(peer.of(OnNext)) == 1
        peers.pause_reading()  # the peer stops reading, and asks for 200 more, one at a time, in one write
        peer.send(*[Request(subscriber=1, demand=1) for _ in range(200)])
        await asyncio.sleep(1.0)
        # the first pulled at once, then what the refill's room allows: about the high-water mark
        assert served.size <= HIGH + 2 * (SIZE + 8)
        assert len(pulled) <= 1 + (HIGH + 2 * SIZE) // SIZE
        peers.resume_reading()
        for _ in range(50):
            await asyncio.sleep(1.0)
        assert len(peer.of(OnNext)) == 201  # every element asked for, once the peer reads

    run_virtual(main)
