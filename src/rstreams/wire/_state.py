"""Every rule about which signal may come when: the connection and subscription state machines.

Theory of operation (PROTOCOL.md §5.2 and §12 are generated from these tables):

*Connection.* Each side sends its hello at once (the handshake is "loose", §4.1) and may
send further frames before the peer's hello arrives (optimistic sending, §4.3). The first
frame received must be the peer's hello; a second hello is a violation. A goodbye, sent
or received, ends every subscription (§9). The side that sends goodbye first waits in
CLOSING for the answering goodbye; the side that receives it answers and is CLOSED at
once. Frames received while CLOSING are discarded. A protocol violation sends a goodbye
naming the broken section and goes straight to CLOSED.

*Subscription.* One machine per subscription, identical on both ends (role-agnostic, like
h11): both ends feed it every signal of that subscription, sent or received, and since
each signal type travels in one direction only (subscribe/request/cancel from subscriber
to publisher, onSubscribe/onNext*/onComplete/onError back), the same table describes
both. ``(state, signal)`` pairs missing from :data:`STREAM_TRANSITIONS` are violations:
raised locally as ``LocalProtocolError`` when we send, or reported as a
``RemoteProtocolError`` when we receive.

Two refinements, both here so that every rule lives in this file:

* A cancelled subscription stays CANCELLED until the publisher's terminal signal arrives:
  the publisher acknowledges every cancel with onComplete (§5.4), so signals that were in
  flight are recognised and dropped (:data:`QUIET_STATES`), and the id is free for reuse
  only after that acknowledgement (§5.3).
* A publisher may receive request/cancel for an id it already closed, because they
  crossed its onComplete/onError; such signals for ids with no open subscription are
  ignored (:data:`IGNORED_WHEN_UNKNOWN`).
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "CONNECTION_TRANSITIONS",
    "FLOWING",
    "IGNORED_WHEN_UNKNOWN",
    "QUIET_STATES",
    "STREAM_TRANSITIONS",
    "ConnectionInput",
    "ConnectionState",
    "Signal",
    "StreamState",
]


class ConnectionState(Enum):
    """Where a connection is in its life (§12)."""

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is Python code (hot tables)

    AWAITING_HELLO = "awaiting hello"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class ConnectionInput(Enum):
    """What happens to a connection."""

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is Python code (hot tables)

    SEND_FRAME = "send a frame"
    RECV_HELLO = "receive the peer's hello"
    RECV_FRAME = "receive another frame"
    SEND_GOODBYE = "send goodbye"
    RECV_GOODBYE = "receive goodbye"
    RECV_EOF = "end of input"
    PROTOCOL_ERROR = "protocol violation detected"


_C = ConnectionState
_I = ConnectionInput

CONNECTION_TRANSITIONS: dict[tuple[ConnectionState, ConnectionInput], ConnectionState] = {
    (_C.AWAITING_HELLO, _I.RECV_HELLO): _C.OPEN,
    (_C.AWAITING_HELLO, _I.SEND_FRAME): _C.AWAITING_HELLO,  # optimistic sending, §4.3
    (_C.AWAITING_HELLO, _I.SEND_GOODBYE): _C.CLOSING,
    (_C.AWAITING_HELLO, _I.RECV_GOODBYE): _C.CLOSED,  # answered with goodbye
    (_C.AWAITING_HELLO, _I.RECV_EOF): _C.CLOSED,
    (_C.AWAITING_HELLO, _I.PROTOCOL_ERROR): _C.CLOSED,
    (_C.OPEN, _I.SEND_FRAME): _C.OPEN,
    (_C.OPEN, _I.RECV_FRAME): _C.OPEN,
    (_C.OPEN, _I.SEND_GOODBYE): _C.CLOSING,
    (_C.OPEN, _I.RECV_GOODBYE): _C.CLOSED,  # answered with goodbye
    (_C.OPEN, _I.RECV_EOF): _C.CLOSED,
    (_C.OPEN, _I.PROTOCOL_ERROR): _C.CLOSED,
    (_C.CLOSING, _I.RECV_HELLO): _C.CLOSING,
    (_C.CLOSING, _I.RECV_FRAME): _C.CLOSING,  # discarded: goodbye closed every stream
    (_C.CLOSING, _I.RECV_GOODBYE): _C.CLOSED,  # the answer, or a simultaneous goodbye, §9.2
    (_C.CLOSING, _I.RECV_EOF): _C.CLOSED,
    (_C.CLOSING, _I.PROTOCOL_ERROR): _C.CLOSED,
}
"""Missing pairs: (AWAITING_HELLO, RECV_FRAME) and (OPEN, RECV_HELLO) are handshake
violations; (CLOSING, SEND_*) is local misuse; nothing leaves CLOSED."""


class StreamState(Enum):
    """Where a subscription is; IDLE means the id has no subscription (§5.2)."""

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is Python code (hot tables)

    IDLE = "idle"
    SUBSCRIBED = "subscribed"
    ACTIVE = "active"
    CANCELLED = "cancelled"
    CLOSED = "closed"


class Signal(Enum):
    """The signals of a subscription; parts count as ON_NEXT."""

    __hash__ = object.__hash__  # members are singletons; Enum's own __hash__ is Python code (hot tables)

    SUBSCRIBE = "subscribe"
    REQUEST = "request"
    CANCEL = "cancel"
    ON_SUBSCRIBE = "onSubscribe"
    ON_NEXT = "onNext"
    ON_COMPLETE = "onComplete"
    ON_ERROR = "onError"


_S = StreamState
_G = Signal

STREAM_TRANSITIONS: dict[tuple[StreamState, Signal], StreamState] = {
    (_S.IDLE, _G.SUBSCRIBE): _S.SUBSCRIBED,
    (_S.SUBSCRIBED, _G.REQUEST): _S.SUBSCRIBED,  # demand may be added before onSubscribe
    (_S.SUBSCRIBED, _G.CANCEL): _S.CANCELLED,
    (_S.SUBSCRIBED, _G.ON_SUBSCRIBE): _S.ACTIVE,
    (_S.SUBSCRIBED, _G.ON_COMPLETE): _S.CLOSED,  # e.g. the acknowledgement of a cancel
    (_S.SUBSCRIBED, _G.ON_ERROR): _S.CLOSED,  # refusal: unknown publisher, limits
    (_S.ACTIVE, _G.REQUEST): _S.ACTIVE,
    (_S.ACTIVE, _G.CANCEL): _S.CANCELLED,
    (_S.ACTIVE, _G.ON_NEXT): _S.ACTIVE,  # only within granted demand, §6.3
    (_S.ACTIVE, _G.ON_COMPLETE): _S.CLOSED,
    (_S.ACTIVE, _G.ON_ERROR): _S.CLOSED,
    (_S.CANCELLED, _G.REQUEST): _S.CANCELLED,  # no-op (rule 3.6)
    (_S.CANCELLED, _G.CANCEL): _S.CANCELLED,  # no-op (rule 3.7)
    (_S.CANCELLED, _G.ON_SUBSCRIBE): _S.CANCELLED,  # in flight: dropped
    (_S.CANCELLED, _G.ON_NEXT): _S.CANCELLED,  # in flight: dropped
    (_S.CANCELLED, _G.ON_COMPLETE): _S.CLOSED,  # the acknowledgement, §5.4
    (_S.CANCELLED, _G.ON_ERROR): _S.CLOSED,
    (_S.CLOSED, _G.SUBSCRIBE): _S.SUBSCRIBED,  # id reuse after the terminal signal, §5.3
}

QUIET_STATES = frozenset({StreamState.CANCELLED})
"""Publisher signals received in these states are checked but not surfaced."""

IGNORED_WHEN_UNKNOWN = frozenset({Signal.REQUEST, Signal.CANCEL})
"""Signals a publisher ignores for an id with no open subscription (they crossed its terminal)."""

FLOWING: StreamState = next(
    state
    for (state, signal), new in STREAM_TRANSITIONS.items()
    if signal is Signal.ON_NEXT and new is state and state not in QUIET_STATES
)
"""The one state in which elements flow: onNext keeps it there and is surfaced (ACTIVE).
Read from the table once, so the per-element checks are one identity comparison."""
