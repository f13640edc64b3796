"""What :meth:`Connection.events_received` returns: frames plus two synthetic events.

Received frames are surfaced as themselves, with two exceptions: ``OnNextPart`` ...
``OnNextLastPart`` are joined into one :class:`~rstreams.wire.frames.OnNext`, and signals
that were in flight after our cancel are dropped (PROTOCOL.md §5.4). The synthetic events:

* :class:`StreamError`: the core ended one subscription because the peer broke a
  per-stream rule; it already sent onError (we publish) or cancel (we subscribe).
* :class:`ConnectionClosed`: always the last event of a connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from rstreams.errors import RemoteProtocolError
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

__all__ = ["ConnectionClosed", "Event", "StreamError"]


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
class ConnectionClosed:
    """The connection is over; every subscription on it ended (PROTOCOL.md §9).

    ``error`` is ``None`` after an orderly goodbye exchange, else what the peer did wrong
    (including ending the input without a goodbye). ``reason`` is the goodbye text,
    the peer's if it said goodbye first.
    """

    error: RemoteProtocolError | None = None
    reason: str = ""


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
    | OnComplete
    | OnError
    | StreamError
    | ConnectionClosed
)
