"""The conformance publishers: well-known streams an endpoint under test offers (docs/conformance.md).

A server that wants the whole suite run against it offers these names (the prefix
``conformance/`` is the default; the driver's ``--prefix`` changes it):

=====================================  ======================================================
``conformance/range?n=N``              N elements (default 10), element i is
                                       :func:`element_bytes` (i, 8); then onComplete
``conformance/fixed?n=N&size=S``       the same with onSubscribe elementSize S (default 8),
                                       so the server may pack them (PROTOCOL.md §7)
``conformance/large?size=S&n=N``       N elements (default 1) of S bytes (default 1 MiB),
                                       elementSize 0, so the server may split them (§8)
``conformance/error?after=K``          K range elements (default 0), then onError
``conformance/never``                  onSubscribe, then nothing until cancelled
``conformance/infinite?size=S&tag=T``  endless S-byte elements (default 8)
``conformance/stats?tag=T``            one JSON element: what the infinite sources tagged T
                                       did so far (``subscribed``, ``requested``,
                                       ``pulled``, ``cancelled``), then onComplete
``conformance/echo?name=P&peer=A``     the *server subscribes to the driver*: it subscribes,
                                       on the same connection, to the driver's publisher P
                                       and relays it: demand and cancel of this stream go
                                       to P, P's elements and terminal signal come back
=====================================  ======================================================

``echo`` is how the cases of the ``rv`` area make the endpoint a subscriber (PROTOCOL.md §1:
either endpoint may subscribe). ``peer`` is the driver's own address on that connection
(:func:`address_text` of its socket's local address): rstreams' offer callables do not
learn which connection a subscribe came on, so :class:`ConformancePublishers` finds the
connection by its peer address, from the connections its ``on_connection`` hook saw. An
endpoint that knows the connection may ignore ``peer``.

``stats`` is the server-side hook that lets a remote driver see whether a slow consumer
stops production (PROTOCOL.md §6.3, "a publisher writes only as fast as its transport
drains"). :func:`conformance_publishers` builds all of them as an offer for
:func:`rstreams.net.serve`; ``echo`` also needs its ``on_connection`` hook::

    publishers = conformance_publishers()
    server = await serve(url, publishers, on_connection=publishers.on_connection)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import InvalidDemandError, ReactiveStreamsError
from rstreams.net import RAW, Connection, fixed_size, with_codec
from rstreams.net._routes import WithCodec

__all__ = [
    "ConformancePublishers",
    "FailedOnPurposeError",
    "SourceStats",
    "address_text",
    "conformance_publishers",
    "element_bytes",
]

MAX_SIZE = 64 * 1024 * 1024
"""Largest ``size`` parameter honoured: a conformance server must not be a memory bomb."""

ERROR_TEXT = "conformance/error: the publisher failed on purpose"
"""The text of the failure ``conformance/error`` signals (the server may prefix its type); the
Java and JavaScript bindings' conformance sources signal the same text."""


class FailedOnPurposeError(ReactiveStreamsError, RuntimeError):
    """What ``conformance/error`` signals after its K elements: :data:`ERROR_TEXT`, a failure
    the driver asked for (the Java binding's ``IndexedSource`` signals a ``RuntimeException``)."""

    def __init__(self) -> None:
        super().__init__(ERROR_TEXT)


def element_bytes(index: int, size: int) -> bytes:
    """Element ``index`` of a conformance stream, ``size`` bytes long.

    The first ``min(size, 8)`` bytes are the low bytes of ``index`` in big-endian order,
    the rest cycle through 0..250, so a driver can check every byte and the order.
    """
    head = index.to_bytes(8, "big")
    if size <= 8:
        return head[8 - size :]
    tail = bytes(range(251)) * ((size - 8) // 251 + 1)
    return head + tail[: size - 8]


@dataclass
class SourceStats:
    """What the infinite sources with one tag have done; the JSON of ``conformance/stats``."""

    subscribed: int = 0
    requested: int = 0
    pulled: int = 0
    cancelled: int = 0


class _Source(Publisher[bytes]):
    """A cold Publisher of ``make(i)`` for i = 0, 1, ...; ``count`` None means endless."""

    def __init__(
        self,
        make: Callable[[int], bytes],
        *,
        count: int | None,
        fail_after: int | None = None,
        stats: SourceStats | None = None,
        silent: bool = False,
    ) -> None:
        self._make = make
        self._count = count
        self._fail_after = fail_after
        self._stats = stats
        self._silent = silent

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None) is illegal; pass a Subscriber")
        if self._stats is not None:
            self._stats.subscribed += 1
        subscription = _Subscription(self, subscriber)
        subscriber.on_subscribe(subscription)
        subscription.drain()  # an empty range completes, error?after=0 fails, at once


class _Subscription(Subscription):
    """Trampolined drain loop: request() inside on_next only adds demand (rule 3.3)."""

    def __init__(self, source: _Source, subscriber: Subscriber[bytes]) -> None:
        self._source = source
        self._subscriber = subscriber
        self._demand = 0
        self._index = 0
        self._done = False
        self._draining = False

    def request(self, n: int) -> None:
        if self._done:
            return
        if type(n) is not int or n <= 0:
            self._done = True
            # rstreams' text for rule 3.9 (the Java binding's IndexedSource says the same)
            self._subscriber.on_error(InvalidDemandError(n))
            return
        stats = self._source._stats
        if stats is not None:
            stats.requested = demand.add(stats.requested, n)
        self._demand = demand.add(self._demand, n)
        self.drain()

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            stats = self._source._stats
            if stats is not None:
                stats.cancelled += 1

    def drain(self) -> None:
        if self._draining:
            return
        self._draining = True
        source = self._source
        try:
            while not self._done:
                if source._fail_after is not None and self._index >= source._fail_after:
                    self._done = True
                    self._subscriber.on_error(FailedOnPurposeError())
                    return
                if source._count is not None and self._index >= source._count:
                    self._done = True
                    self._subscriber.on_complete()
                    return
                if self._demand == 0 or source._silent:
                    return
                if self._demand != demand.UNBOUNDED:
                    self._demand -= 1
                element = source._make(self._index)
                self._index += 1
                if source._stats is not None:
                    source._stats.pulled += 1
                self._subscriber.on_next(element)
        finally:
            self._draining = False


def _int_param(params: dict[str, str], name: str, default: int, maximum: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    value = int(raw)  # ValueError: the server refuses the subscribe with onError
    if not 0 <= value <= maximum:
        raise ValueError(f"{name}={value} is outside 0..{maximum}")
    return value


class ConformancePublishers:
    """The conformance publishers as an offer ``(path, params) -> Publisher | None`` for ``serve``.

    ``stats`` maps each tag to its :class:`SourceStats`, so an in-process test can look at
    the same numbers ``conformance/stats`` reports.
    """

    def __init__(self, prefix: str = "conformance/") -> None:
        self.prefix = prefix
        self.stats: dict[str, SourceStats] = {}
        self._connections: dict[str, Connection] = {}

    def on_connection(self, conn: Connection) -> None:
        """``serve(..., on_connection=publishers.on_connection)``: lets ``echo`` find its connection."""
        key = address_text(conn.get_extra_info("peername"))
        self._connections[key] = conn
        conn.add_close_callback(lambda closed: self._forget(key, closed))

    def _forget(self, key: str, conn: Connection) -> None:
        if self._connections.get(key) is conn:
            del self._connections[key]

    def __call__(self, path: str, params: dict[str, str]) -> Publisher[bytes] | WithCodec | None:
        if not path.startswith(self.prefix):
            return None
        kind = path[len(self.prefix) :]
        builder = getattr(self, f"_{kind}", None) if kind.isidentifier() else None
        if builder is None:
            return None
        result: Publisher[bytes] | WithCodec | None = builder(params)
        return result

    def _range(self, params: dict[str, str]) -> Publisher[bytes]:
        n = _int_param(params, "n", 10, 2**62)
        return _Source(lambda i: element_bytes(i, 8), count=n)

    def _fixed(self, params: dict[str, str]) -> WithCodec:
        n = _int_param(params, "n", 10, 2**62)
        size = max(1, _int_param(params, "size", 8, MAX_SIZE))
        return with_codec(_Source(lambda i: element_bytes(i, size), count=n), fixed_size(size))

    def _large(self, params: dict[str, str]) -> Publisher[bytes]:
        n = _int_param(params, "n", 1, 2**62)
        size = _int_param(params, "size", 1024 * 1024, MAX_SIZE)
        return _Source(lambda i: element_bytes(i, size), count=n)

    def _error(self, params: dict[str, str]) -> Publisher[bytes]:
        after = _int_param(params, "after", 0, 2**62)
        return _Source(lambda i: element_bytes(i, 8), count=None, fail_after=after)

    def _never(self, params: dict[str, str]) -> Publisher[bytes]:
        return _Source(lambda i: b"", count=None, silent=True)

    def _infinite(self, params: dict[str, str]) -> Publisher[bytes]:
        size = _int_param(params, "size", 8, MAX_SIZE)
        stats = self.stats.setdefault(params.get("tag", ""), SourceStats())
        return _Source(lambda i: element_bytes(i, size), count=None, stats=stats)

    def _echo(self, params: dict[str, str]) -> Publisher[bytes] | None:
        name, peer = params.get("name"), params.get("peer")
        conn = self._connections.get(peer) if peer else None
        if not name or conn is None or conn.closed:
            return None  # no such publisher: refused with onError
        return conn.publisher(name, codec=RAW)  # relayed as bytes, whatever type P states (§17)

    def _stats(self, params: dict[str, str]) -> Publisher[bytes]:
        snapshot = asdict(self.stats.get(params.get("tag", ""), SourceStats()))
        payload = json.dumps(snapshot, separators=(",", ":")).encode()
        return _Source(lambda i: payload, count=1)


def conformance_publishers(prefix: str = "conformance/") -> ConformancePublishers:
    """The conformance publishers, ready for ``rstreams.net.serve(url, conformance_publishers())``."""
    return ConformancePublishers(prefix)


def address_text(address: object) -> str:
    """A socket address as ``echo``'s ``peer`` parameter spells it: ``host:port``,
    ``[v6host]:port``, a Unix socket's path, or ``@name`` for a Linux abstract socket."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    if isinstance(address, bytes):
        return (
            "@" + address[1:].decode("utf-8", "backslashreplace") if address[:1] == b"\0" else repr(address)
        )
    return str(address)


def stats_from_json(data: bytes) -> dict[str, Any]:
    """Decode a ``conformance/stats`` element."""
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError(f"conformance/stats sent {data!r}, not a JSON object")
    return value
