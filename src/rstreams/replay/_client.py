"""Blocking calls to a replay server, over one connection per server kept for the process.

Callers are plain (non-async) Python: ``rstreams publish``, and Spark's connector (the
driver's streaming-source runner, executor workers, and the sink's commit worker). A call
costs a round trip, not a connection: each process runs one event loop in a daemon thread
(made on first use, and again in a forked child) holding one connection per server URL,
opened on first use and reopened when it has ended. Spark's long-lived processes (the
driver's source runner, reused executor workers) therefore connect once, not once or
more per micro-batch. Nothing else lives between calls, so Spark may pickle, fork or
discard the objects that make them.

:func:`stream_range` hands a range over as it arrives, a few wire elements ahead of the
caller (its demand), so an executor decodes and passes on one part while the next is on
the wire; :func:`fetch_range` collects it. Uploads (the sink) use a connection of their
own, because the server subscribes to the uploading connection's publisher.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator
from itertools import chain
from typing import Any, TypeVar

from rstreams.api import Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError
from rstreams.flow._iterable import from_iterable
from rstreams.net import Connection, RemoteStreamError, connect
from rstreams.replay._log import unpack
from rstreams.replay._server import UPLOAD_NAME

__all__ = ["RemoteLogError", "fetch_range", "request_json", "stream_range", "upload"]

PACK = 1024
"""Elements per wire element when fetching ranges (bounded by bytes on the server too)."""
WINDOW = 8
"""Wire elements a range read may have in flight ahead of its caller (each ~256 KiB at most,
or one bigger element)."""

T = TypeVar("T")


class RemoteLogError(ReactiveStreamsError, RuntimeError):
    """The replay log refused a request; the message is the server's."""


class _Client:
    """This process's event loop thread and its connections, one per URL."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._connections: dict[str, Connection] = {}
        threading.Thread(target=self.loop.run_forever, name="rstreams-replay-client", daemon=True).start()

    async def connection(self, url: str, *, fresh: bool = False) -> Connection:
        conn = self._connections.get(url)
        if conn is None or conn.closed or fresh:
            conn = await connect(url)
            self._connections[url] = conn
        return conn

    def call(self, make: Callable[[Connection], Coroutine[Any, Any, T]], url: str, timeout: float) -> T:
        """``await make(conn)`` on the loop, within ``timeout`` s; once more on a fresh
        connection if the kept one had broken (the server restarted, say)."""

        async def attempt() -> T:
            conn = await self.connection(url)
            try:
                return await make(conn)
            except Exception:
                if not conn.closed:
                    raise
            return await make(await self.connection(url, fresh=True))

        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(attempt(), timeout), self.loop)
        try:
            return future.result()
        except RemoteStreamError as error:
            raise RemoteLogError(error.message) from None


_lock = threading.Lock()
_the_client: _Client | None = None


def _client() -> _Client:
    global _the_client
    with _lock:
        if _the_client is None or _the_client.pid != os.getpid():
            _the_client = _Client()
        return _the_client


def request_json(url: str, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """The single JSON answer of publisher ``name`` (``log?latest``, ``log?commit=N``...)."""

    async def ask(conn: Connection) -> bytes:
        data: bytes = await conn.request(name)
        return data

    answer: dict[str, Any] = json.loads(_client().call(ask, url, timeout))
    return answer


class _End:
    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class _Feed(Subscriber[bytes]):
    """One remote range, handed from the loop thread to the caller's thread through a queue."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[bytes | _End] = queue.SimpleQueue()
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(WINDOW)

    def on_next(self, item: bytes) -> None:
        self.queue.put(item)

    def on_error(self, error: BaseException) -> None:
        self.queue.put(_End(error))

    def on_complete(self) -> None:
        self.queue.put(_End(None))


def stream_range(
    url: str, log: str, start: int, end: int, timeout: float = 60.0, *, pack: int = PACK
) -> Iterator[bytes]:
    """The elements at positions ``[start, end)`` of ``log`` as they arrive (see the module docstring).

    Closing the iterator early cancels the remote subscription.

    Raises:
        RemoteLogError: the server refused (for example positions already trimmed).
        RuntimeError: fewer elements than asked for arrived (the log ended early).
        TimeoutError: the range did not arrive within ``timeout`` seconds.
    """
    client = _client()
    name = f"{log}?from={start}&to={end}" + (f"&pack={pack}" if pack else "")
    deadline = time.monotonic() + timeout
    feed = _Feed()

    async def open_range(conn: Connection) -> None:
        conn.publisher(name).subscribe(feed)

    client.call(open_range, url, timeout)
    count = 0  # elements
    taken = 0  # wire elements
    end_signal: _End | None = None
    try:
        while end_signal is None:
            try:
                item = feed.queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(
                    f"replay log {log!r} at {url}: positions [{start}, {end}) did not arrive within "
                    f"{timeout} s ({count} did)"
                ) from None
            if isinstance(item, _End):
                end_signal = item
                break
            taken += 1
            if taken % (WINDOW // 2) == 0 and feed.subscription is not None:
                client.loop.call_soon_threadsafe(feed.subscription.request, WINDOW // 2)
            elements = unpack(item) if pack else [item]
            count += len(elements)
            yield from elements
    finally:
        if end_signal is None and feed.subscription is not None:  # closed early, or failed
            client.loop.call_soon_threadsafe(feed.subscription.cancel)
    if end_signal.error is not None:
        if isinstance(end_signal.error, RemoteStreamError):
            raise RemoteLogError(end_signal.error.message)
        raise end_signal.error
    if count != end - start:
        raise RuntimeError(
            f"replay log {log!r} at {url} ended after {count} of the {end - start} "
            f"elements at positions [{start}, {end})"
        )


def fetch_range(
    url: str, log: str, start: int, end: int, timeout: float = 60.0, *, pack: int = PACK
) -> list[bytes]:
    """Exactly the elements at positions ``[start, end)`` of ``log``, ``pack`` per wire element.

    Raises:
        RemoteLogError: the server refused (for example positions already trimmed).
        RuntimeError: fewer elements than asked for arrived (the log ended early).
        TimeoutError: the range did not arrive within ``timeout`` seconds.
    """
    return list(stream_range(url, log, start, end, timeout, pack=pack))


async def _upload(url: str, log: str, token: str, rows: Iterable[bytes]) -> int:
    header = json.dumps({"log": log, "token": token}).encode()
    elements: Iterator[bytes] = chain([header], rows)
    conn = await connect(url, publishers={UPLOAD_NAME: from_iterable(elements)})
    try:
        answer = json.loads(await conn.request(f"{log}?staged={token}"))
    finally:
        await conn.aclose()
    return int(answer["count"])


def upload(url: str, log: str, token: str, rows: Iterable[bytes], timeout: float = 300.0) -> int:
    """Stage ``rows`` on the server's sink log ``log`` under ``token``; returns how many."""
    try:
        count: int = asyncio.run(asyncio.wait_for(_upload(url, log, token, rows), timeout))
    except RemoteStreamError as error:
        raise RemoteLogError(error.message) from None
    return count
