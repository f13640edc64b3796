"""Serving replay logs over RS.io: the publisher-name convention and a background server.

Names (docs/replay.md has them with examples, tested); ``NAME`` is a log's name, every answer of a
request/response is one JSON element (UTF-8 bytes):

======================================  ======================================================
``NAME``                                the elements from the oldest held, following the tail
``NAME?from=A&to=B``                    exactly the positions ``[A, B)`` (either bound
                                        optional); ``onError`` naming the position if ``A``
                                        was already trimmed; ``&pack=N``: up to N elements
                                        per wire element (``unpack``)
``NAME?latest``                         ``{"first", "end", "complete", "error", "epoch"}``
                                        of the log (``epoch``: its incarnation)
``NAME?...&epoch=E``                    any request, only if ``E`` is the log's epoch: else
                                        ``onError`` (``LogEpochError``), nothing done
``NAME?rows=R&from=A``                  ``{"end", "rows"}``: how far a reader at ``A`` may
                                        go with at most ``R`` rows (logs made with ``rows=``)
``NAME?bytes=B&from=A``                 ``{"end", "bytes"}``: the same with at most ``B``
                                        bytes of elements (every log)
``NAME?commit=N``                       the reader will not ask for positions ``< N``
                                        again; answers like ``latest``. ``&reader=R``:
                                        commit as the named reader ``R`` (registering it);
                                        the log trims below the least commit of its readers
``NAME?hold=P&reader=R``                hold the log from ``P`` for the *pending* reader
                                        ``R`` (forgotten unless heard from again within the
                                        log's ``pending_timeout``; its first commit makes it
                                        a committed reader); answers like ``latest`` plus
                                        ``"position"``: ``R``'s position
``NAME?time=MS``                        answers like ``latest`` plus ``"position"``: the first
                                        position held that arrived at ``MS`` (ms since the
                                        epoch) or later (arrival times live in memory)
``NAME?readers``                        ``{"readers": {R: N}, "pending": {R: N},
                                        "expired": {R: N}}``: each reader's position
``NAME?leave=R``                        forget reader ``R``; answers like ``readers``
``NAME?staged=T``                       (sink) waits until the upload ``T`` is complete;
                                        ``{"count"}``
``NAME?publish=B&writer=W&tokens=T,..`` (sink) append the staged uploads to the log as batch
                                        ``B``, once per ``(W, B)``: ``{"published", "count"}``
``NAME?discard=T,..``                   (sink) drop staged uploads (Spark's ``abort``):
                                        ``{"discarded", "epoch"}``; ``&run=R``: a writer's
                                        run ``R`` starts (:meth:`Staging.start`)
``NAME?stage=T``                        (sink) a *channel* (PROTOCOL.md §21.8), not a
                                        publisher: stages its input under ``T``; its output
                                        is ``{"count"}`` once the input completes.
                                        ``&writer=W&batch=B&run=R``: the upload's owner
                                        (:mod:`rstreams.replay._staging`)
``rstreams/logs``                       ``{"logs": [...], "sinks": [...]}``: the names of the
                                        logs served now (sinks among them), sorted; Spark's
                                        source discovers logs by pattern with it
======================================  ======================================================

Uploads go the other way. On a connection with extensions channels and input-parts
(PROTOCOL.md §21) the client opens the channel ``NAME?stage=T`` with the rows as its input
(:func:`_stage_channels`). Without them, a reverse subscription: RS.io is bidirectional, so
the server asks each client for its publisher ``rstreams/upload`` (clients that have none
refuse, which ends only that subscription); that upload's first element is a JSON header
``{"log", "token"}`` (and the owner's fields), and ``NAME?staged=T`` answers once it has
completed. Either way the rows are staged under the token until ``publish`` or ``discard``, or
until the staging area drops them by their owner (:mod:`rstreams.replay._staging`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import ssl as _ssl
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError, report_unhandled
from rstreams.flow._flow import Flow
from rstreams.flow._public import error as error_flow
from rstreams.net._channels import ChannelFactory
from rstreams.net._loop_thread import close_idle, loop_thread
from rstreams.net._server import DEFAULT_HANDSHAKE_TIMEOUT
from rstreams.replay._cursor import LogEpochError, LogLookupError, unpack
from rstreams.replay._log import ReplayLog
from rstreams.replay._staging import (
    STAGING_BYTES,
    STAGING_TTL,
    Owner,
    Staging,
    StagingFullError,
    batch_param,
    check_ttl,
    owner_of,
)
from rstreams.rules import check_subscriber

__all__ = [
    "LOGS_NAME",
    "QUERY_KEYS",
    "UPLOAD_NAME",
    "ReplayServer",
    "replay_offer",
]

UPLOAD_NAME = "rstreams/upload"
LOGS_NAME = "rstreams/logs"
"""The listing of the logs a replay server serves (``{"logs": [...], "sinks": [...]}``)."""
QUERY_KEYS = (
    "from",
    "to",
    "pack",
    "latest",
    "rows",
    "bytes",
    "time",
    "commit",
    "hold",
    "reader",
    "readers",
    "leave",
    "staged",
    "publish",
    "writer",
    "tokens",
    "discard",
    "run",
    "epoch",
)
"""Every query parameter a log's name may carry; any other is refused (a typo is not a full read)."""
_UPLOAD_WINDOW = 1024
"""Elements an upload may have in flight to the server; paced by staging."""
_FLUSH_BYTES = 1024 * 1024
"""Rows received are staged (and checked against the bound) at least every this many bytes,
and at least every half window of elements: large rows (Arrow batches) are not held unchecked."""


class _Answer(Flow[bytes]):
    """One element once ``future`` is done (request/response), then complete; or ``on_error``
    with the future's failure, demand or not (rule 1.4)."""

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
        """Signal the answer once the future is done: its element only after a request, its
        failure at once (rule 1.4: ``on_error`` needs no demand)."""
        future = self._future
        with self._lock:
            if not future.done():
                return
            failure = future.exception()
            if failure is None and not self._requested:
                return
            subscriber, self._subscriber = self._subscriber, None
        if subscriber is None:
            return
        try:
            if failure is not None:
                subscriber.on_error(failure)
            else:
                subscriber.on_next(json.dumps(future.result()).encode())
                subscriber.on_complete()
        except Exception as error:
            report_unhandled(error, f"{type(subscriber).__name__} (replay log answer)")


def _answer(value: Any) -> Flow[bytes]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return _Answer(future)


class LogRequestError(ReactiveStreamsError, ValueError):
    """A request a replay log cannot take (docs/replay.md, *Naming convention*): an unknown
    parameter, a malformed number, a parameter without the one it needs, a channel's name opened
    as a publisher; an upload channel's name with other parameters, or an input element that is
    not packed rows (PROTOCOL.md §21.8); an upload header that is not ``{"log", "token"}``.
    Signalled to that request's subscriber only."""


class ServerNotRunningError(ReactiveStreamsError, RuntimeError):
    """A :class:`ReplayServer` was asked for what only a running server has (``url``,
    ``metrics()``, ``add_metrics()``) before its :meth:`~ReplayServer.start` or after its
    :meth:`~ReplayServer.stop`; the message names the call and how to start the server."""

    def __init__(self, call: str) -> None:
        super().__init__(
            f"ReplayServer.{call}: the server is not running (not started yet, or stopped); start it "
            "first: server = ReplayServer(...).start(), or with ReplayServer(...) as server: ..."
        )


class ServerAlreadyRunningError(ReactiveStreamsError, RuntimeError):
    """:meth:`ReplayServer.start` was called on a server that is running (started and not
    stopped); the message names its URL and the two ways on: use it, or ``stop()`` it first."""

    def __init__(self, url: str) -> None:
        super().__init__(
            f"ReplayServer.start: the server is running already, at {url}; use it as it is, or "
            "stop() it before starting it again"
        )


class _Stager(Subscriber[bytes]):
    """Takes one upload's rows into a log's staging area under its token; resolves
    ``future`` with their count once they complete.

    Demand is renewed by half the window as each half arrives. Rows are staged in runs, each
    run when a half window of elements or :data:`_FLUSH_BYTES` bytes has arrived, and the
    rest at the end. A staging area that is full, or a token taken over by a later attempt
    (:meth:`Staging.add`), cancels the rows and fails ``future``. An upload that fails or is
    cut short fails ``future``; what it staged stays until ``discard`` (the client's next
    attempt sends that first).
    """

    def __init__(
        self,
        future: concurrent.futures.Future[int] | None,
        staging: Staging | None = None,
        token: str = "",
    ) -> None:
        self._future = future
        self._staging = staging
        self._token = token
        self._subscription: Subscription | None = None
        self._rows: list[bytes] = []
        self._bytes = 0
        self._count = 0
        self._received = 0
        self._done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if demand.accept_subscription(self._subscription, subscription):
            self._subscription = subscription
            subscription.request(_UPLOAD_WINDOW)

    def on_next(self, item: bytes) -> None:
        if self._done:
            return
        self._received += 1
        self._take(item)

    def _take(self, row: bytes) -> None:
        self._rows.append(row)
        self._bytes += len(row)
        renew = self._received % (_UPLOAD_WINDOW // 2) == 0
        if (renew or self._bytes >= _FLUSH_BYTES) and not self._flush():
            return
        if renew and self._subscription is not None:
            self._subscription.request(_UPLOAD_WINDOW // 2)

    def _flush(self) -> bool:
        """Stage the rows received since the last flush; False if the upload failed."""
        if self._staging is None or self._done:
            return False
        rows, self._rows, self._bytes = self._rows, [], 0
        assert self._future is not None  # set with the staging area
        try:
            self._staging.add(self._token, rows, self._future)
        except (StagingFullError, LogLookupError) as refused:
            self._fail(refused, str(refused))
            return False
        self._count += len(rows)
        return True

    def _fail(self, error: BaseException | None, reason: str) -> None:
        self._done = True
        self._rows = []
        if self._subscription is not None:
            self._subscription.cancel()
        if self._future is not None and not self._future.done():
            self._future.set_exception(error if error is not None else LogLookupError(reason))

    def on_error(self, error: BaseException) -> None:
        self._done = True
        self._rows = []
        if self._future is not None and not self._future.done():
            self._future.set_exception(error)

    def on_complete(self) -> None:
        if self._done or self._future is None:
            return
        if self._flush() and not self._future.done():
            self._future.set_result(self._count)


class _UploadSubscriber(_Stager):
    """Takes one client's ``rstreams/upload`` stream (the reverse subscription) into a log's
    staging area: its first element is the JSON header ``{"log", "token"}`` naming both.

    A header that is not ``{"log", "token"}`` (:class:`LogRequestError`), names no sink log, or
    a staging area that is full cancels the upload; the client's ``NAME?staged=T`` request
    carries the reason (its own name is checked by the route, so it fails at once too; a
    malformed header reaches it when it has a token, see :meth:`_malformed`).
    """

    def __init__(self, stagings: Mapping[str, Staging], allowed: Callable[[str], bool] | None = None) -> None:
        super().__init__(None)
        self._stagings = stagings
        self._allowed = allowed

    def _take(self, row: bytes) -> None:
        if self._received == 1:
            self._begin(row)
        else:
            super()._take(row)

    def _begin(self, header: bytes) -> None:
        try:
            fields = json.loads(header)
        except (ValueError, RecursionError):  # not JSON (or nested past Python's stack)
            fields = None
        if not isinstance(fields, dict) or "log" not in fields or "token" not in fields:
            self._malformed(header, fields)
            return
        name, token = str(fields["log"]), str(fields["token"])
        self._staging = self._stagings.get(name)
        self._token = token
        if self._staging is None or (self._allowed is not None and not self._allowed(name)):
            # No sink log named so, or not one this client may upload to: the upload is only
            # cancelled, as no request waits on it here; the client's own NAME?staged=T is
            # refused by its route with the reason (PROTOCOL.md §21.8).
            self._staging = None
            self._fail(None, "")
            return
        self._future = self._staging.future(token)
        try:
            owner = owner_of(fields.get("writer"), fields.get("batch"), fields.get("run"))
        except ValueError as bad:
            self._fail(LogRequestError(f"sink log {name!r}: {bad} (PROTOCOL.md §21.8)"), "")
            return
        self._staging.own(token, owner)

    def _malformed(self, header: bytes, fields: object) -> None:
        """Cancel an upload whose header is not ``{"log", "token"}``. A header with a token (and
        no log) fails that token's ``NAME?staged=T``, whichever sink log NAME is, with the reason;
        one without has no request to tell."""
        bad = LogRequestError(
            f'an upload starts with a JSON header {{"log", "token"}} (PROTOCOL.md §21.8); got {header[:80]!r}'
        )
        token = fields.get("token") if isinstance(fields, dict) else None
        if isinstance(token, str):
            for staging in self._stagings.values():
                future = staging.future(token)
                if not future.done():
                    future.set_exception(bad)
        self._fail(bad, str(bad))


_CHANNEL_KEYS = frozenset({"stage", "writer", "batch", "run"})
"""The parameters of an upload channel's name: its token, and the owner it may name."""
_IN_FLIGHT_BYTES = 8 * 1024 * 1024
"""Bytes of input an upload channel lets its client have in flight (PROTOCOL.md §21.8): the
input demand is this over the largest element seen, within 1 and :data:`_UPLOAD_WINDOW`."""


class _ChannelStager(_Stager):
    """The input of channel ``NAME?stage=T``: each element is packed rows (docs/replay.md, *The
    pack format*), staged on arrival. Input demand starts at 1 and keeps about
    :data:`_IN_FLIGHT_BYTES` in flight once element sizes are known, so large elements (Arrow
    batches) are never asked for by the thousand. An element that is not a packed element
    fails the upload."""

    def __init__(self, future: concurrent.futures.Future[int], staging: Staging, token: str) -> None:
        super().__init__(future, staging, token)
        self._outstanding = 0
        self._largest = 1

    def on_subscribe(self, subscription: Subscription) -> None:
        if demand.accept_subscription(self._subscription, subscription):
            self._subscription = subscription
            self._outstanding = 1
            subscription.request(1)

    def on_next(self, item: bytes) -> None:
        if self._done:
            return
        self._outstanding -= 1
        try:
            rows = _packed_rows(item)
        except ValueError as bad:
            log = self._staging.log.name if self._staging is not None else "?"
            self._fail(LogRequestError(f"sink log {log!r}: {bad} (PROTOCOL.md §21.8)"), "")
            return
        self._rows = rows
        if not self._flush():
            return
        self._largest = max(self._largest, len(item))
        window = max(1, min(_UPLOAD_WINDOW, _IN_FLIGHT_BYTES // self._largest))
        if self._outstanding <= window // 2 and self._subscription is not None:
            self._subscription.request(window - self._outstanding)
            self._outstanding = window


def _packed_rows(item: bytes) -> list[bytes]:
    """The rows of one packed element; ``ValueError`` unless it is exactly one."""
    count = int.from_bytes(item[:4], "big")
    header = 4 + 4 * count
    if len(item) < header or header + sum(struct.unpack_from(f">{count}I", item, 4)) != len(item):
        raise ValueError(
            f"an upload channel's input elements are packed rows (docs/replay.md, The pack format); "
            f"got {len(item)} bytes that are not one"
        )
    return unpack(item)


class _StagedCount(Flow[bytes]):
    """The output of channel ``NAME?stage=T`` (PROTOCOL.md §21.8): its input's rows are staged
    under ``T`` (:class:`_ChannelStager`, subscribed when the output is), and the output is then one
    element, ``{"count": N}`` as JSON, and complete; or ``onError`` (a full staging area, an
    element that is not packed rows, the input failed, the token taken over by another upload).
    The channel's tie ends the input with the output (PROTOCOL.md §21.5)."""

    __slots__ = ("_answer", "_rows", "_stager")

    def __init__(self, staging: Staging, token: str, owner: Owner | None, rows: Publisher[bytes]) -> None:
        staged = staging.begin(token, owner)
        counted: concurrent.futures.Future[Any] = concurrent.futures.Future()
        staged.add_done_callback(lambda f: _chain_count(f, counted))
        self._stager = _ChannelStager(staged, staging, token)
        self._answer = _Answer(counted)
        self._rows: Publisher[bytes] | None = rows

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        self._answer.subscribe(subscriber)
        rows, self._rows = self._rows, None
        if rows is not None:  # the channel's input may be subscribed to once
            rows.subscribe(self._stager)


def _stage_channels(stagings: Mapping[str, Staging]) -> dict[str, ChannelFactory]:
    """The channel factories of the sink logs' uploads, for ``serve(channels=)``: one per sink
    log, by its name, opened as ``NAME?stage=T`` (PROTOCOL.md §21.8)."""

    def factory(name: str, staging: Staging) -> ChannelFactory:
        def open_channel(rows: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
            token = params.get("stage", "")
            if not token or not params.keys() <= _CHANNEL_KEYS:
                return error_flow(
                    LogRequestError(
                        f"sink log {name!r}: an upload channel is named {name}?stage=TOKEN, optionally "
                        "with &writer=W&batch=B&run=R, and takes no other parameter; got "
                        f"{sorted(params)} (PROTOCOL.md §21.8)"
                    )
                )
            try:
                owner = owner_of(params.get("writer"), batch_param(params.get("batch")), params.get("run"))
            except ValueError as bad:
                return error_flow(LogRequestError(f"sink log {name!r}: {bad} (PROTOCOL.md §21.8)"))
            return _StagedCount(staging, token, owner, rows)

        return open_channel

    return {name: factory(name, staging) for name, staging in stagings.items()}


def replay_offer(
    logs: Mapping[str, ReplayLog],
    sinks: Mapping[str, ReplayLog] | None = None,
    *,
    staging_bytes: int = STAGING_BYTES,
    staging_ttl: float | None = STAGING_TTL,
) -> Any:
    """The offer (a ``(path, params) -> Publisher`` callable) serving ``logs`` by name.

    ``sinks`` are logs that Spark's ``rstreams`` sink writes to (they also serve readers);
    each stages at most ``staging_bytes`` of uploaded rows at once, and drops an upload without
    activity for ``staging_ttl`` seconds (``None`` or 0: never; :mod:`rstreams.replay._staging`).
    Returns the callable; its ``stagings`` attribute holds the sink staging areas, its ``channels``
    the uploads' channel factories for ``serve(channels=)`` (:func:`_stage_channels`), its ``logs``
    attribute every log by name (a log added there is served from then on). ``rstreams/logs``
    answers with the names (:data:`LOGS_NAME`).
    """
    if type(staging_bytes) is not int or staging_bytes < 1:
        raise ValueError(f"staging_bytes= needs an int >= 1, got {staging_bytes!r}")
    ttl = check_ttl(staging_ttl)
    all_logs = {**logs, **(sinks or {})}
    stagings = {name: Staging(log, staging_bytes, ttl) for name, log in (sinks or {}).items()}

    def route(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        log = all_logs.get(path)
        if log is None:
            if path == LOGS_NAME:
                return _answer({"logs": sorted(all_logs), "sinks": sorted(stagings)})
            return None
        try:
            return _route(log, stagings.get(path), params)
        except (ValueError, LookupError) as error:  # the log's own: named here
            return error_flow(_named(error))

    route.stagings = stagings  # type: ignore[attr-defined]
    route.channels = _stage_channels(stagings)  # type: ignore[attr-defined]
    route.logs = all_logs  # type: ignore[attr-defined]
    return route


def _named(error: ValueError | LookupError) -> ReactiveStreamsError:
    """``error`` as the rstreams error its subscriber gets, message unchanged: rstreams' own
    (a :class:`LogRequestError`, a :class:`~rstreams.replay.TrimmedError`) as it is, a plain
    ``ValueError`` (a malformed number) as a :class:`LogRequestError` and a plain ``LookupError``
    as a :class:`LogLookupError`, each with ``error`` as its cause."""
    if isinstance(error, ReactiveStreamsError):
        return error
    named: ReactiveStreamsError = (
        LogRequestError(str(error)) if isinstance(error, ValueError) else LogLookupError(str(error))
    )
    named.__cause__ = error
    return named


def _route(log: ReplayLog, staging: Staging | None, params: dict[str, str]) -> Publisher[Any]:
    unknown = sorted(params.keys() - set(QUERY_KEYS) - (_CHANNEL_KEYS if "stage" in params else set()))
    if unknown:
        raise LogRequestError(
            f"log {log.name!r}: unknown parameter {unknown[0]!r}; a log's name takes {', '.join(QUERY_KEYS)}"
        )
    if "epoch" in params:  # the reader's epoch of the log: a restarted log refuses, before anything
        try:
            log.check_epoch(params["epoch"])
        except LogEpochError as refused:
            if staging is None or "publish" not in params:
                raise
            # A writer of the old epoch staged these on the restarted log: no publish of its can
            # take them, and no one else knows their tokens, so they go (not held until a restart).
            dropped = staging.drop([t for t in params.get("tokens", "").split(",") if t])
            raise LogEpochError(log.name, refused.given, refused.epoch, dropped=dropped) from None
    if "latest" in params:
        return _answer(log.info())
    if "rows" in params:
        if "from" not in params:
            raise LogRequestError(f"log {log.name!r}: rows=R needs from=A (the reader's position)")
        return _answer(log.end_within(_number(log, params, "from"), _number(log, params, "rows")))
    if "bytes" in params:
        if "from" not in params:
            raise LogRequestError(f"log {log.name!r}: bytes=B needs from=A (the reader's position)")
        return _answer(log.end_within_bytes(_number(log, params, "from"), _number(log, params, "bytes")))
    if "time" in params:
        return _answer({**log.info(), "position": log.position_at(_number(log, params, "time"))})
    if "commit" in params:
        log.commit(_number(log, params, "commit"), params.get("reader", ""))
        return _answer(log.info())
    if "hold" in params:
        if "reader" not in params:
            raise LogRequestError(f"log {log.name!r}: hold=P needs reader=R (the pending reader's name)")
        position = log.hold(params["reader"], _number(log, params, "hold"))
        return _answer({**log.info(), "position": position})
    if "readers" in params:
        return _answer(_readers(log))
    if "leave" in params:
        log.leave(params["leave"])
        return _answer(_readers(log))
    if "stage" in params:
        raise LogRequestError(
            f"log {log.name!r}: {log.name}?stage=T is a channel, not a publisher: open it as one, "
            "with the rows as its input (PROTOCOL.md §21.8)"
        )
    if staging is None and ({"staged", "publish", "discard"} & params.keys()):
        raise LogLookupError(f"log {log.name!r} is not a sink log: it takes no uploads")
    if staging is not None:
        if "staged" in params:
            if not params["staged"]:  # no upload would ever bring an empty token: refused, not waited for
                raise LogRequestError(f"log {log.name!r}: staged=T needs the token T of an upload")
            future = staging.future(params["staged"])
            counted: concurrent.futures.Future[Any] = concurrent.futures.Future()
            future.add_done_callback(lambda f: _chain_count(f, counted))
            return _Answer(counted)
        if "publish" in params:
            tokens = [t for t in params.get("tokens", "").split(",") if t]
            return _Answer(staging.publish(params.get("writer", ""), _number(log, params, "publish"), tokens))
        if "discard" in params:
            if params.get("run"):
                staging.start(params["run"])
            return _answer(staging.discard([t for t in params["discard"].split(",") if t]))
    if "run" in params:
        raise LogRequestError(
            f"log {log.name!r}: run=R goes with discard= on a sink log (a writer's run announcing its "
            "start, PROTOCOL.md §21.8)"
        )
    start = _number(log, params, "from") if "from" in params else None
    stop = _number(log, params, "to") if "to" in params else None
    return log.cursor(start, stop, pack=_number(log, params, "pack") if "pack" in params else 0)


def _number(log: ReplayLog, params: dict[str, str], key: str) -> int:
    """The integer of parameter ``key``; one that is not an integer is named with its log."""
    try:
        return int(params[key])
    except ValueError as error:
        raise LogRequestError(f"log {log.name!r}: {key}= needs an integer, got {params[key]!r}") from error


def _readers(log: ReplayLog) -> dict[str, Any]:
    log.housekeep()
    return {"readers": log.readers(), "pending": log.pending(), "expired": dict(log.expired)}


def _chain_count(source: concurrent.futures.Future[int], target: concurrent.futures.Future[Any]) -> None:
    failure = source.exception()
    if failure is not None:
        target.set_exception(failure)
    else:
        target.set_result({"count": source.result()})


class ReplayServer:
    """An RS.io server for replay logs, running its own event loop in a daemon thread.

    ``ReplayServer({"sensors": log}, sinks={"results": out}).start()``; ``.url`` is where
    Spark connects; :meth:`stop` closes it. Also a context manager. ``staging_bytes``
    bounds each sink log's uploaded-but-unpublished rows (:class:`StagingFullError`);
    ``staging_ttl`` drops an upload without activity for that many seconds (default 6 hours;
    ``None`` or 0: never), checked at the sink log's requests and on a timer of the server's.

    Facing a network: ``url="tls://..."`` or ``"wss://..."`` with ``ssl=`` (the server's
    :class:`ssl.SSLContext`, as :func:`rstreams.serve` takes it; mutual TLS included), and
    ``authenticate(credentials) -> principal | None`` as for :func:`rstreams.serve`.
    ``authorize(principal, log) -> bool`` is called with the *log's name* (no query) for every
    request on a log, read, commit and publish, and for every upload by the log its header
    names: ``False`` refuses it with ``unauthorized: ...`` naming the log.
    ``metrics=True`` counts what the server's streams do and its logs hold (``metrics()``,
    ``rstreams top``, ``rstreams/stats``); ``metrics="host:port"`` also serves Prometheus'
    ``/metrics`` there (``metrics_url``; docs/observability.md). ``handshake_timeout``: as for
    :func:`rstreams.serve`, the seconds a connection has for its hello and then for settling
    its credentials. ``origins``: for ``ws://`` and ``wss://``, the browser pages allowed
    besides the server's own, as :func:`rstreams.serve` takes them. ``config``: the protocol
    core's limits and extensions (a :class:`rstreams.wire.ConnectionConfig`); sink logs take uploads on
    a channel (PROTOCOL.md §21.8) from clients on connections with extensions channels and
    input-parts (ids 8 and 9, on unless ``disabled_extensions`` withholds them), and by the
    reverse subscription ``rstreams/upload`` from the others.
    """

    def __init__(
        self,
        logs: Mapping[str, ReplayLog],
        *,
        sinks: Mapping[str, ReplayLog] | None = None,
        url: str = "tcp://127.0.0.1:0",
        offer: Any = None,
        staging_bytes: int = STAGING_BYTES,
        staging_ttl: float | None = STAGING_TTL,
        ssl: _ssl.SSLContext | None = None,
        authenticate: Callable[[Any], Any] | None = None,
        authorize: Callable[[Any, str], bool] | None = None,
        metrics: bool | str = False,
        handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
        origins: Iterable[str] | None = None,
        config: Any = None,
    ) -> None:
        self._config = config
        self._logs = {**logs, **(sinks or {})}
        self._origins = origins
        self._metrics = metrics
        self._route = replay_offer(logs, sinks, staging_bytes=staging_bytes, staging_ttl=staging_ttl)
        self._offer = offer if offer is not None else self._route
        self._stagings: Mapping[str, Staging] = self._route.stagings
        self._bind = url
        self._ssl = ssl
        self._authenticate = authenticate
        self._authorize = authorize
        self._handshake_timeout = handshake_timeout
        self.loop, self._thread = loop_thread(self, "rstreams-replay-server")
        self._server: Any = None

    @property
    def url(self) -> str:
        """The URL clients connect to (with the real port); :class:`ServerNotRunningError` before
        :meth:`start` and after :meth:`stop`."""
        return str(self._running("url").url)

    def start(self) -> Self:
        """Listen at the URL given and serve the logs, on an event loop in a new daemon thread.

        A stopped server starts again: a new loop and thread, a new listening socket (a URL with
        port 0 gets a new port; ``url`` has it), the same logs and sink logs, with what they hold;
        numbers given with :meth:`add_metrics` are to be given again. A server that fails to start
        is left stopped (its thread ended), and may be started again.

        Raises:
            ServerAlreadyRunningError: the server is running (started, and not stopped since).
        """
        if self._server is not None or self._thread.is_alive():
            raise ServerAlreadyRunningError(self._server.url if self._server is not None else self._bind)
        if self._thread.ident is not None or self.loop.is_closed():  # a loop and a thread serve one run
            self.loop, self._thread = loop_thread(self, "rstreams-replay-server")
        self._thread.start()
        try:
            self._listen()
        except BaseException:
            self.stop()
            raise
        return self

    def _listen(self) -> None:
        from rstreams.net import serve, split_name

        on_connection = self._ask_for_uploads if self._stagings else None
        authorize = self._authorize
        by_log = None if authorize is None else (lambda who, name: authorize(who, split_name(name)[0]))
        coro = serve(
            self._bind,
            self._offer,
            on_connection=on_connection,
            ssl=self._ssl,
            authenticate=self._authenticate,
            authorize=by_log,
            metrics=self._metrics,
            handshake_timeout=self._handshake_timeout,
            origins=self._origins,
            config=self._config,
            channels=self._route.channels,
        )
        self._server = asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)
        ttls = [staging.ttl for staging in self._stagings.values() if staging.ttl is not None]
        if ttls:
            self.loop.call_soon_threadsafe(self._expire, max(1.0, min(min(ttls) / 8, 60.0)))
        if self._metrics:
            asyncio.run_coroutine_threadsafe(self._count_logs(), self.loop).result(30)

    def _expire(self, every: float) -> None:
        """Drop the sink logs' idle uploads (:meth:`Staging.expire`), then again in ``every``
        seconds while the loop runs (it stops with the server)."""
        for staging in self._stagings.values():
            try:
                staging.expire()
            except Exception as error:  # a logging handler that raises: the timer goes on
                report_unhandled(error, "ReplayServer staging_ttl")
        self.loop.call_later(every, self._expire, every)

    async def _count_logs(self) -> None:
        from rstreams.observe import replay_metrics

        self._server.add_metrics("replay", replay_metrics(self._logs, self._stagings))

    @property
    def metrics_url(self) -> str | None:
        """Where Prometheus scrapes this server's numbers (``metrics="host:port"``), else ``None``."""
        return None if self._server is None else self._server.metrics_url

    def add_metrics(self, name: str, read: Callable[[], dict[str, Any]]) -> None:
        """Include ``read()`` under ``name`` in the server's numbers (:meth:`rstreams.net.Server.add_metrics`;
        ``"spark"``: :func:`rstreams.spark.watch_progress`). Needs ``metrics=`` and a started server
        (else :class:`ServerNotRunningError`)."""
        self._running("add_metrics")

        async def added() -> None:
            self._server.add_metrics(name, read)

        asyncio.run_coroutine_threadsafe(added(), self.loop).result(10)

    def metrics(self) -> dict[str, Any]:
        """The server's numbers (``metrics=`` on): its streams as :meth:`rstreams.net.Server.metrics`
        gives them, and under ``"replay"`` each log's elements and bytes held, trims, and each
        reader's committed position and lag (docs/observability.md). Needs a started server (else
        :class:`ServerNotRunningError`)."""
        self._running("metrics")
        return asyncio.run_coroutine_threadsafe(self._snapshot(), self.loop).result(10)

    def _running(self, call: str) -> Any:
        """The running server, for ``call``; :class:`ServerNotRunningError` when there is none."""
        if self._server is None:
            raise ServerNotRunningError(call)
        return self._server

    async def _snapshot(self) -> dict[str, Any]:
        return dict(self._server.metrics())  # on the server's loop, where its numbers change

    def add(self, name: str, log: ReplayLog) -> None:
        """Serve ``log`` as ``name`` from now on (readers only; sink logs are given at construction).

        It appears in ``rstreams/logs`` at once, so a Spark query reading a pattern that
        matches ``name`` discovers it at its next micro-batch.
        """
        if not isinstance(log, ReplayLog):
            raise TypeError(f"ReplayServer.add: {name!r} needs a ReplayLog, got a {type(log).__name__}")
        if name in self._logs:
            raise ValueError(f"ReplayServer.add: a log named {name!r} is served already")

        def insert() -> None:  # on the server's loop, where the route and the metrics read them
            self._logs[name] = log
            self._route.logs[name] = log

        if self._thread.is_alive():

            async def inserted() -> None:
                insert()

            asyncio.run_coroutine_threadsafe(inserted(), self.loop).result(10)
        else:
            insert()

    def _ask_for_uploads(self, conn: Any) -> None:
        from rstreams.net import RAW  # the upload's elements are bytes, whatever the client states

        authorize = self._authorize
        allowed = None if authorize is None else (lambda log: authorize(conn.principal, log) is True)
        conn.publisher(UPLOAD_NAME, codec=RAW).subscribe(_UploadSubscriber(self._stagings, allowed))

    def sink_statistics(self, name: str) -> dict[str, int]:
        """``{"published", "refused", "dropped", "expired"}``: batches published on sink log
        ``name``, re-runs refused, uploads dropped by their owners (a writer's run over, a batch
        published without them; PROTOCOL.md §21.8), uploads dropped after ``staging_ttl``."""
        staging = self._stagings[name]
        return {
            "published": len(staging._published),
            "refused": staging.refused,
            "dropped": staging.dropped,
            "expired": staging.expired,
        }

    def stop(self) -> None:
        """Close every connection and the listening socket; stop the loop thread. The server may
        be started again (:meth:`start`); stopping a stopped server does nothing."""
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
        close_idle(self.loop)  # also a server never started: its loop never ran

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
