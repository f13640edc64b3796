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
own: one channel ``LOG?stage=TOKEN`` on it (PROTOCOL.md §21.8), or, with a server that lacks
extensions channels and input-parts (or the channel), a reverse subscription, which the
server makes to the uploading connection's publisher.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import queue
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Generator, Iterable, Iterator
from itertools import chain
from typing import Any, TypeVar
from urllib.parse import quote

from rstreams.api import Subscriber, Subscription
from rstreams.errors import (
    AuthenticationError,
    AuthNotOfferedError,
    ConnectionBrokenError,
    HandshakeTimeoutError,
    ReactiveStreamsError,
    TLSRefusedError,
)
from rstreams.flow._public import from_iterable
from rstreams.net import RAW, Connection, RemoteStreamError, UnknownPublisher, connect
from rstreams.net._closing import broke_the_protocol
from rstreams.net._transport import (
    CERTIFICATE_ALERTS,
    TLS_REFUSAL_HINT,
    EndedBeforeHelloError,
    TLSServerError,
)
from rstreams.replay._access import Access
from rstreams.replay._cursor import PACK_BYTES, pack, packed_count, unpack
from rstreams.replay._server import UPLOAD_NAME

__all__ = [
    "AccessDeniedError",
    "CertificateRefusedError",
    "RemoteLogError",
    "ServerUnavailableError",
    "TLSHandshakeError",
    "fetch_range",
    "request_json",
    "stream_packs",
    "stream_range",
    "upload",
]

PACK = 1024
"""Elements per wire element when fetching ranges (bounded by bytes on the server too)."""
WINDOW = 8
"""Wire elements a range read may have in flight ahead of its caller (each ~256 KiB at most,
or one bigger element)."""

RETRY_FIRST = 0.05
"""Seconds before the first retry of a server that could not be reached (then doubling)."""
RETRY_MAX = 2.0
"""Longest pause between two retries: a restarted server is found within about 2 s."""
_NO_ACCESS = Access()

T = TypeVar("T")


class RemoteLogError(ReactiveStreamsError, RuntimeError):
    """The replay log refused a request; the message is the server's."""


class LogEndedError(ReactiveStreamsError, RuntimeError):
    """A replay log ended before the positions a reader needs: its producer completed first (a
    range read: the message says how many of the positions arrived), or failed (Spark's source:
    the message carries the log's error)."""


class ReplayTimeoutError(ReactiveStreamsError, TimeoutError):
    """The replay server was reached, but what was asked did not come within the caller's
    ``timeout``: a request's answer, an upload's count, a range's elements (the message names the
    server, the timeout and, for a range, how many of its positions arrived). A server out of
    reach for the whole timeout is a :class:`ServerUnavailableError` instead."""


class AccessDeniedError(ReactiveStreamsError, PermissionError):
    """The server refused the credentials, or the TLS handshake failed, or the server ended the TLS
    session before its hello twice in a row (it wants a client certificate); not retried."""


class TLSHandshakeError(AccessDeniedError):
    """The TLS handshake with the server failed (an ``ssl.SSLError``: its certificate not trusted
    or not for that name, no TLS spoken there, ...), or the server refused the client's
    certificate (:class:`CertificateRefusedError`). Callers tell it by this type from a refusal
    of the credentials; the message names the URL and the TLS error."""


class CertificateRefusedError(TLSHandshakeError):
    """The server refused the client's TLS certificate, or its lack of one (mutual TLS): by a
    certificate alert (:data:`~rstreams.net._transport.CERTIFICATE_ALERTS`), or by ending the TLS
    session before its first word twice in a row (a
    :class:`~rstreams.errors.TLSRefusedError` each time). Callers tell it by this type; the
    message says which it was and ends with the same hint as the network error's."""


class ServerUnavailableError(ReactiveStreamsError, ConnectionError):
    """The server could not be reached (or kept breaking the connection) for the whole timeout.

    ``last`` is the last attempt's failure (``None`` when not known; the message names it too),
    by which a caller tells why: e.g. a :class:`~rstreams.errors.TLSRefusedError` when the
    timeout ended the attempt made at once after one (the server may refuse the client's
    certificate).
    """

    def __init__(self, *args: object, last: BaseException | None = None) -> None:
        super().__init__(*args)
        self.last = last


def _retryable(error: BaseException) -> bool:
    """Whether ``error`` looks like a server restarting or out of reach for a moment: not a failed
    TLS handshake, nor refused access, nor a TLS server reached with ``tcp://``
    (:class:`~rstreams.net._transport.TLSServerError`, whose message names the URL to use), nor
    a server that accepted and said no hello within the handshake timeout
    (:class:`~rstreams.errors.HandshakeTimeoutError`: it may not speak RS.io), nor a peer that
    broke the protocol (a restart ends the input, an ``AbruptCloseError``, which is tried again)."""
    if isinstance(error, ConnectionBrokenError):
        if isinstance(error, AuthenticationError | TLSServerError | HandshakeTimeoutError):
            return False
        if broke_the_protocol(error):
            return isinstance(error, TLSRefusedError)  # that is tried again once (_Attempts)
        return not isinstance(error.__cause__, ssl.SSLError)
    return isinstance(error, OSError) and not isinstance(error, ssl.SSLError | TimeoutError)


class _Step(enum.Enum):
    """What a call does after a failed attempt (:meth:`_Attempts.step`)."""

    GIVE_UP = "give up"
    AT_ONCE = "try again at once"
    AFTER_DELAY = "try again after the delay"


_ONCE_MAY_BE_A_RESTART = (TLSRefusedError, EndedBeforeHelloError)
"""Ends that a server killed just then makes once, and a server that will never answer (one
refusing our certificate; one not speaking RS.io on the URL's scheme, such as a TLS server
reached with ``tcp://``) makes every time: tried again at once, given up at the second in a row."""


class _Attempts:
    """The failed attempts of one call (:meth:`_Client.call`, a range of :func:`_stream`, an
    :func:`upload`) and what to do after each: the one place the retry decision is made.

    A server that requires a client certificate and gets none (or one it does not trust)
    ends the TLS session right after the client's side of the TLS 1.3 handshake, or resets it
    inside a TLS 1.2 handshake, without an alert when it is Python's asyncio: a
    :class:`~rstreams.errors.TLSRefusedError`, on either scheme. A server killed just then
    looks the same once; the first such end is therefore tried again at once, and a second in
    a row is the refusal: the call gives up (:func:`_denied` says so). Any other break that
    :func:`_retryable` accepts is tried again after the delay, which doubles from
    :data:`RETRY_FIRST` up to :data:`RETRY_MAX`, until the caller's timeout. (A refusal by an
    alert, as other TLS servers send, is an ``ssl.SSLError``: not retried at all.) A plain
    connection ended before the server's hello without a word
    (:class:`~rstreams.net._transport.EndedBeforeHelloError`: what a TLS server reached with
    ``tcp://`` does) is handled as a refusal: again at once, given up at the second in a row.
    """

    def __init__(self) -> None:
        self.failures: list[BaseException] = []
        self._delay = RETRY_FIRST

    def step(self, error: BaseException) -> _Step:
        """What to do after ``error``, the latest attempt's; kept in :attr:`failures` unless
        the answer is to give up."""
        if not _retryable(error):
            return _Step.GIVE_UP
        for kind in _ONCE_MAY_BE_A_RESTART:
            if isinstance(error, kind):
                if self.failures and isinstance(self.failures[-1], kind):
                    return _Step.GIVE_UP
                self.failures.append(error)
                return _Step.AT_ONCE
        self.failures.append(error)
        return _Step.AFTER_DELAY

    def delay(self) -> float:
        """Seconds to wait before the attempt after an :attr:`_Step.AFTER_DELAY` (then doubled)."""
        delay, self._delay = self._delay, min(2 * self._delay, RETRY_MAX)
        return delay


def _denied(error: BaseException, url: str) -> AccessDeniedError | None:
    """The :class:`AccessDeniedError` for a refused handshake or refused credentials, else ``None``.

    A failed TLS handshake is a :class:`TLSHandshakeError`, and a refusal of the client's
    certificate its :class:`CertificateRefusedError`, by which callers know to name their own
    TLS options, or their client certificate options; ``__cause__`` is then the
    ``ssl.SSLError`` when there was one (raise it ``from`` that). Credentials refused or not
    taken (an :class:`~rstreams.errors.AuthenticationError`, told by type) keep that error as
    the ``__cause__``, by which a caller tells which.
    """
    cause = error.__cause__
    if isinstance(error, ConnectionBrokenError) and isinstance(cause, ssl.SSLError):
        failed = f"the TLS handshake with {url} failed: {cause}"
        refused: TLSHandshakeError
        if cause.reason in CERTIFICATE_ALERTS:
            refused = CertificateRefusedError(f"{failed}; {TLS_REFUSAL_HINT}")
        else:
            refused = TLSHandshakeError(failed)
        refused.__cause__ = cause  # the TLS error, by which a caller tells which option to change
        return refused
    if isinstance(error, TLSRefusedError):
        ended = CertificateRefusedError(f"{url} ended the TLS session twice in a row: {error}")
        ended.__cause__ = error  # a reset inside the handshake may also mean a server without TLS
        return ended
    if isinstance(error, AuthenticationError):  # its type says which: the hint follows the cause
        if isinstance(error, AuthNotOfferedError):  # our side gave up: the server takes no credentials
            denied = AccessDeniedError(f"{url}: {error}")
        else:
            denied = AccessDeniedError(f"{url} refused the credentials: {error}")
        denied.__cause__ = error
        return denied
    return None


def _unavailable(url: str, timeout: float, failures: list[BaseException]) -> ServerUnavailableError:
    return ServerUnavailableError(
        f"replay server {url} could not be reached for {timeout:g} s "
        f"({len(failures)} attempts; the last: {failures[-1]})",
        last=failures[-1],
    )


class _Client:
    """This process's event loop thread and its connections, one per (URL, access)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._connections: dict[tuple[str, Access], Connection] = {}
        threading.Thread(target=self.loop.run_forever, name="rstreams-replay-client", daemon=True).start()

    async def connection(self, url: str, access: Access) -> Connection:
        conn = self._connections.get((url, access))
        if conn is None or conn.closed:
            conn = await connect(url, ssl=access.ssl_context(url), auth=access.auth)
            self._connections[(url, access)] = conn
        return conn

    def call(
        self,
        make: Callable[[Connection], Coroutine[Any, Any, T]],
        url: str,
        timeout: float,
        access: Access = _NO_ACCESS,
    ) -> T:
        """``await make(conn)`` on the loop within ``timeout`` s, trying again with backoff
        while the server cannot be reached or breaks the connection (it is restarting).

        Raises:
            RemoteLogError: the server answered with an error.
            AccessDeniedError: the TLS handshake or the credentials were refused.
            ServerUnavailableError: the server stayed out of reach for ``timeout`` s.
            ReplayTimeoutError: the server was there but did not answer within ``timeout`` s.
        """
        attempts = _Attempts()

        async def attempt() -> T:
            while True:
                try:
                    return await make(await self.connection(url, access))
                except Exception as error:
                    step = attempts.step(error)
                    if step is _Step.GIVE_UP:
                        raise
                    if step is _Step.AFTER_DELAY:
                        await asyncio.sleep(attempts.delay())

        future = asyncio.run_coroutine_threadsafe(_within(attempt(), timeout), self.loop)
        try:
            return future.result()
        except RemoteStreamError as error:
            raise RemoteLogError(error.message) from None
        except TimeoutError:
            if attempts.failures:
                raise _unavailable(url, timeout, attempts.failures) from None
            raise ReplayTimeoutError(
                f"replay server {url} did not answer within timeout={timeout:g} s (it was reached)"
            ) from None
        except Exception as error:
            denied = _denied(error, url)
            if denied is not None:
                raise denied from denied.__cause__
            raise


def _within(call: Coroutine[Any, Any, T], seconds: float) -> Coroutine[Any, Any, T]:
    """``call``, cut short with ``TimeoutError`` after ``seconds``: the timeout of a request
    (:meth:`_Client.call`). Tests replace it (and :func:`_next_item`) to end the wait at an event
    of theirs rather than after real seconds."""
    return asyncio.wait_for(call, seconds)


def _next_item(items: queue.SimpleQueue[T], seconds: float) -> T:
    """The next of ``items``, or ``queue.Empty`` after ``seconds``: the timeout of a range's
    elements (:func:`_stream_part`; see :func:`_within`)."""
    return items.get(timeout=seconds)


_lock = threading.Lock()
_the_client: _Client | None = None


def _client() -> _Client:
    global _the_client
    with _lock:
        if _the_client is None or _the_client.pid != os.getpid():
            _the_client = _Client()
        return _the_client


def request_json(
    url: str, name: str, timeout: float = 30.0, *, access: Access | None = None
) -> dict[str, Any]:
    """The single JSON answer of publisher ``name`` (``log?latest``, ``log?commit=N``...).

    Raises what :meth:`_Client.call` raises.
    """

    async def ask(conn: Connection) -> bytes:
        data: bytes = await conn.request(name)
        return data

    answer: dict[str, Any] = json.loads(_client().call(ask, url, timeout, access or _NO_ACCESS))
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
    url: str,
    log: str,
    start: int,
    end: int,
    timeout: float = 60.0,
    *,
    pack: int = PACK,
    access: Access | None = None,
    epoch: str | None = None,
) -> Generator[bytes, None, None]:
    """The elements at positions ``[start, end)`` of ``log`` as they arrive (see the module docstring).

    Closing the iterator early cancels the remote subscription. A connection that breaks
    (the server restarts) is made again and the range goes on from the position reached,
    all within ``timeout``. ``epoch``: the log's epoch the positions were taken from (its
    ``latest`` answer's); a log of another epoch (restarted in memory meanwhile) refuses
    with ``LogEpochError``.

    Raises:
        RemoteLogError: the server refused (for example positions already trimmed).
        LogEndedError: fewer elements than asked for arrived (the log ended early).
        ReplayTimeoutError: the range did not arrive within ``timeout`` seconds.
        AccessDeniedError, ServerUnavailableError: as :func:`request_json`.
    """
    if not pack:
        yield from _stream(url, log, start, end, timeout, 0, access or _NO_ACCESS, epoch)
        return
    for packed in _stream(url, log, start, end, timeout, pack, access or _NO_ACCESS, epoch):
        yield from unpack(packed)


def stream_packs(
    url: str,
    log: str,
    start: int,
    end: int,
    timeout: float = 60.0,
    *,
    pack: int = PACK,
    access: Access | None = None,
    epoch: str | None = None,
) -> Iterator[bytes]:
    """:func:`stream_range` without unpacking: each item is one packed element (docs/replay.md,
    *The pack format*) of up to ``pack`` consecutive elements, in order, covering ``[start, end)``.

    For callers that decode many elements at once (the Spark source's codecs): no Python
    object is made per element. Raises what :func:`stream_range` raises.
    """
    if pack < 1:
        raise ValueError(f"stream_packs needs pack >= 1, got {pack!r}")
    yield from _stream(url, log, start, end, timeout, pack, access or _NO_ACCESS, epoch)


def _stream(
    url: str, log: str, start: int, end: int, timeout: float, pack: int, access: Access, epoch: str | None
) -> Iterator[bytes]:
    """The wire elements of ``[start, end)``, subscribing again after a broken connection."""
    deadline = time.monotonic() + timeout
    position = start
    attempts = _Attempts()
    while True:
        failure = yield from _stream_part(url, log, position, end, deadline, pack, access, attempts, epoch)
        if failure is None:
            return
        position = failure


def _stream_part(
    url: str,
    log: str,
    start: int,
    end: int,
    deadline: float,
    pack: int,
    access: Access,
    attempts: _Attempts,
    epoch: str | None,
) -> Generator[bytes, None, int | None]:
    """One subscription to ``[start, end)``, yielding wire elements (packed if ``pack``);
    returns ``None`` when complete, or the position to go on from after a broken connection
    that ``attempts`` (the range's) says to try again: at once, as the subscription made again
    goes through :meth:`_Client.call`, which waits for a server out of reach."""
    client = _client()
    name = f"{log}?from={start}&to={end}" + (f"&pack={pack}" if pack else "")
    if epoch is not None:
        name += f"&epoch={quote(epoch, safe='')}"
    feed = _Feed()

    async def open_range(conn: Connection) -> None:
        conn.publisher(name, codec=RAW).subscribe(feed)

    client.call(open_range, url, max(0.001, deadline - time.monotonic()), access)
    count = 0  # elements
    taken = 0  # wire elements
    end_signal: _End | None = None
    try:
        while end_signal is None:
            try:
                item = _next_item(feed.queue, max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise ReplayTimeoutError(
                    f"replay log {log!r} at {url}: positions [{start}, {end}) did not arrive within "
                    f"the timeout ({count} did)"
                ) from None
            if isinstance(item, _End):
                end_signal = item
                break
            taken += 1
            if taken % (WINDOW // 2) == 0 and feed.subscription is not None:
                client.loop.call_soon_threadsafe(feed.subscription.request, WINDOW // 2)
            count += packed_count(item) if pack else 1
            yield item
    finally:
        if end_signal is None and feed.subscription is not None:  # closed early, or failed
            client.loop.call_soon_threadsafe(feed.subscription.cancel)
    error = end_signal.error
    if error is not None:
        if isinstance(error, RemoteStreamError):
            raise RemoteLogError(error.message)
        if time.monotonic() < deadline and attempts.step(error) is not _Step.GIVE_UP:
            return start + count
        denied = _denied(error, url)
        if denied is not None:
            raise denied from denied.__cause__
        raise error
    if count != end - start:
        raise LogEndedError(
            f"replay log {log!r} at {url} ended after {count} of the {end - start} "
            f"elements at positions [{start}, {end})"
        )
    return None


def fetch_range(
    url: str,
    log: str,
    start: int,
    end: int,
    timeout: float = 60.0,
    *,
    pack: int = PACK,
    access: Access | None = None,
    epoch: str | None = None,
) -> list[bytes]:
    """Exactly the elements at positions ``[start, end)`` of ``log``, ``pack`` per wire element.

    ``epoch``: the log's epoch the positions were taken from (a ``latest`` answer's
    ``"epoch"``, :attr:`ReplayLog.epoch <rstreams.replay.ReplayLog.epoch>`): a log of another
    epoch (restarted in memory since, so its positions may hold other elements) refuses the
    range before sending any of it (docs/replay.md, *Epochs*).

    Raises:
        RemoteLogError: the server refused (for example positions already trimmed; or, with
            ``epoch``, ``LogEpochError`` naming both epochs: the log was restarted).
        LogEndedError: fewer elements than asked for arrived (the log ended early).
        ReplayTimeoutError: the range did not arrive within ``timeout`` seconds.
        AccessDeniedError, ServerUnavailableError: as :func:`request_json`.
    """
    return list(stream_range(url, log, start, end, timeout, pack=pack, access=access, epoch=epoch))


_ON_A_CHANNEL = frozenset({8, 9})
"""The ids of the extensions an upload on a channel needs: channels (8, PROTOCOL.md §21), and
input-parts (9, §21.6) for rows above 64 KiB (Arrow batches)."""


_OWNERLESS_ONLY = "?stage=TOKEN and takes no other parameter"
"""What a server from before owners says when an upload channel's name names one (PROTOCOL.md
§21.8): the upload is then made again without it."""


async def _upload(
    url: str, log: str, token: str, rows: Callable[[], Iterator[bytes]], access: Access, owner: dict[str, Any]
) -> int:
    """One attempt of :func:`upload`: on a channel if the server offers it, else by the
    reverse subscription (PROTOCOL.md §21.8). ``rows()`` gives the rows from the first, each time;
    ``owner``: the ``writer``, ``batch`` and ``run`` the upload names (none: an empty dict)."""
    conn = await connect(url, ssl=access.ssl_context(url), auth=access.auth)
    try:
        # What an attempt cut short had staged under the token goes first (on a first attempt
        # there is none). The answer comes after the server's hello: the extensions are known.
        await conn.request(f"{log}?discard={token}")
        if conn.extensions >= _ON_A_CHANNEL:
            named = "".join(f"&{key}={quote(str(value), safe='')}" for key, value in owner.items())
            try:
                return await _upload_on_channel(conn, f"{log}?stage={token}{named}", rows)
            except UnknownPublisher:  # a server from before uploads on channels: it has no such channel
                pass
            except RemoteStreamError as refused:
                if not named or _OWNERLESS_ONLY not in refused.message:
                    raise
                return await _upload_on_channel(conn, f"{log}?stage={token}", rows)  # one from before owners
    finally:
        await conn.aclose()
    return await _upload_reversed(url, log, token, rows(), access, owner)


async def _upload_on_channel(conn: Connection, name: str, rows: Callable[[], Iterator[bytes]]) -> int:
    """The rows on the upload channel ``name``; the count the server answers."""
    packed = _packed(rows())
    try:
        answer: bytes = await conn.channel(name, from_iterable(packed)).first()
    finally:
        packed.close()  # a channel refused at once: the next one takes the rows from the first
    return int(json.loads(answer)["count"])


def _packed(rows: Iterator[bytes]) -> Generator[bytes, None, None]:
    """``rows`` as packed elements (docs/replay.md, *The pack format*), each of up to
    :data:`PACK` rows and about :data:`~rstreams.replay._cursor.PACK_BYTES` (a larger row alone)."""
    chunk: list[bytes] = []
    size = 0
    for row in rows:
        if chunk and size + len(row) > PACK_BYTES:
            yield pack(chunk)
            chunk, size = [], 0
        chunk.append(row)
        size += len(row)
        if len(chunk) == PACK:
            yield pack(chunk)
            chunk, size = [], 0
    if chunk:
        yield pack(chunk)


async def _upload_reversed(
    url: str, log: str, token: str, rows: Iterable[bytes], access: Access, owner: dict[str, Any]
) -> int:
    """The upload as the server's subscription to this side's ``rstreams/upload``: a JSON header
    naming the log, the token and the ``owner``'s fields, then the rows; ``LOG?staged=TOKEN``
    answers with the count. (A server from before owners takes the header's first two only.)"""
    header = json.dumps({"log": log, "token": token, **owner}).encode()
    elements: Iterator[bytes] = chain([header], rows)
    conn = await connect(
        url, publishers={UPLOAD_NAME: from_iterable(elements)}, ssl=access.ssl_context(url), auth=access.auth
    )
    try:
        answer = json.loads(await conn.request(f"{log}?staged={token}"))
    finally:
        await conn.aclose()
    return int(answer["count"])


def upload(
    url: str,
    log: str,
    token: str,
    rows: Iterable[bytes],
    timeout: float = 300.0,
    *,
    access: Access | None = None,
    writer: str | None = None,
    batch: int | None = None,
    run: str | None = None,
) -> int:
    """Stage ``rows`` on the server's sink log ``log`` under ``token``; returns how many.

    The rows travel on the channel ``LOG?stage=TOKEN`` when the server offers extensions channels
    and input-parts, else as the reverse subscription (PROTOCOL.md §21.8). Each attempt first
    asks the server to drop what the token has staged (``LOG?discard=TOKEN``). A server that
    cannot be reached, or breaks the connection half-way (it restarts), is tried again with
    backoff until ``timeout``; the rows already sent are kept in memory for that and sent again
    under the same token.

    ``writer`` and ``batch`` (together), and ``run`` (optional, with them): the upload's owner,
    the writer and batch its publish will name and the writer's run (a start of a Spark query):
    the server drops the upload once that batch is published without it, or once another run of
    the writer begins (docs/replay.md, *Sink logs*). A server from before owners stages it
    without one.

    Raises:
        RemoteLogError, AccessDeniedError, ServerUnavailableError, ReplayTimeoutError: as
            :func:`request_json`.
        ValueError: ``batch`` without ``writer``, or the other way round, or ``run`` without them.
    """
    owner: dict[str, Any] = {}
    if writer is not None or batch is not None or run is not None:
        if writer is None or batch is None:
            raise ValueError(
                f"upload: writer= and batch= go together, got writer={writer!r}, batch={batch!r}"
            )
        owner = {"writer": writer, "batch": batch} | ({} if run is None else {"run": run})
    chosen = access or _NO_ACCESS
    deadline = time.monotonic() + timeout
    sent: list[bytes] = []
    source = iter(rows)

    def replayed() -> Iterator[bytes]:
        yield from list(sent)
        for row in source:
            sent.append(row)
            yield row

    attempts = _Attempts()
    while True:
        left = deadline - time.monotonic()
        try:
            attempt = _upload(url, log, token, replayed, chosen, owner)
            count: int = asyncio.run(asyncio.wait_for(attempt, max(0.001, left)))
            return count
        except RemoteStreamError as error:
            raise RemoteLogError(error.message) from None
        except TimeoutError:
            if attempts.failures:
                raise _unavailable(url, timeout, attempts.failures) from None
            raise ReplayTimeoutError(
                f"replay server {url}: the upload {token!r} to sink log {log!r} was not counted within "
                f"timeout={timeout:g} s (the server was reached)"
            ) from None
        except Exception as error:
            step = attempts.step(error)
            if step is _Step.GIVE_UP:
                denied = _denied(error, url)
                if denied is not None:
                    raise denied from denied.__cause__
                raise
            if step is _Step.AT_ONCE:
                continue
            delay = attempts.delay()
            if time.monotonic() + delay >= deadline:
                raise _unavailable(url, timeout, attempts.failures) from None
            time.sleep(delay)
