"""The TCK's SubscriberBlackboxVerification against the serving side's Subscriber.

When the peer subscribes to a name, the server subscribes a ServingStream to the local
Publisher behind it. Here that local Publisher is the TCK's helper publisher: a
capturing publisher in the offer hands each ServingStream to ``create_subscriber``, and
the TCK then subscribes it to its own publisher, which signals from the TCK's threads.
So every signal crosses from a foreign thread to the loop (ServingStream's inbox).

The connection is the real driver over the in-memory transport (as in test_driver.py);
the peer is a client Connection whose subscriber requested unbounded demand, so the
stream's requests upstream are what its refill decides (at most the peer's demand).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rstreams import UNBOUNDED
from rstreams.api import Subscriber
from rstreams.net._serving import ServingStream
from rstreams.tck import TestEnvironment, verify_subscriber_blackbox
from testkit.bound import within
from testkit.net import WAIT, connection, memory_pair
from testkit.recording import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

ENV = {"default_timeout": 2.0, "default_no_signals_timeout": 0.05, "default_poll_timeout": 0.01}


class Capture:
    """A Publisher that subscribes nobody itself: it hands each Subscriber (a ServingStream) over."""

    def __init__(self) -> None:
        self.streams: asyncio.Queue[Subscriber[Any]] = asyncio.Queue()

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.streams.put_nowait(subscriber)  # called by the driver, on the loop's thread


class Peer(RecordingSubscriber[bytes]):
    """The client's subscriber, with unbounded demand; sets ``completed_with_items`` if it gets both."""

    def __init__(self, completed_with_items: asyncio.Event) -> None:
        super().__init__(initial=UNBOUNDED)
        self.completed_with_items = completed_with_items

    def on_complete(self) -> None:  # called on the loop's thread (the client delivers there)
        super().on_complete()
        if self.items:
            self.completed_with_items.set()


async def test_the_serving_subscriber_passes_the_blackbox_tck() -> None:
    loop = asyncio.get_running_loop()
    capture = Capture()
    server = connection(client=False, offer={"tck": capture})
    client = connection(client=True)
    memory_pair(server, client)
    peers: list[Peer] = []
    completed_with_items = asyncio.Event()

    async def open_stream() -> Subscriber[Any]:
        peer = Peer(completed_with_items)
        peers.append(peer)
        client.publisher("tck").subscribe(peer)
        stream = await within(capture.streams.get())
        assert isinstance(stream, ServingStream)
        return stream

    def create_subscriber() -> Subscriber[Any]:
        # called from the TCK's worker threads: the stream is opened on the loop
        return asyncio.run_coroutine_threadsafe(open_stream(), loop).result(WAIT)

    report = await asyncio.to_thread(
        verify_subscriber_blackbox,
        create_subscriber,
        create_element=lambda i: i.to_bytes(8, "big"),
        env=TestEnvironment(**ENV),
    )
    assert report.ok, str(report)
    # the driver stayed sane through it all: the connection is open, and no peer saw a
    # signal it should not have (the TCK's elements reached the peer in order)
    assert not server.closed and not client.closed
    # the 2.1 case's elements and completion went all the way to its peer (bounded wait)
    await within(completed_with_items.wait())
    for peer in peers:
        assert peer.items == [i.to_bytes(8, "big") for i in range(len(peer.items))]
    await client.aclose()
