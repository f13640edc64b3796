"""Serving replay logs over RS.io: the publisher-name convention and a background server.

Names (docs/replay.md has them with examples, tested); ``NAME`` is a log's name, every answer of a
request/response is one JSON element (UTF-8 bytes):

======================================  ======================================================
``NAME``                                the elements from the oldest held, following the tail
``NAME?from=A&to=B``                    exactly the positions ``[A, B)`` (either bound
                                        optional); ``onError`` naming the position if ``A``
                                        was already trimmed; ``&pack=N``: up to N elements
                                        per wire element (``unpack``)
``NAME?latest``                         ``{"first", "end", "complete", "error"}`` of the log
``NAME?commit=N``                       trim positions ``< N`` (the reader will not ask
                                        again); answers like ``latest``
``NAME?staged=T``                       (sink) waits until the upload ``T`` is complete;
                                        ``{"count"}``
``NAME?publish=B&writer=W&tokens=T,..`` (sink) append the staged uploads to the log as batch
                                        ``B``, once per ``(W, B)``: ``{"published", "count"}``
``NAME?discard=T,..``                   (sink) drop staged uploads (Spark's ``abort``)
======================================  ======================================================

Uploads travel the other way: RS.io is bidirectional, so the server asks each client
for its publisher ``rstreams/upload`` (clients that have none refuse, which ends only
that subscription). An upload's first element is a JSON header ``{"log", "token"}``;
the rest are encoded rows, staged under the token until ``publish`` or ``discard``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Mapping
from typing import Any, Self

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._flow import Flow
from rstreams.flow._iterable import error as error_flow
from rstreams.replay._log import ReplayLog
from rstreams.rules import check_subscriber

__all__ = ["QUERY_KEYS", "UPLOAD_NAME", "ReplayServer", "replay_offer"]

UPLOAD_NAME = "rstreams/upload"
QUERY_KEYS = ("from", "to", "pack", "latest", "commit", "staged", "publish", "writer", "tokens", "discard")
"""Every query parameter a log's name may carry; any other is refused (a typo is not a full read)."""
_UPLOAD_WINDOW = 1024
"""Elements an upload may have in flight to the server; paced by staging."""


class _Answer(Flow[bytes]):
    """One element once ``future`` is done (request/response), then complete."""

    __slots__ = ("_future",)

    def __init__(self, future: concurrent.futures.Future[Any]) -> None:
        self._future = future

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        _AnswerSubscription(self._future, subscriber).start()


class _AnswerSubscription(Subscription):
    def __init__(self, future: concurrent.futures.Future[Any], subscriber: Subscriber[bytes]) -> None:
        self._future = future
        self._subscriber: Subscriber[bytes] | None = subscriber
        self._lock = threading.Lock()
        self._requested = False

    def start(self) -> None:
        assert self._subscriber is not None
        self._subscriber.on_subscribe(self)
        self._future.add_done_callback(lambda _: self._emit())

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        if problem is not None:
            subscriber, self._subscriber = self._subscriber, None
            if subscriber is not None:
                subscriber.on_error(problem)
            return
        self._requested = True
        self._emit()

    def cancel(self) -> None:
        self._subscriber = None

    def _emit(self) -> None:
        with self._lock:
            if not (self._requested and self._future.done()):
                return
            subscriber, self._subscriber = self._subscriber, None
        if subscriber is None:
            return
        failure = self._future.exception()
        try:
            if failure is not None:
                subscriber.on_error(failure)
            else:
                subscriber.on_next(json.dumps(self._future.result()).encode())
                subscriber.on_complete()
        except Exception as error:
            report_unhandled(error, f"{type(subscriber).__name__} (replay log answer)")


def _answer(value: Any) -> Flow[bytes]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return _Answer(future)


class _Staging:
    """Uploads of one sink log, staged by token until Spark's commit (or abort)."""

    def __init__(self, log: ReplayLog) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._uploads: dict[str, list[bytes]] = {}
        self._done: dict[str, concurrent.futures.Future[int]] = {}
        self._published: set[tuple[str, int]] = set()
        self.refused = 0  # publishes of a batch already published (a re-run batch)

    def future(self, token: str) -> concurrent.futures.Future[int]:
        with self._lock:
            return self._done.setdefault(token, concurrent.futures.Future())

    def begin(self, token: str) -> list[bytes]:
        with self._lock:
            return self._uploads.setdefault(token, [])

    def publish(self, writer: str, batch: int, tokens: list[str]) -> concurrent.futures.Future[Any]:
        """Append the staged rows as one batch, once per ``(writer, batch)``; resolves when appended
        (a bounded sink log may first wait for its readers to commit)."""
        answer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            items: list[bytes] = []
            for token in tokens:
                items.extend(self._uploads.pop(token, []))
                self._done.pop(token, None)
            if (writer, batch) in self._published:
                self.refused += 1
                answer.set_result({"published": False, "count": 0})
                return answer
            self._published.add((writer, batch))
        self.log.append(items, lambda: answer.set_result({"published": True, "count": len(items)}))
        return answer

    def discard(self, tokens: list[str]) -> dict[str, Any]:
        with self._lock:
            for token in tokens:
                self._uploads.pop(token, None)
                self._done.pop(token, None)
        return {"discarded": len(tokens)}


class _UploadSubscriber(Subscriber[bytes]):
    """Takes one client's ``rstreams/upload`` stream into a log's staging area."""

    def __init__(self, stagings: Mapping[str, _Staging]) -> None:
        self._stagings = stagings
        self._subscription: Subscription | None = None
        self._rows: list[bytes] | None = None
        self._future: concurrent.futures.Future[int] | None = None
        self._received = 0

    def on_subscribe(self, subscription: Subscription) -> None:
        if demand.accept_subscription(self._subscription, subscription):
            self._subscription = subscription
            subscription.request(_UPLOAD_WINDOW)

    def on_next(self, item: bytes) -> None:
        self._received += 1
        if self._rows is None:
            header = json.loads(item)
            staging = self._stagings.get(header["log"])
            if staging is None:
                raise LookupError(f"no sink log named {header['log']!r}")
            self._rows = staging.begin(header["token"])
            self._future = staging.future(header["token"])
        else:
            self._rows.append(item)
        if self._received % (_UPLOAD_WINDOW // 2) == 0 and self._subscription is not None:
            self._subscription.request(_UPLOAD_WINDOW // 2)

    def on_error(self, error: BaseException) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_exception(error)

    def on_complete(self) -> None:
        if self._future is not None and not self._future.done() and self._rows is not None:
            self._future.set_result(len(self._rows))


def replay_offer(logs: Mapping[str, ReplayLog], sinks: Mapping[str, ReplayLog] | None = None) -> Any:
    """The offer (a ``(path, params) -> Publisher`` callable) serving ``logs`` by name.

    ``sinks`` are logs that Spark's ``rstreams`` sink writes to (they also serve readers).
    Returns the callable; its ``stagings`` attribute holds the sink staging areas.
    """
    all_logs = {**logs, **(sinks or {})}
    stagings = {name: _Staging(log) for name, log in (sinks or {}).items()}

    def route(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        log = all_logs.get(path)
        if log is None:
            return None
        try:
            return _route(log, stagings.get(path), params)
        except (ValueError, LookupError) as error:
            return error_flow(error)

    route.stagings = stagings  # type: ignore[attr-defined]
    return route


def _route(log: ReplayLog, staging: _Staging | None, params: dict[str, str]) -> Publisher[Any]:
    unknown = sorted(params.keys() - set(QUERY_KEYS))
    if unknown:
        raise ValueError(
            f"log {log.name!r}: unknown parameter {unknown[0]!r}; a log's name takes {', '.join(QUERY_KEYS)}"
        )
    if "latest" in params:
        return _answer(log.info())
    if "commit" in params:
        log.commit(int(params["commit"]))
        return _answer(log.info())
    if staging is None and ({"staged", "publish", "discard"} & params.keys()):
        raise LookupError(f"log {log.name!r} is not a sink log: it takes no uploads")
    if staging is not None:
        if "staged" in params:
            future = staging.future(params["staged"])
            counted: concurrent.futures.Future[Any] = concurrent.futures.Future()
            future.add_done_callback(lambda f: _chain_count(f, counted))
            return _Answer(counted)
        if "publish" in params:
            tokens = [t for t in params.get("tokens", "").split(",") if t]
            return _Answer(staging.publish(params.get("writer", ""), int(params["publish"]), tokens))
        if "discard" in params:
            return _answer(staging.discard([t for t in params["discard"].split(",") if t]))
    start = int(params["from"]) if "from" in params else None
    stop = int(params["to"]) if "to" in params else None
    return log.cursor(start, stop, pack=int(params.get("pack", 0)))


def _chain_count(source: concurrent.futures.Future[int], target: concurrent.futures.Future[Any]) -> None:
    failure = source.exception()
    if failure is not None:
        target.set_exception(failure)
    else:
        target.set_result({"count": source.result()})


class ReplayServer:
    """An RS.io server for replay logs, running its own event loop in a daemon thread.

    ``ReplayServer({"sensors": log}, sinks={"results": out}).start()``; ``.url`` is where
    Spark connects; :meth:`stop` closes it. Also a context manager.
    """

    def __init__(
        self,
        logs: Mapping[str, ReplayLog],
        *,
        sinks: Mapping[str, ReplayLog] | None = None,
        url: str = "tcp://127.0.0.1:0",
        offer: Any = None,
    ) -> None:
        self._route = replay_offer(logs, sinks)
        self._offer = offer if offer is not None else self._route
        self._stagings: Mapping[str, _Staging] = self._route.stagings
        self._bind = url
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="rstreams-replay-server", daemon=True
        )
        self._server: Any = None

    @property
    def url(self) -> str:
        """The URL clients connect to (with the real port)."""
        return str(self._server.url)

    def start(self) -> Self:
        from rstreams.net import serve

        self._thread.start()
        on_connection = self._ask_for_uploads if self._stagings else None
        coro = serve(self._bind, self._offer, on_connection=on_connection)
        self._server = asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)
        return self

    def _ask_for_uploads(self, conn: Any) -> None:
        conn.publisher(UPLOAD_NAME).subscribe(_UploadSubscriber(self._stagings))

    def sink_statistics(self, name: str) -> dict[str, int]:
        """``{"published", "refused"}``: batches published on sink log ``name``, re-runs refused."""
        staging = self._stagings[name]
        return {"published": len(staging._published), "refused": staging.refused}

    def stop(self) -> None:
        """Close every connection and the listening socket; stop the loop thread."""
        if self._server is not None:
            future = asyncio.run_coroutine_threadsafe(self._server.aclose(), self.loop)
            try:
                future.result(10)
            except Exception as error:
                report_unhandled(error, "ReplayServer.stop")
            self._server = None
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
