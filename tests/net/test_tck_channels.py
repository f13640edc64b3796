"""The TCK's PublisherVerification against both Publishers of a channel (PROTOCOL.md §21).

* the output, ``conn.channel(name, input)``, as the opener sees it: here the server's
  ``echo`` channel returns its input, so the output has as many elements as the input;
* the input, as the serving side's factory receives it (an ordinary Publisher): the
  ``capture`` channel hands it to the test and keeps the output open and silent, so the
  channel lives while the TCK drives its input from its own thread.

A server and a client run on an asyncio loop in a background thread, as in
tests/net/test_tck_remote.py: every subscribe/request/cancel crosses threads.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.net import Connection, Server, connect, serve
from rstreams.tck import PublisherVerification, TestEnvironment

MAX = 2**63 - 1
ENV = {"default_timeout": 2.0, "default_no_signals_timeout": 0.05, "default_poll_timeout": 0.01}

pytestmark = pytest.mark.timeout(300)


def counting(elements: int) -> rstreams.Flow[bytes]:
    """``elements`` 8-byte counters (endless for 2**63-1)."""
    numbers = itertools.count() if elements == MAX else range(elements)
    return rstreams.from_iterable(numbers).map(lambda i: i.to_bytes(8, "big"))


class _Silent(Publisher[bytes], Subscription):
    """An output that stays open and emits nothing (its channel's input lives meanwhile)."""

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class _Open(Subscriber[bytes]):
    """Subscribes to a channel's output and asks for nothing: it only keeps the channel open."""

    def on_subscribe(self, subscription: Subscription) -> None:
        pass

    def on_next(self, item: bytes) -> None:
        pass

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


class _Channels:
    """A loop thread with a server offering ``echo`` and ``capture``, and one client."""

    def __init__(self) -> None:
        self.captured: queue.Queue[Publisher[bytes]] = queue.Queue()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="channel-tck-loop", daemon=True)
        self.thread.start()
        self.server: Server
        self.conn: Connection
        asyncio.run_coroutine_threadsafe(self._open(), self.loop).result(10)

    def _capture(self, source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        self.captured.put(source)
        return _Silent()

    async def _open(self) -> None:
        channels = {"echo": lambda source, params: source, "capture": self._capture}
        self.server = await serve("tcp://127.0.0.1:0", {}, channels=channels)
        self.conn = await connect(self.server.url)

    def input_publisher(self, source: Publisher[bytes]) -> Publisher[bytes]:
        """Open a ``capture`` channel fed by ``source``; the input Publisher its factory received."""
        self.conn.channel("capture", source).subscribe(_Open())
        return self.captured.get(timeout=10)

    def close(self) -> None:
        async def close() -> None:
            await self.conn.aclose()
            await self.server.aclose()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


_shared: list[_Channels] = []


def channels() -> _Channels:
    if not _shared:
        _shared.append(_Channels())
    return _shared[0]


@pytest.fixture(autouse=True, scope="module")
def _close_channels() -> Iterator[None]:
    yield
    for value in _shared:
        value.close()
    _shared.clear()


class TestChannelOutput(PublisherVerification):
    """``conn.channel("echo", input)``: the output Publisher obeys rules 1.1-3.17."""

    def create_publisher(self, elements: int) -> Publisher[Any]:
        return channels().conn.channel("echo", counting(elements))

    def create_failed_publisher(self) -> Publisher[Any]:
        return channels().conn.channel("echo", rstreams.error(RuntimeError("failed on purpose")))

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(**ENV)


class TestChannelInput(PublisherVerification):
    """The input Publisher a channel factory receives obeys rules 1.1-3.17."""

    def create_publisher(self, elements: int) -> Publisher[Any]:
        return channels().input_publisher(counting(elements))

    def create_failed_publisher(self) -> Publisher[Any]:
        return channels().input_publisher(rstreams.error(RuntimeError("failed on purpose")))

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(**ENV)
