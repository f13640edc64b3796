"""What :meth:`Connection.events_received` returns: frames plus synthetic events.

Received frames are surfaced as themselves, with two exceptions: ``OnNextPart`` ...
``OnNextLastPart`` are joined into one :class:`~rstreams.wire.frames.OnNext`, and signals
that were in flight after our cancel are dropped (PROTOCOL.md §5.4). The synthetic events:

* :class:`StreamError`: the core ended one subscription because the peer broke a
  per-stream rule; it already sent onError (we publish) or cancel (we subscribe).
* :class:`ExtensionReceived`: a message of an active extension (§4.4).
* :class:`Qualifier`: what an extension message said about the core message whose event
  follows it at once (an error code, §19); the core checked that it qualifies that message.
* :class:`~rstreams.wire.Metadata`: the entries of a subscribeMetadata (§18), a read-only
  mapping, for the :class:`~rstreams.wire.frames.Subscribe` event that follows it at once
  (the core checked that they are for that subscriber id); a subscribe the core refuses
  drops them.
* :class:`ConnectionClosed`: always the last event of a connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from rstreams.errors import RemoteProtocolError
from rstreams.wire._metadata import Metadata
from rstreams.wire.frames import (
    Cancel,
    ClientHello,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextPacked,
    OnSubscribe,
    Request,
    ServerHello,
    Subscribe,
)

__all__ = [
    "Answer",
    "ConnectionClosed",
    "Event",
    "ExtensionReceived",
    "OnNextBatch",
    "Qualifier",
    "StreamError",
]


class OnNextBatch:
    """Consecutive ``onNext`` elements for one subscriber, received in one read.

    Only emitted by a :class:`~rstreams.wire.Connection` made with ``batch_on_next=True``
    (the asyncio driver does, to skip building one :class:`OnNext` per element); it then
    stands for ``len(elements)`` ``OnNext`` events, in order, whose demand the core has
    already checked and taken. Not a frame: nothing sends it, and it is never empty.
    """

    __slots__ = ("elements", "subscriber")

    def __init__(self, subscriber: int, elements: list[bytes]) -> None:
        self.subscriber = subscriber
        self.elements = elements

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OnNextBatch):
            return NotImplemented
        return self.subscriber == other.subscriber and self.elements == other.elements

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"OnNextBatch(subscriber={self.subscriber}, elements=<{len(self.elements)} elements>)"


class Answer:
    """A request/response's whole answer: ``onSubscribe`` (elementSize 0), one ``onNext`` and
    ``onComplete`` of one subscriber, back to back in one read.

    Only emitted by a :class:`~rstreams.wire.Connection` made with ``answers=True`` (the
    asyncio driver does: it settles a request with one call instead of three); it then
    stands for those three events, in that order, which the core has already checked (the
    element within demand) and taken (the subscription is closed). An answer the core
    cannot take whole (a qualifier before it, no demand, ...) comes as its three events.
    Not a frame: nothing sends it.
    """

    __slots__ = ("element", "subscriber")

    def __init__(self, subscriber: int, element: bytes) -> None:
        self.subscriber = subscriber
        self.element = element

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Answer):
            return NotImplemented
        return self.subscriber == other.subscriber and self.element == other.element

    __hash__ = None  # type: ignore[assignment]  # like OnNextBatch's

    def __repr__(self) -> str:
        return f"Answer(subscriber={self.subscriber}, element={self.element!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """The core ended subscription ``subscriber`` because of ``error`` (PROTOCOL.md §10).

    ``publishing`` is ``True`` for a subscription the peer made on us (we sent onError
    to it; stop the local publisher) and ``False`` for one we made (we sent cancel; fail
    the local subscriber).
    """

    subscriber: int
    publishing: bool
    error: RemoteProtocolError


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionReceived:
    """A message of an active extension arrived (PROTOCOL.md §4.4); ``payload`` is its bytes.

    The core has already checked that the owning extension is active and done what the
    extension itself requires of it (it answers a keepalive ping with a pong, §14).
    """

    type: int
    payload: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Qualifier:
    """Extension message ``type`` qualified the core message whose event comes next.

    Emitted just before that event, for the same ``subscriber``, and only when the core
    accepted the message (a signal dropped after our cancel drops its qualifiers too).
    ``value`` is the decoded payload: the ``str`` media type of contentType (§17), an ``int``
    error code (§19), ``None`` for a channel mark (§21.3). (subscribeMetadata, §18, comes as a
    :class:`~rstreams.wire.Metadata` event of its own.)
    """

    type: int
    subscriber: int
    value: object


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionClosed:
    """The connection is over; every subscription on it ended (PROTOCOL.md §9).

    ``error`` is ``None`` after an orderly goodbye exchange, else what the peer did wrong
    (including ending the input without a goodbye). ``reason`` is the goodbye text,
    the peer's if it said goodbye first.
    """

    error: RemoteProtocolError | None = None
    reason: str = ""
    code: int | None = None
    """The goodbye's code (extension error-codes, §19): the peer's if it said goodbye first,
    else ours; ``None`` without one."""


Event: TypeAlias = (
    ClientHello
    | ServerHello
    | Goodbye
    | Subscribe
    | Request
    | Cancel
    | OnSubscribe
    | OnNext
    | OnNextPacked
    | OnNextBatch
    | Answer
    | OnComplete
    | OnError
    | StreamError
    | ExtensionReceived
    | Qualifier
    | Metadata
    | ConnectionClosed
)
