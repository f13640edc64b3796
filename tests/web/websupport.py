"""Servers for the JavaScript client's tests: a real RS.io WebSocket server and a misbehaving one.

Both run on an event loop in a daemon thread, so a test can hand their URLs to a Node
subprocess (tests/web/js/client.test.mjs reads them from RSIO_URL and RSIO_BAD_URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any, Self

from websockets.exceptions import ConnectionClosed

import rstreams
from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.net import INT64, Connection, serve, with_codec
from rstreams.rules import check_subscriber

IDLE_TIMEOUT = 1.0
"""Seconds the ``idle_url`` server waits for anything from a client before its goodbye (§14.2)."""
BIG = 200_000
"""Bytes of the ``big`` publisher's one element: above the 64 KiB split threshold (§8)."""


class CountingPublisher(Publisher[bytes]):
    """Emits ``element(0)``, ``element(1)``, ... (default ``b"0"``, ``b"1"``, ...) up to ``n``,
    inside ``request``; records the demand it was given.

    ``stats`` holds ``max_outstanding`` (the most demand it ever held at once, i.e. what the
    serving side asked of it, which follows the remote subscriber's demand), ``requested`` and
    ``emitted``.
    """

    def __init__(self, n: int, element: Callable[[int], bytes] = lambda i: str(i).encode()) -> None:
        self.n = n
        self.element = element
        self.stats = {"max_outstanding": 0, "requested": 0, "emitted": 0, "cancelled": False}

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        subscriber.on_subscribe(_Counting(self, subscriber))


class _Counting(Subscription):
    def __init__(self, source: CountingPublisher, subscriber: Subscriber[bytes]) -> None:
        self._source = source
        self._subscriber = subscriber
        self._outstanding = 0
        self._emitting = False
        self._done = False

    def request(self, n: int) -> None:
        stats = self._source.stats
        if demand.invalid(n) is not None or self._done:
            return
        self._outstanding = demand.add(self._outstanding, n)
        stats["requested"] += n
        stats["max_outstanding"] = max(stats["max_outstanding"], self._outstanding)
        if self._emitting:  # rule 3.3: a request from inside on_next is served by the loop below
            return
        self._emitting = True
        while self._outstanding > 0 and not self._done:
            if stats["emitted"] >= self._source.n:
                self._done = True
                self._subscriber.on_complete()
                break
            self._outstanding -= 1
            stats["emitted"] += 1
            self._subscriber.on_next(self._source.element(stats["emitted"] - 1))
        self._emitting = False

    def cancel(self) -> None:
        self._done = True
        self._source.stats["cancelled"] = True


class JsTestServer:
    """The publishers client.test.mjs subscribes to, over ``ws://``, plus a server that breaks §5.2."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="js-test-server", daemon=True)
        self.counted: list[CountingPublisher] = []
        self.refusals: list[str] = []  # what clients answered when this server subscribed to them
        self.bad_received: list[bytes] = []  # what clients sent the misbehaving server
        self.url = ""
        self.bad_url = ""
        self.idle_url = ""  # the same offer; idle timeout 1 s, the server never pings (§14.2)
        self._servers: list[Any] = []

    def offer(self) -> dict[str, Any]:
        def counted(params: dict[str, str]) -> Publisher[bytes]:
            publisher = CountingPublisher(int(params.get("n", "1000")))
            self.counted.append(publisher)
            return publisher

        def counted_stats(params: dict[str, str]) -> Publisher[bytes]:
            return rstreams.just(json.dumps(self.counted[-1].stats).encode())

        def numbers(params: dict[str, str]) -> Publisher[bytes]:
            return rstreams.range(int(params["n"])).map(lambda i: str(i).encode())

        def ints(params: dict[str, str]) -> Publisher[list[int]]:
            n = int(params["n"])
            return rstreams.from_iterable([list(range(i, min(i + 300, n))) for i in range(0, n, 300)])

        return {
            "numbers": numbers,
            "big": rstreams.just(bytes(i & 0xFF for i in range(BIG))),
            "ints": with_codec(ints, INT64, batched=True),
            "counted": counted,
            "counted-stats": counted_stats,
            "fail": rstreams.error(RuntimeError("boom")),
        }

    def _on_connection(self, conn: Connection) -> None:
        """Subscribe to the client's ``rstreams/probe``: a browser client refuses it with onError."""
        server = self

        class Probe(Subscriber[bytes]):
            def on_subscribe(self, subscription: Subscription) -> None:
                subscription.request(1)

            def on_next(self, item: bytes) -> None:
                server.refusals.append(f"unexpected element {item!r}")

            def on_error(self, error: BaseException) -> None:
                server.refusals.append(str(error))

            def on_complete(self) -> None:
                server.refusals.append("unexpected onComplete")

        conn.publisher("rstreams/probe").subscribe(Probe())

    async def _bad(self, ws: Any) -> None:
        """serverHello, then what the path names: ``/5.2`` onNext for subscriber 9, which nobody
        subscribed; ``/4.4`` a keepalive ping, an extension the client never activated."""
        broken = {"/5.2": "0809" + "0178", "/4.4": "80" + "08" + "0102030405060708"}[ws.request.path]
        await ws.send(bytes.fromhex("020000" + broken))
        with contextlib.suppress(ConnectionClosed):  # the client closing is what this provokes
            async for message in ws:
                self.bad_received.append(message)

    async def _start(self) -> None:
        from websockets.asyncio.server import serve as ws_serve

        good = await serve("ws://127.0.0.1:0/rsio", self.offer(), on_connection=self._on_connection)
        bad = await ws_serve(self._bad, "127.0.0.1", 0, subprotocols=["rsio.v0"])  # type: ignore[list-item]
        idle = await serve("ws://127.0.0.1:0/rsio", self.offer(), keepalive=None, idle_timeout=IDLE_TIMEOUT)
        self._servers = [good, bad, idle]
        self.url = good.url
        self.idle_url = idle.url
        self.bad_url = f"ws://127.0.0.1:{bad.sockets[0].getsockname()[1]}/"

    async def _stop(self) -> None:
        good, bad, idle = self._servers
        await good.aclose()
        await idle.aclose()
        bad.close()
        await bad.wait_closed()

    def __enter__(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self

    def __exit__(self, *exc_info: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
