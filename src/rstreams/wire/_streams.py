"""The subscriptions of one connection: ids, credit, element sizes, recently closed ids.

Theory of operation:

* Both sides may subscribe (PROTOCOL.md §5.1), so there are two tables. ``publishing``
  holds the peer's subscriptions on us, keyed by the peer's ids; ``subscribing`` holds
  ours on the peer, keyed by our ids. A frame's type says which table its id belongs to:
  subscribe/request/cancel name the sender's ids, onSubscribe/onNext*/onComplete/onError
  name the receiver's.
* Every state change goes through :data:`~rstreams.wire._state.STREAM_TRANSITIONS`
  (:func:`step`); a pair missing from it is a violation (received) or misuse (sent).
* A closed id is remembered (up to ``max_closed`` of them) so that signals that crossed
  its end are dropped quietly instead of being treated as misuse (rules 3.6/3.12).
* Nothing here writes bytes or fails the connection. A check on a received signal
  returns a verdict: the stream to act on, ``None`` (drop it quietly), or a
  :class:`Violation` saying what the peer did and whether it ends one subscription or
  the connection. A check on a signal we send raises :class:`LocalProtocolError` at once
  (you called me wrong) or returns ``None`` (the id closed recently: drop quietly).
"""

from __future__ import annotations

from collections import OrderedDict

from rstreams.demand import UNBOUNDED
from rstreams.errors import LocalProtocolError, RemoteProtocolError
from rstreams.wire._errors import DemandExceededError, RemoteInvalidDemandError, StreamStateError
from rstreams.wire._state import FLOWING, QUIET_STATES, STREAM_TRANSITIONS, Signal, StreamState
from rstreams.wire.frames import Subscribe, on_next_header

__all__ = ["REQUEST_KEEPS", "Stream", "StreamTable", "Violation", "new_stream", "step"]

# Enum members as module constants: reading one through its class costs ~70 ns.
_SUBSCRIBED = STREAM_TRANSITIONS[StreamState.IDLE, Signal.SUBSCRIBE]
_REQUEST = Signal.REQUEST
_CANCEL = Signal.CANCEL
_ON_SUBSCRIBE = Signal.ON_SUBSCRIBE
_ON_COMPLETE = Signal.ON_COMPLETE

REQUEST_KEEPS = frozenset(
    state
    for (state, signal), new in STREAM_TRANSITIONS.items()
    if signal is _REQUEST and new is state and state not in QUIET_STATES
)
"""States in which a request goes out and leaves the state as it is (read from the table):
the senders' fast path needs no transition for them."""

_STEPS = {
    signal: {state: new for (state, by), new in STREAM_TRANSITIONS.items() if by is signal}
    for signal in Signal
}
""":data:`STREAM_TRANSITIONS` by signal: ``_STEPS[signal][state]`` is ``STREAM_TRANSITIONS[state,
signal]`` without a key tuple to build (each stream's end steps here)."""


class Stream:
    """One subscription, seen from this end: made by :func:`new_stream` (the table makes its own
    with ``Stream()`` and sets every field as :func:`new_stream` does, without that call: two per
    request/response, one at each end; tests/wire/test_streams.py holds the two alike)."""

    __slots__ = ("credit", "element_size", "header", "next_element_id", "publishing", "sid", "state")

    sid: int
    publishing: bool
    state: StreamState
    credit: int
    """Elements the publisher may still send: granted minus delivered, saturating (§6)."""
    element_size: int
    header: bytes
    """Type byte + id, prebuilt for the onNext encoder once we send onSubscribe (publishing
    end only: a refused subscribe never needs it)."""
    next_element_id: int
    """The id the next element split into parts gets (publishing end, §8)."""


def new_stream(sid: int, publishing: bool, credit: int) -> Stream:
    """A new subscription ``sid`` (the peer's when ``publishing``), subscribed, with ``credit``."""
    st = Stream()
    st.sid = sid
    st.publishing = publishing
    st.state = _SUBSCRIBED
    st.credit = credit
    st.element_size = 0
    st.header = b""
    st.next_element_id = 0
    return st


class Violation:
    """A verdict: the peer broke a rule, and how much that ends (PROTOCOL.md §10).

    ``stream`` is the subscription it ends alone (with onError when we publish, cancel
    when we subscribe); ``None`` means the whole connection ends (goodbye).
    """

    __slots__ = ("error", "stream")

    def __init__(self, error: RemoteProtocolError, stream: Stream | None = None) -> None:
        self.error = error
        self.stream = stream


def step(st: Stream, signal: Signal) -> StreamState | None:
    """The state ``signal`` moves ``st`` to, or ``None`` if the table does not allow it (§5.2)."""
    return STREAM_TRANSITIONS.get((st.state, signal))


class StreamTable:
    """Both subscription tables of one connection and its recently closed ids."""

    __slots__ = ("_closed", "_max_closed", "_max_name", "_max_subscriptions", "publishing", "subscribing")

    def __init__(self, *, max_closed: int, max_subscriptions: int, max_name_length: int) -> None:
        self.publishing: dict[int, Stream] = {}
        """The peer's subscriptions on us, by the peer's ids (never rebound: callers keep it)."""
        self.subscribing: dict[int, Stream] = {}
        """Our subscriptions on the peer, by our ids (never rebound: callers keep it)."""
        # Oldest first. An OrderedDict: dropping the oldest is O(1) (a dict's next(iter(...)) walks
        # past every slot deleted at its front: ~2 us each under a stream of refused subscribes).
        self._closed: OrderedDict[int, None] = OrderedDict()
        """Recently closed ids, keyed ``sid`` (the peer's, we publish) or ``~sid`` (ours, a
        negative number): one int, not a (side, sid) tuple to build for every stream."""
        self._max_closed = max_closed
        self._max_subscriptions = max_subscriptions
        self._max_name = max_name_length

    # -- bookkeeping (a subscription opens in receive_subscribe or send_subscribe) -------------
    def close(self, st: Stream, signal: Signal) -> None:
        """``signal`` (a terminal) ends ``st``: it leaves its table and is remembered as closed."""
        st.state = _STEPS[signal][st.state]
        publishing, sid = st.publishing, st.sid
        del (self.publishing if publishing else self.subscribing)[sid]
        closed = self._closed  # _remember_closed, inlined: every stream ends here
        closed[sid if publishing else ~sid] = None
        if len(closed) > self._max_closed:
            closed.popitem(last=False)

    def _remember_closed(self, publishing: bool, sid: int) -> None:
        closed = self._closed
        closed[sid if publishing else ~sid] = None
        if len(closed) > self._max_closed:
            closed.popitem(last=False)

    def clear(self) -> None:
        """The connection ended: every subscription with it."""
        self.publishing.clear()
        self.subscribing.clear()

    # -- received by the publishing end: subscribe, request, cancel --------------------------
    def receive_subscribe(self, f: Subscribe) -> Stream | Violation | str:
        """The peer subscribes: the new stream, a violation, or the text of an onError refusing it."""
        sid = f.subscriber
        if sid in self.publishing:
            return Violation(
                StreamStateError(
                    f"subscribe reuses subscriber id {sid} before its subscription ended",
                    subscriber=sid,
                    section="5.3",
                )
            )
        self._closed.pop(sid, None)  # a new subscription, accepted or refused
        refusal = ""  # checked in the order JavaScript and Java check, with their texts
        if f.initial_demand > UNBOUNDED:
            refusal = RemoteInvalidDemandError(
                f"rule 3.9: initialDemand {f.initial_demand} is above 2**63 - 1"
            ).reason
        # UTF-8 takes at most 4 bytes a character: only a name that might be too long is encoded
        elif len(f.publisher) * 4 > self._max_name and len(f.publisher.encode()) > self._max_name:
            refusal = (
                f"refused: publisher name longer than max_name_length={self._max_name} bytes"
                " (PROTOCOL.md §11)"
            )
        elif len(self.publishing) >= self._max_subscriptions:
            refusal = (
                f"refused: at most max_subscriptions={self._max_subscriptions} subscriptions per connection"
                " (PROTOCOL.md §11)"
            )
        if refusal:
            self._remember_closed(True, sid)
            return refusal
        st = self.publishing[sid] = Stream()  # new_stream(sid, True, f.initial_demand), inlined
        st.sid = sid
        st.publishing = True
        st.state = _SUBSCRIBED
        st.credit = f.initial_demand
        st.element_size = 0
        st.header = b""
        st.next_element_id = 0
        return st

    def receive_request(self, sid: int, n: int) -> Stream | Violation | None:
        """The peer requests ``n``: its stream with the credit added, ``None`` when the id is not
        open (it crossed our terminal), or a violation of rule 3.9 that ends this stream."""
        st = self.publishing.get(sid)
        if st is None:
            return None
        if n == 0 or n > UNBOUNDED:
            what = "0" if n == 0 else f"{n} (a negative 64-bit number)"
            return Violation(
                RemoteInvalidDemandError(f"rule 3.9: request({what}) is illegal", subscriber=sid), st
            )
        st.state = STREAM_TRANSITIONS[st.state, _REQUEST]
        credit = st.credit + n  # demand.add, inlined: once per request received
        st.credit = credit if credit < UNBOUNDED else UNBOUNDED
        return st

    def receive_cancel(self, sid: int, *, close: bool = True) -> Stream | None:
        """The peer cancels: its stream, closed by our acknowledging onComplete (§5.4) when
        ``close``, else left CANCELLED until it is acknowledged; ``None`` when the id is not
        open (it crossed our terminal)."""
        st = self.publishing.get(sid)
        if st is None:
            return None
        st.state = STREAM_TRANSITIONS[st.state, _CANCEL]
        if close:
            self.close(st, _ON_COMPLETE)
        return st

    # -- received by the subscribing end: onSubscribe, onNext*, onComplete, onError ----------
    def ours(self, sid: int, signal: Signal) -> tuple[Stream, StreamState] | Violation:
        """Our subscription ``sid`` and the state ``signal`` moves it to, or the violation."""
        st = self.subscribing.get(sid)
        if st is None:
            return Violation(
                StreamStateError(f"{signal.value} for unknown subscriber id {sid}", subscriber=sid)
            )
        new = STREAM_TRANSITIONS.get((st.state, signal))
        if new is None:
            return Violation(
                StreamStateError(
                    f"{signal.value} for subscriber {sid} in state {st.state.name}", subscriber=sid
                )
            )
        return st, new

    @staticmethod
    def take(st: Stream, count: int) -> Violation | None:
        """Take ``count`` credits for received elements, or the violation if not granted (§6.3)."""
        if st.credit < count:
            return Violation(
                DemandExceededError(
                    f"{count} element(s) for subscriber {st.sid} exceed the outstanding demand "
                    f"of {st.credit}",
                    subscriber=st.sid,
                )
            )
        if st.credit != UNBOUNDED:
            st.credit -= count
        return None

    # -- sent: misuse raises, a recently closed id drops quietly -----------------------------
    def _gone(self, publishing: bool, sid: int, what: str) -> None:
        """``sid`` has no subscription: fine (None) if it closed recently, else misuse."""
        if (sid if publishing else ~sid) not in self._closed:
            side = "the peer's subscription" if publishing else "our subscription"
            raise LocalProtocolError(f"can't send {what}: {side} {sid} does not exist", subscriber=sid)

    def send_subscribe(self, sid: int, initial_demand: int) -> Stream:
        """We subscribe with our id ``sid``; it must be free (§5.3)."""
        st = self.subscribing.get(sid)
        if st is not None:
            raise LocalProtocolError(
                f"can't subscribe with id {sid}: still in use (state {st.state.name}); an id is free "
                f"again once its onComplete/onError has been received (PROTOCOL.md §5.3)",
                subscriber=sid,
            )
        self._closed.pop(~sid, None)  # a new subscription: no longer "recently closed"
        st = self.subscribing[sid] = Stream()  # new_stream(sid, False, initial_demand), inlined
        st.sid = sid
        st.publishing = False
        st.state = _SUBSCRIBED
        st.credit = initial_demand
        st.element_size = 0
        st.header = b""
        st.next_element_id = 0
        return st

    def send_request_or_cancel(self, sid: int, signal: Signal) -> Stream | None:
        """Our subscription ``sid`` if ``signal`` (request or cancel) goes out on it; ``None`` if
        it is a no-op: the subscription is cancelled (rules 3.6, 3.7) or closed recently."""
        st = self.subscribing.get(sid)
        if st is None:
            self._gone(False, sid, "Request" if signal is _REQUEST else "Cancel")
            return None
        if st.state in QUIET_STATES:
            return None
        st.state = STREAM_TRANSITIONS[st.state, signal]
        return st

    def send_on_subscribe(self, sid: int, element_size: int) -> Stream | None:
        """We accept the peer's subscription ``sid`` with ``element_size`` (§5.2, §7)."""
        st = self.publishing.get(sid)
        if st is None:
            self._gone(True, sid, "OnSubscribe")
            return None
        new = STREAM_TRANSITIONS.get((st.state, _ON_SUBSCRIBE))  # step(), inlined
        if new is None:
            raise LocalProtocolError(
                f"can't send OnSubscribe on subscriber {sid} in state {st.state.name}", subscriber=sid
            )
        st.state = new
        st.element_size = element_size
        st.header = on_next_header(sid)
        return st

    def send_elements(self, sid: int, count: int) -> Stream | None:
        """The peer's subscription ``sid`` if ``count`` elements may go out on it now (the
        slow path of every onNext sender); ``None`` if it closed recently."""
        st = self.publishing.get(sid)
        if st is None:
            self._gone(True, sid, "OnNext")
            return None
        if st.state is not FLOWING:
            raise LocalProtocolError(
                f"can't send OnNext on subscriber {sid} in state {st.state.name}: send OnSubscribe first",
                subscriber=sid,
            )
        if st.credit < count:
            raise LocalProtocolError(
                f"can't send {count} element(s) on subscriber {sid}: outstanding demand is {st.credit}",
                subscriber=sid,
            )
        return st

    def send_terminal(self, sid: int, signal: Signal, what: str) -> Stream | None:
        """We end the peer's subscription ``sid`` with ``signal``; ``None`` if it closed recently."""
        st = self.publishing.get(sid)
        if st is None:
            self._gone(True, sid, what)
            return None
        self.close(st, signal)  # SUBSCRIBED and ACTIVE both allow it
        return st
