"""One RS.io connection as users see it: a thin facade over the pieces that run it.

Theory of operation. :class:`Connection` keeps only what users call: the peer's publishers
(:meth:`~Connection.publisher`, :meth:`~Connection.request`), closing
(:meth:`~Connection.aclose`, :meth:`~Connection.wait_closed`) and what there is to know
about the connection (:meth:`~Connection.statistics`, :meth:`~Connection.get_extra_info`,
:attr:`~Connection.principal`, :attr:`~Connection.authenticated`). Everything else is done
by pieces with one job each, joined by the outbox (:mod:`rstreams.net._outbox`) that sits
below them:

=============================  ================================================================
:mod:`~rstreams.net._pump`      the transport's handler: bytes in, events routed by a table,
                               one coalesced write and refill per loop turn
:mod:`~rstreams.net._serving`   the peer's subscriptions on our publishers
:mod:`~rstreams.net._consuming` our subscriptions on the peer's publishers: ids, demand,
                               :class:`RemoteStreamError`
:mod:`~rstreams.net._closing`   handshake timer, goodbyes, lingering close, the end of streams
:mod:`~rstreams.net._auth`      authentication, the server's gate and the client's part
:mod:`~rstreams.net._keepalive` pings and the idle timeout, on one timer
=============================  ================================================================
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal, Self, TypeAlias, TypeVar, overload

from rstreams.api import Publisher
from rstreams.errors import LocalProtocolError
from rstreams.flow._flow import Flow
from rstreams.net._channels import ChannelPublisher
from rstreams.net._closing import CLOSE_TIMEOUT
from rstreams.net._codec import Codec
from rstreams.net._consuming import (
    Batching,
    RemotePublisher,
    RemoteStreamError,
    ScalarRequest,
    ScalarSubscriber,
)
from rstreams.net._metadata import entries as metadata_entries
from rstreams.net._pump import Pump
from rstreams.wire._auth import as_credentials
from rstreams.wire.extensions import METADATA

__all__ = ["CLOSE_TIMEOUT", "Connection", "ConnectionStatistics", "RemoteStreamError"]

MetadataArg: TypeAlias = "Mapping[str, str | bytes] | None"
"""Subscribe metadata as callers give it (PROTOCOL.md §18): keys to ``str`` or ``bytes`` values."""

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionStatistics:
    """What :meth:`Connection.statistics` returns."""

    subscribing: int
    """Open subscriptions of ours on the peer's publishers."""
    publishing: int
    """Open subscriptions of the peer on our publishers."""
    write_buffer_size: int
    """Bytes written but not yet sent by the transport."""
    writable: bool
    """Whether the transport is below its high-water mark (local publishers are asked for more)."""
    closed: bool
    """Whether the connection has ended."""


def _requiring_metadata(pump: Pump, name: str) -> Callable[[int], Exception | None]:
    """The check, after the peer's hello, of ``metadata_required=True`` (PROTOCOL.md §18.1)."""

    def check(sid: int) -> Exception | None:
        if METADATA.id in pump.outbox.core.extensions:
            return None
        return LocalProtocolError(
            f"can't subscribe to {name!r} with metadata_required=True: the peer does not offer "
            f"extension {METADATA} (PROTOCOL.md §18.1), so the metadata would not be sent; "
            "pass metadata_required=False to subscribe without it"
        )

    return check


class Connection:
    """One RS.io connection, client or server side; made by ``connect``/``serve``, not by users.

    Either side may do both: subscribe to the peer's publishers (:meth:`publisher`,
    :meth:`request`) and serve its own (``publishers=`` when connecting or serving).
    """

    __slots__ = ("_new_future", "_pump")

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        pump.subscriptions.describe = self.__repr__
        pump.closing.client_auth = pump.client_auth  # an auth goodbye's error type (net/_auth.py)
        pump.subscriptions.defer = pump.defer  # after the read's events, not a loop turn later
        self._new_future: Callable[[], asyncio.Future[Any]] = pump.outbox.loop.create_future

    # -- the peer's publishers ------------------------------------------------------------------
    @overload
    def publisher(
        self,
        name: str,
        *,
        batched: Literal[False] = False,
        auth: object = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Flow[Any]: ...  # bytes, or what the announced content type decodes to (PROTOCOL.md §17)
    @overload
    def publisher(
        self,
        name: str,
        *,
        codec: Codec[T],
        batched: Literal[False] = False,
        auth: object = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Flow[T]: ...
    @overload
    def publisher(
        self,
        name: str,
        *,
        batched: Literal[True],
        auth: object = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Flow[list[Any]]: ...
    @overload
    def publisher(
        self,
        name: str,
        *,
        codec: Codec[T],
        batched: Literal[True],
        auth: object = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Flow[list[T]]: ...
    def publisher(
        self,
        name: str,
        *,
        codec: Codec[Any] | None = None,
        batched: bool = False,
        auth: object = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Flow[Any]:
        """The peer's publisher ``name`` (``path?param=value``) as a cold :class:`Flow`.

        Each ``subscribe`` opens a new remote subscription. Without ``codec``, elements are
        decoded by the media type the publisher announces (PROTOCOL.md §17: JSON, UTF-8 text,
        INT64, FLOAT64, MessagePack, Arrow), and are ``bytes`` when it announces none or
        another; with ``codec``, by ``codec.decode(bytes)``, and a publisher announcing another
        type fails the subscription with :class:`ContentTypeError` (``codec=RAW``: bytes,
        whatever is announced).

        ``batched=True``: ``on_next`` receives a non-empty ``list`` of elements at a time
        (the elements of one packed frame, decoded with one ``codec.decode_many`` call,
        or the run of elements one read brought), while demand still counts elements:
        ``request(n)`` lets ``n`` more *elements* arrive, in as many lists as it takes.
        The way to take fixed-size elements (``INT64``, ``FLOAT64``, ``fixed_size(n)``)
        at tens of millions per second.

        ``auth``: credentials for these subscriptions only (a token ``str``, a ``(user,
        password)`` tuple, :class:`Token` or :class:`UserPassword`), checked by the server
        instead of the connection's (PROTOCOL.md §15.4). Needs a connection made with
        ``connect(url, auth=...)`` (``ValueError`` otherwise) to a server that offers
        extension auth; each subscribe then waits for the server's hello.

        ``metadata``: key/value entries sent with every subscribe (PROTOCOL.md §18), e.g.
        ``{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}``; keys
        are 1..64 of a-z 0-9 ``-_.``, values ``str`` (sent as UTF-8) or ``bytes``. The serving
        side reads them with :func:`subscribe_metadata`. Each subscribe waits for the peer's
        hello; a peer without extension metadata gets the subscribe without them, unless
        ``metadata_required=True`` (default ``False``: metadata such as a ``traceparent`` is
        advice the publisher may go without): then such a subscription fails instead with
        :class:`LocalProtocolError` naming extension metadata (id 5) and PROTOCOL.md §18.1,
        and nothing is sent. A publisher that needs an entry refuses a subscribe without it
        either way; the flag makes the subscriber find out before sending, not after.
        """
        if not isinstance(name, str):
            raise TypeError(f"publisher names are str such as 'sensors/temp?from=100', got {name!r}")
        encoded = None if metadata is None else metadata_entries(metadata)
        prelude = _requiring_metadata(self._pump, name) if metadata_required and encoded is not None else None
        credentials = None
        if auth is not None:
            credentials = as_credentials(auth)
            if self._pump.client_auth is None:
                raise ValueError(
                    "per-subscription credentials need a client connection that authenticates itself: "
                    "connect(url, auth=...) (extension auth is listed only by a client that presents "
                    "credentials, PROTOCOL.md §15.2)"
                )
        table = self._pump.subscriptions
        if batched:
            return RemotePublisher(table, name, None, Batching(codec), credentials, codec, encoded, prelude)
        if codec is not None and codec.element_size and codec.decode_many is not None:
            # one element per on_next, but packed frames are decoded in one call
            return RemotePublisher(
                table, name, codec.decode, Batching(codec, lists=False), credentials, codec, encoded, prelude
            )
        decode = codec.decode if codec is not None else None
        return RemotePublisher(table, name, decode, None, credentials, codec, encoded, prelude)

    @overload
    async def request(
        self, name: str, *, metadata: MetadataArg = None, metadata_required: bool = False
    ) -> Any: ...  # decoded by §17
    @overload
    async def request(
        self, name: str, *, codec: Codec[T], metadata: MetadataArg = None, metadata_required: bool = False
    ) -> T: ...
    async def request(
        self,
        name: str,
        *,
        codec: Codec[Any] | None = None,
        metadata: MetadataArg = None,
        metadata_required: bool = False,
    ) -> Any:
        """Request/response: subscribe with demand 1 and return the single element.

        ``codec``, ``metadata`` and ``metadata_required`` as for :meth:`publisher`.

        Raises:
            RemoteStreamError: the remote publisher signalled ``onError`` (e.g. unknown name).
            NoSuchElementError: it completed without an element (a ``LookupError``).
            ConnectionBrokenError / ResourceClosedError: the connection ended first.

        Wrap it in ``asyncio.timeout(...)`` for a deadline: cancelling the call cancels the stream.
        """
        if type(name) is not str and not isinstance(name, str):  # type(): no call in the common case
            raise TypeError(f"publisher names are str such as 'sensors/temp?from=100', got {name!r}")
        encoded = None if metadata is None else metadata_entries(metadata)
        pump = self._pump
        prelude = _requiring_metadata(pump, name) if metadata_required and encoded is not None else None
        future = self._new_future()
        # on the loop's thread already (a coroutine): open the subscription directly
        decode = codec.decode if codec is not None else None
        subscriber: ScalarRequest | ScalarSubscriber
        if prelude is None:  # the common case: demand 1 from the start
            subscriber = pump.subscriptions.open_request(name, future, decode, codec, encoded)
        else:
            subscriber = ScalarSubscriber(future, name, pump.defer)
            pump.subscriptions.open(name, subscriber, decode, prelude=prelude, codec=codec, metadata=encoded)
        try:
            return await future
        except asyncio.CancelledError:
            subscriber.cancel()
            raise

    # -- messages (extension messages, PROTOCOL.md §20) -----------------------------------------
    async def send(self, name: str, payload: bytes | bytearray | memoryview, *, wait: bool = True) -> None:
        """Send ``payload`` to the peer's message handler ``name`` (``path?param=value``), one way.

        Bounded: the peer grants message credit (``max_messages_in_flight`` of its config,
        16 by default) and takes one back for each message whose handler has finished. Out
        of credit, ``send`` waits for it (``wait=True``, in order with other senders) or
        raises :class:`MessageCreditError` (``wait=False``); nothing is queued. It returns
        once the message is handed to the connection, not when a handler has run: an
        unknown handler, one that raises, or one that ``authorize`` refuses drops the
        message on the peer's side (logged there), PROTOCOL.md §20.4.

        Raises:
            LocalProtocolError: the peer's hello does not list extension messages (id 7).
            MessageCreditError: ``wait=False`` and no credit.
            ValueError: name and payload above ``max_string_length`` (64 KiB by default).
            ConnectionBrokenError: the connection ended before the message was sent.
        """
        await self._pump.messages.send(name, payload, wait)

    # -- channels (extension channels, PROTOCOL.md §21) -------------------------------------------
    @overload
    def channel(self, name: str, input_publisher: Publisher[bytes]) -> Flow[bytes]: ...
    @overload
    def channel(self, name: str, input_publisher: Publisher[T], *, codec: Codec[T]) -> Flow[T]: ...
    def channel(
        self, name: str, input_publisher: Publisher[Any], *, codec: Codec[Any] | None = None
    ) -> Flow[Any]:
        """The output of the peer's channel ``name``, fed by ``input_publisher``, as a cold :class:`Flow`.

        Each ``subscribe`` opens a channel: one subscription whose output flows from the peer
        as for :meth:`publisher`, and whose input is ``input``, subscribed to once per channel
        and requested from exactly as far as the peer's channel asks (PROTOCOL.md §21).
        ``codec`` encodes the input's elements and decodes the output's (default: bytes).
        When the output ends (completes, fails or is cancelled) the input is cancelled; the
        input may complete first while the output goes on.

        The subscriber gets ``on_error(LocalProtocolError)`` when the peer does not offer
        extension channels (id 8), and ``on_error(RemoteStreamError)`` when it refuses
        the channel (``"no channel named ..."``).
        """
        if not isinstance(name, str):
            raise TypeError(f"channel names are str such as 'upper?lang=en', got {name!r}")
        if not callable(getattr(input_publisher, "subscribe", None)):
            raise TypeError(f"a channel's input must be a Publisher, got {input_publisher!r}")
        return ChannelPublisher(self._pump.channels, name, input_publisher, codec)

    # -- closing -------------------------------------------------------------------------------
    async def aclose(self, reason: str = "", *, timeout: float = CLOSE_TIMEOUT) -> None:  # noqa: ASYNC109
        """Say goodbye, wait (up to ``timeout`` s) for the peer's goodbye, close the transport.

        Open streams end: local Subscribers get ``on_error(ResourceClosedError)``, local
        Publishers serving the peer are cancelled. Idempotent.
        """
        await self._pump.closing.aclose(reason, timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def wait_closed(self) -> None:
        """Wait until the transport is closed."""
        await self._pump.closing.wait_closed()

    def add_close_callback(self, callback: Callable[[Connection], object]) -> None:
        """Call ``callback(self)`` once the transport is closed (at once if it is)."""
        self._pump.closing.add_close_callback(lambda: callback(self))

    @property
    def closed(self) -> bool:
        """Whether streams can no longer run on this connection (goodbye or transport lost)."""
        return self._pump.outbox.ended is not None

    # -- what there is to know -------------------------------------------------------------------
    def statistics(self) -> ConnectionStatistics:
        """A snapshot of this connection's state (for monitoring and tests)."""
        pump = self._pump
        outbox = pump.outbox
        transport = outbox.transport
        return ConnectionStatistics(
            subscribing=len(pump.subscriptions.subscriptions),
            publishing=len(pump.serving.streams),
            write_buffer_size=transport.get_write_buffer_size() if transport is not None else 0,
            writable=outbox.writable,
            closed=outbox.ended is not None,
        )

    @property
    def extensions(self) -> frozenset[int]:
        """The ids of the extensions active on this connection, those both hellos list
        (PROTOCOL.md §4.4); empty until the peer's hello has arrived, which it has once any
        answer of the peer's has (``await conn.request(...)`` returned)."""
        return self._pump.outbox.core.extensions

    @property
    def hello_received(self) -> bool:
        """Whether the peer's hello has arrived (PROTOCOL.md §4.1): an RS.io server says hello
        first, so a client still without one after its timeout talks to something else."""
        return self._pump.outbox.core.peer_hello is not None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """Transport details: ``peername``, ``sockname``, ``ssl_object``..."""
        transport = self._pump.outbox.transport
        return transport.get_extra_info(name, default) if transport is not None else default

    @property
    def principal(self) -> Any:
        """Server side: what the ``authenticate`` hook returned for this client (``None``: none)."""
        gate = self._pump.gate
        return gate.principal if gate is not None else None

    @property
    def authenticated(self) -> bool:
        """Client side: whether the server accepted this connection's credentials (§15.3)."""
        client_auth = self._pump.client_auth
        return client_auth is not None and client_auth.authenticated

    def __repr__(self) -> str:
        state = "closed" if self._pump.outbox.ended is not None else "open"
        return f"<rstreams.net.Connection {self.get_extra_info('peername')!r} {state}>"
