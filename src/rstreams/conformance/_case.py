"""Cases, their registry, and the context a case runs in.

A case is a short async script against the endpoint under test, tied to the sentence of
PROTOCOL.md or of the draft (spec/003) it checks::

    @case("hs.wrong_version", "PROTOCOL.md §4.2",
          "An endpoint that receives a hello whose version it does not speak MUST send a "
          "goodbye naming the version and close the transport.")
    async def _(ctx: Context) -> None:
        peer = await ctx.open(hello=False)
        ...

It passes when it returns and the monitor of every connection it opened saw no
violation; it fails on :class:`CaseFailure` (or any other exception, reported as such)
or when its deadline passes; it is skipped on :class:`Skip`, for instance when the
endpoint does not offer a conformance publisher the case needs.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rstreams.conformance._peer import CaseFailure, Peer
from rstreams.conformance._publishers import stats_from_json
from rstreams.conformance._transport import client_ssl_context, open_raw
from rstreams.errors import ReactiveStreamsError
from rstreams.wire import ClientHello, Subscribe

__all__ = ["CASES", "Case", "CaseFailure", "CitedCase", "Context", "Options", "Skip", "case", "check"]


class Skip(ReactiveStreamsError):
    """The case cannot run against this endpoint (a missing publisher, a transport limit)."""


def check(condition: object, message: str) -> None:
    """Fail the case with ``message`` unless ``condition`` holds."""
    if not condition:
        raise CaseFailure(message)


CaseFunction = Callable[["Context"], Awaitable[None]]


class CitedCase(Protocol):
    """What reports need of a case, server suite or client suite: its id, citation and rule."""

    @property
    def id(self) -> str: ...
    @property
    def cite(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def area(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case."""

    id: str
    """``area.name``; the area is one of :data:`AREAS`."""
    cite: str
    """Where the rule is: ``PROTOCOL.md §6.3`` or ``draft (spec/003)``."""
    text: str
    """The sentence the case checks, quoted."""
    fn: CaseFunction
    needs: tuple[str, ...] = ()
    """Conformance publishers (``range``, ``never``...) the case uses."""
    timeout: float | None = None
    """Deadline for the whole case in seconds (default: ``Options.case_timeout``)."""
    idle_waits: int = 0
    """How many of the endpoint's idle timeouts the case waits through: with
    ``Options.idle_timeout`` set, its deadline grows by that many plus one ``Options.timeout``."""

    @property
    def area(self) -> str:
        """The case's area: the part of its id before the dot."""
        return self.id.partition(".")[0]


AREAS: dict[str, str] = {
    "hs": "handshake and versions",
    "fr": "framing",
    "dm": "demand",
    "st": "order and state",
    "sp": "packed and split elements",
    "cl": "close",
    "lm": "limits",
    "rs": "session resumption (extension 3)",
    "rv": "server as subscriber",
    "ex": "extensions (keepalive, auth, content-types, metadata, error-codes, messages, channels)",
}

CASES: list[Case] = []
"""Every registered case, in registration order."""


def case(
    case_id: str,
    cite: str,
    text: str,
    *,
    needs: tuple[str, ...] = (),
    timeout: float | None = None,
    idle_waits: int = 0,
) -> Callable[[CaseFunction], CaseFunction]:
    """Register the decorated coroutine function as a case (ids are unique)."""
    if case_id.partition(".")[0] not in AREAS:
        raise ValueError(f"case {case_id!r}: the area must be one of {sorted(AREAS)}")
    if any(c.id == case_id for c in CASES):
        raise ValueError(f"duplicate case id {case_id!r}")

    def register(fn: CaseFunction) -> CaseFunction:
        CASES.append(Case(case_id, cite, text, fn, needs, timeout, idle_waits))
        return fn

    return register


@dataclass(frozen=True, kw_only=True)  # no slots: the defaults double as class attributes for argparse
class Options:
    """How the driver runs; every field has a command-line option."""

    timeout: float = 5.0
    """Deadline of each single wait for a frame, in seconds."""
    quiet: float = 0.25
    """How long a case watches for frames that must not come."""
    case_timeout: float = 30.0
    """Deadline of a whole case."""
    prefix: str = "conformance/"
    """Where the conformance publishers live on the endpoint."""
    max_subscriptions: int = 1024
    """The endpoint's limit on subscriptions per connection (PROTOCOL.md §11)."""
    max_element_size: int = 16 * 1024 * 1024
    """The endpoint's max_element_size (PROTOCOL.md §11)."""
    jobs: int = 4
    """Cases run at once (each on its own connections)."""
    cafile: str | None = None
    """``tls``/``wss``: PEM CA certificates that verify the endpoint (default: the system's)."""
    certfile: str | None = None
    """``tls``/``wss``: the client certificate (PEM) presented for mutual TLS."""
    keyfile: str | None = None
    """``tls``/``wss``: the client certificate's key (default: in ``certfile``)."""
    insecure: bool = False
    """``tls``/``wss``: check neither the certificate nor the name (encrypted, unauthenticated)."""
    server_name: str | None = None
    """``tls``/``wss``: the name the endpoint's certificate must carry (default: the URL's host)."""
    idle_timeout: float | None = None
    """The endpoint's idle timeout in seconds (§14.2), if short enough to wait for; unset: not checked."""
    token: str | None = None
    """A token the endpoint accepts (extension auth, §15); unset: the cases that need one are skipped."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def uses_tls(self) -> bool:
        """Whether any TLS option is set."""
        return bool(self.cafile or self.certfile or self.keyfile or self.insecure or self.server_name)


_tags = itertools.count()


class Context:
    """What a case gets: connections to the endpoint and the names of its publishers."""

    def __init__(self, url: str, options: Options, available: frozenset[str]) -> None:
        self.url = url
        self.options = options
        self.available = available
        self.peers: list[Peer] = []

    async def open(
        self, *, hello: bool = True, rcvbuf: int | None = None, extensions: tuple[int, ...] = ()
    ) -> Peer:
        """A new connection; with ``hello`` the clientHello (listing ``extensions``) is sent at once."""
        o = self.options
        secure = self.url.startswith(("tls:", "wss:"))
        raw = await open_raw(
            self.url,
            rcvbuf=rcvbuf,
            timeout=o.timeout,
            ssl=client_ssl_context(o.cafile, o.certfile, o.keyfile, insecure=o.insecure) if secure else None,
            server_name=o.server_name,
        )
        peer = Peer(raw, timeout=self.options.timeout, quiet=self.options.quiet)
        self.peers.append(peer)
        if hello:
            await peer.send(ClientHello(extensions=extensions))
        return peer

    def name(self, kind: str, **params: object) -> str:
        """The publisher name of conformance publisher ``kind`` with query ``params``."""
        if kind not in self.available:
            raise Skip(f"the endpoint does not offer {self.options.prefix}{kind}")
        query = "&".join(f"{key}={value}" for key, value in params.items())
        return f"{self.options.prefix}{kind}" + (f"?{query}" if query else "")

    def echo(self, peer: Peer, publisher: str) -> str:
        """The name of ``conformance/echo`` relaying the driver's ``publisher`` on ``peer``'s connection."""
        return self.name("echo", name=publisher, peer=peer.raw.local_address)

    @staticmethod
    def tag() -> str:
        """A tag for ``infinite``/``stats`` that no other case uses."""
        return f"t{next(_tags)}x{id(object()) & 0xFFFF:x}"

    async def stats(self, tag: str) -> dict[str, Any]:
        """What the ``infinite`` sources tagged ``tag`` did, from ``conformance/stats`` (a new connection)."""
        peer = await self.open()
        await peer.send(Subscribe(publisher=self.name("stats", tag=tag), subscriber=1, initial_demand=1))
        view = await peer.completed(1)
        check(len(view.elements) == 1, f"conformance/stats sent {len(view.elements)} elements, expected 1")
        peer.abort()
        self.peers.remove(peer)
        return stats_from_json(view.elements[0])

    def close(self) -> None:
        """Drop every connection the case opened."""
        for peer in self.peers:
            peer.abort()
