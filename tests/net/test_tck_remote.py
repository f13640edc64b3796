"""The TCK's PublisherVerification against remote publishers seen through a client connection.

A server and a client run on an asyncio loop in a background thread (the TCK itself is
blocking and drives the publisher from its own thread, so every subscribe/request/cancel
crosses threads, as in real use). The same remote publisher is verified over TCP, over
WebSocket and over a resumable TCP session (PROTOCOL.md §16); the built-in ``counter`` that
``rstreams serve URL`` offers is verified the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams._cli_publishers import builtin_publishers
from rstreams.api import Publisher
from rstreams.net import Connection, Server, connect, serve
from rstreams.tck import PublisherVerification, TestEnvironment

MAX = 2**63 - 1
ENV = {"default_timeout": 2.0, "default_no_signals_timeout": 0.05, "default_poll_timeout": 0.01}


def count(params: dict[str, str]) -> rstreams.Flow[bytes]:
    """``count?n=N``: N elements (endless when N is 2**63-1), created lazily."""
    n = int(params["n"])
    numbers = itertools.count() if n == MAX else range(n)
    return rstreams.from_iterable(numbers).map(lambda i: i.to_bytes(8, "big"))


OFFER: dict[str, Any] = {"count": count, "fails": rstreams.error(RuntimeError("failed on purpose"))}


class _Remote:
    """A loop thread with a server and one client connection to it."""

    def __init__(self, url: str, offer: dict[str, Any], resume: bool) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="net-tck-loop", daemon=True)
        self.thread.start()
        self.server: Server
        self.conn: Connection
        asyncio.run_coroutine_threadsafe(self._open(url, offer, resume), self.loop).result(10)

    async def _open(self, url: str, offer: dict[str, Any], resume: bool) -> None:
        self.server = await serve(url, offer, resume=resume)
        self.conn = await connect(self.server.url, resume=resume)

    async def _close(self) -> None:
        await self.conn.aclose()
        await self.server.aclose()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


_remotes: dict[tuple[str, str, bool], _Remote] = {}
OFFERS: dict[str, dict[str, Any]] = {"test": OFFER, "builtin": builtin_publishers("utf8")}


def remote(url: str, offer: str = "test", *, resume: bool = False) -> _Remote:
    key = (url, offer, resume)
    if key not in _remotes:
        _remotes[key] = _Remote(url, OFFERS[offer], resume)
    return _remotes[key]


@pytest.fixture(autouse=True, scope="module")
def _close_remotes() -> Iterator[None]:
    yield
    for value in _remotes.values():
        value.close()
    _remotes.clear()


class TestRemotePublisherOverTcp(PublisherVerification):
    """conn.publisher(name) over TCP loopback obeys rules 1.1-3.17."""

    url = "tcp://127.0.0.1:0"

    def create_publisher(self, elements: int) -> Publisher[Any]:
        return remote(self.url).conn.publisher(f"count?n={elements}")

    def create_failed_publisher(self) -> Publisher[Any]:
        return remote(self.url).conn.publisher("fails")

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(**ENV)


class TestRemotePublisherOverWebSocket(TestRemotePublisherOverTcp):
    """The same over WebSocket."""

    url = "ws://127.0.0.1:0/rs"


class TestRemotePublisherOverResumableTcp(TestRemotePublisherOverTcp):
    """The same over a session with resumption active (its replay buffer and acks in the path)."""

    def create_publisher(self, elements: int) -> Publisher[Any]:
        return remote(self.url, resume=True).conn.publisher(f"count?n={elements}")

    def create_failed_publisher(self) -> Publisher[Any]:
        return remote(self.url, resume=True).conn.publisher("fails")


class TestBuiltinCounter(PublisherVerification):
    """``rstreams serve URL``'s ``counter`` (no ``to``: endless), read over TCP."""

    def create_publisher(self, elements: int) -> Publisher[Any]:
        name = "counter" if elements == MAX else f"counter?to={elements}"
        return remote("tcp://127.0.0.1:0", "builtin").conn.publisher(name)

    def create_failed_publisher(self) -> Publisher[Any]:
        return remote("tcp://127.0.0.1:0", "builtin").conn.publisher("counter?rate=fast")

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(**ENV)


class TestBuiltinSensors(TestBuiltinCounter):
    """``rstreams serve URL``'s ``sensors/{id}``, unpaced (``rate=0``)."""

    def create_publisher(self, elements: int) -> Publisher[Any]:
        name = "sensors/7?rate=0" + ("" if elements == MAX else f"&count={elements}")
        return remote("tcp://127.0.0.1:0", "builtin").conn.publisher(name)

    def create_failed_publisher(self) -> Publisher[Any]:
        return remote("tcp://127.0.0.1:0", "builtin").conn.publisher("sensors/7?rate=fast")
