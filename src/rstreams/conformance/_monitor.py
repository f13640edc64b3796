"""The protocol monitor: checks every frame the endpoint under test sends, in every case.

The driver is the client and the subscriber, so the monitor knows what the server may
send: it tracks each subscription the driver opened (the demand it granted, whether it
cancelled) and records a *violation*, with the PROTOCOL.md section it breaks, when the
server

* sends anything but serverHello (or goodbye) first, or a hello twice (§4.1, §4.2);
* sends anything after its goodbye (§9.1);
* signals an id the driver has not subscribed, or out of order: onNext before
  onSubscribe, a second onSubscribe, anything after onComplete/onError (§5.2, §5.4);
* sends more elements than the driver asked for: onNext, the first part of a split
  element, or onNextPacked's count (§6.3); saturation at 2**63 - 1 is honoured (§6.1);
* completes with a split element unfinished, or joins one to the wrong size (§7, §8);
* sends malformed bytes (§2, §3).

When the server subscribes to the driver (the ``rv`` cases, through ``conformance/echo``),
the monitor also tracks each subscription the server opened (a :class:`ServedView`) and
records a violation when the server, as a subscriber,

* subscribes with an id still open on the driver's side (§5.3);
* sends request or cancel for an id it never subscribed with (§5.2);
* requests 0 or 2**63 or more (§6.2).

Cases add their own expectations; a case passes only if the monitor saw no violation.
The monitor also joins split elements, so cases read whole elements per subscription.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias, cast

from rstreams.demand import UNBOUNDED, add
from rstreams.wire import (
    Cancel,
    ClientHello,
    Frame,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
    Request,
    ServerHello,
    Subscribe,
)

__all__ = ["Monitor", "ServedView", "StreamView"]

_StreamFrame: TypeAlias = (
    OnSubscribe | OnNext | OnNextPacked | OnNextPart | OnNextLastPart | OnComplete | OnError
)
_STREAM_FRAMES = frozenset(
    {OnSubscribe, OnNext, OnNextPacked, OnNextPart, OnNextLastPart, OnComplete, OnError}
)


@dataclass
class StreamView:
    """One subscription the driver opened, as the server has answered it so far."""

    sid: int
    publisher: str
    granted: int
    """Outstanding demand: granted minus elements received, saturating at 2**63 - 1 (§6.1)."""
    subscribed: bool = False
    element_size: int = 0
    cancelled: bool = False
    elements: list[bytes] = field(default_factory=list)
    """Whole elements: onNext, unpacked onNextPacked, joined parts."""
    frames: list[Frame] = field(default_factory=list)
    """Every frame the server sent for this subscription, as sent (parts and packs too)."""
    parts: dict[int, bytearray] = field(default_factory=dict)
    terminal: OnComplete | OnError | None = None

    @property
    def open(self) -> bool:
        """Whether the subscription has not received its terminal signal yet."""
        return self.terminal is None

    @property
    def error(self) -> str | None:
        """The onError text, if it ended with onError."""
        return self.terminal.error if isinstance(self.terminal, OnError) else None


@dataclass
class ServedView:
    """One subscription the server opened on the driver, as the driver has served it so far."""

    sid: int
    """The server's id (its own namespace, §5.1)."""
    publisher: str
    granted: int
    """Outstanding demand the server granted: initialDemand plus requests minus elements sent."""
    requests: list[int] = field(default_factory=list)
    """Every demand the server signalled, initialDemand first."""
    cancelled: bool = False
    """The server sent cancel."""
    subscribed: bool = False
    """The driver sent onSubscribe."""
    ended: bool = False
    """The driver sent onComplete or onError (a cancel's acknowledgement included)."""
    sent: int = 0
    """Elements the driver sent."""


class Monitor:
    """Checks the server's frames against the driver's own (see the module docstring)."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.streams: dict[int, StreamView] = {}
        self.history: list[StreamView] = []
        """Every subscription ever opened, in order (ids may be reused)."""
        self.server_hello: ServerHello | None = None
        self.goodbye: Goodbye | None = None
        self.server_subscriptions: dict[int, Subscribe] = {}
        """The latest subscribe the server sent for each of its ids."""
        self.served: dict[int, ServedView] = {}
        """Subscriptions the server opened on the driver, by the server's id (the latest per id)."""
        self.served_history: list[ServedView] = []
        self.other: list[Frame] = []
        """Frames the server sent that belong to no subscription: extension messages."""
        self._first = True

    def violation(self, text: str) -> None:
        """Record a broken rule; ``text`` names it and its section."""
        self.violations.append(text)

    # -- what the driver sends -------------------------------------------------------------
    def sent(self, frame: Frame) -> None:
        """Account for a frame the driver sent (raw bytes are not accounted)."""
        if isinstance(frame, Subscribe):
            view = self.streams.get(frame.subscriber)
            if view is not None and view.open:
                return  # a deliberate duplicate: the server must answer with goodbye (§5.3)
            invalid = frame.initial_demand > UNBOUNDED  # an invalid initialDemand grants nothing
            view = StreamView(frame.subscriber, frame.publisher, 0 if invalid else frame.initial_demand)
            self.streams[frame.subscriber] = view
            self.history.append(view)
        elif isinstance(frame, Request):
            view = self.streams.get(frame.subscriber)
            if view is None or not view.open:
                return
            if 0 < frame.demand <= UNBOUNDED:  # an invalid request (§6.2) grants nothing
                view.granted = add(view.granted, frame.demand)
        elif isinstance(frame, Cancel):
            view = self.streams.get(frame.subscriber)
            if view is not None:
                view.cancelled = True
        elif type(frame) in _STREAM_FRAMES:
            self._served_frame(cast(_StreamFrame, frame))

    def _served_frame(self, frame: _StreamFrame) -> None:
        served = self.served.get(frame.subscriber)
        if served is None or served.ended:
            return  # deliberately wrong ids are the case's business
        if isinstance(frame, OnSubscribe):
            served.subscribed = True
        elif isinstance(frame, OnComplete | OnError):
            served.ended = True
        else:
            # a split element counts once, at its last part
            count = frame.count if isinstance(frame, OnNextPacked) else int(not isinstance(frame, OnNextPart))
            served.sent += count
            if served.granted != UNBOUNDED:
                served.granted = max(0, served.granted - count)

    # -- what the server sends -------------------------------------------------------------
    def received(self, frame: Frame) -> None:
        """Check one frame from the server."""
        if self._first:
            self._first = False
            if not isinstance(frame, ServerHello | Goodbye):
                self.violation(f"§4.1: the first message must be serverHello, got {type(frame).__name__}")
        if self.goodbye is not None:
            self.violation(f"§9.1: {type(frame).__name__} after the server's goodbye")
            return
        if isinstance(frame, ServerHello):
            if self.server_hello is not None:
                self.violation("§4.1: a second serverHello")
            elif frame.version != 0:
                self.violation(f"§4.2: serverHello version {frame.version}, expected 0")
            self.server_hello = frame
        elif isinstance(frame, ClientHello):
            self.violation("§4.1: the server sent a clientHello")
        elif isinstance(frame, Goodbye):
            self.goodbye = frame
        elif isinstance(frame, Subscribe):
            self._server_subscribe(frame)
        elif isinstance(frame, Request | Cancel):
            self._server_signal(frame)
        elif type(frame) in _STREAM_FRAMES:
            self._stream_frame(cast(_StreamFrame, frame))
        else:
            self.other.append(frame)  # an extension message (§4.4): the cases that use one judge it

    def _server_subscribe(self, frame: Subscribe) -> None:
        self.server_subscriptions[frame.subscriber] = frame
        old = self.served.get(frame.subscriber)
        if old is not None and not old.ended:
            self.violation(
                f"§5.3: the server subscribed with id {frame.subscriber}, still open on the driver's side "
                f"(the driver has not sent onComplete/onError for it)"
            )
        view = ServedView(frame.subscriber, frame.publisher, 0, [frame.initial_demand])
        self._server_demand(view, frame.initial_demand, allow_zero=True)
        self.served[frame.subscriber] = view
        self.served_history.append(view)

    def _server_signal(self, frame: Request | Cancel) -> None:
        view = self.served.get(frame.subscriber)
        if view is None:
            self.violation(
                f"§5.2: {type(frame).__name__} for id {frame.subscriber}, which the server never subscribed"
            )
            return
        if isinstance(frame, Cancel):
            view.cancelled = True
        elif not view.ended:
            view.requests.append(frame.demand)
            self._server_demand(view, frame.demand, allow_zero=False)

    def _server_demand(self, view: ServedView, n: int, *, allow_zero: bool) -> None:
        if n > UNBOUNDED or (n == 0 and not allow_zero):
            self.violation(f"§6.2: the server requested {n} on its subscription {view.sid} (rule 3.9)")
            return
        view.granted = add(view.granted, n)

    def _stream_frame(self, frame: _StreamFrame) -> None:
        name = type(frame).__name__
        view = self.streams.get(frame.subscriber)
        if view is None or not view.open:
            state = "an id the driver never subscribed" if view is None else "a subscription that ended"
            self.violation(f"§5.2: {name} for subscriber {frame.subscriber}, {state}")
            return
        view.frames.append(frame)
        if isinstance(frame, OnSubscribe):
            if view.subscribed:
                self.violation(f"§5.2: a second onSubscribe for subscriber {view.sid}")
            view.subscribed = True
            view.element_size = frame.element_size
        elif isinstance(frame, OnComplete | OnError):
            if view.parts and isinstance(frame, OnComplete) and not view.cancelled:
                self.violation(f"§8: onComplete for subscriber {view.sid} with an unfinished split element")
            view.parts.clear()
            view.terminal = frame
        elif isinstance(frame, OnNext):
            if self._take(view, 1, name):
                view.elements.append(frame.element)
        elif isinstance(frame, OnNextPacked):
            if self._take(view, frame.count, name):
                view.elements.extend(frame.split())
        else:
            self._part(view, frame)

    def _take(self, view: StreamView, count: int, name: str) -> bool:
        if not view.subscribed:
            self.violation(f"§5.2: {name} for subscriber {view.sid} before its onSubscribe")
            return False
        if count > view.granted:
            self.violation(
                f"§6.3: {name} with {count} element(s) for subscriber {view.sid} exceeds "
                f"the outstanding demand of {view.granted}"
            )
            view.granted = 0
            return True
        if view.granted != UNBOUNDED:
            view.granted -= count
        return True

    def _part(self, view: StreamView, frame: OnNextPart | OnNextLastPart) -> None:
        buf = view.parts.get(frame.element_id)
        if buf is None:
            if not self._take(view, 1, "the first part of a split element"):
                return
            buf = view.parts[frame.element_id] = bytearray()
        buf += frame.data
        if isinstance(frame, OnNextLastPart):
            del view.parts[frame.element_id]
            if view.element_size and len(buf) != view.element_size:
                self.violation(
                    f"§7: split element of {len(buf)} bytes for subscriber {view.sid}, "
                    f"whose elementSize is {view.element_size}"
                )
            view.elements.append(bytes(buf))
