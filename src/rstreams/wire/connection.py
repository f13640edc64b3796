"""One RS.io connection, sans I/O: bytes in -> events out, frames in -> bytes out.

Usage by a transport (PROTOCOL.md is the rulebook; section numbers below refer to it)::

    conn = Connection(Side.CLIENT)          # our hello is queued at once
    write(conn.data_to_send())
    on bytes:  conn.receive_data(chunk)
    on EOF:    conn.receive_eof()
    after any receive_* or send: write(conn.data_to_send()); handle(conn.events_received())

Subscriptions live in two tables because both sides may subscribe (§5.1): ``_subscribing``
holds the ones *we* made, keyed by our ids; ``_publishing`` holds the ones the peer made on
us, keyed by the peer's ids. A frame's type says which table its id belongs to:
subscribe/request/cancel name the sender's ids, onSubscribe/onNext*/onComplete/onError name
the receiver's.

Errors: calling this object wrong raises (``LocalProtocolError``, ``ValueError``) and
changes nothing. A peer's violation never raises out of ``receive_data``: a per-stream
one ends that subscription (onError or cancel sent, :class:`StreamError` emitted), a
connection one queues a goodbye naming the section and emits :class:`ConnectionClosed`.
Once closed, ``receive_data`` and ``send`` raise :class:`ConnectionBrokenError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any

from rstreams.demand import UNBOUNDED, add
from rstreams.errors import ConnectionBrokenError, LocalProtocolError, RemoteProtocolError
from rstreams.wire._errors import (
    AbruptCloseError,
    DemandExceededError,
    ExtensionError,
    HandshakeError,
    LimitExceededError,
    RemoteInvalidDemandError,
    StreamStateError,
    UnsupportedVersionError,
)
from rstreams.wire._parser import FrameParser
from rstreams.wire._state import (
    CONNECTION_TRANSITIONS,
    QUIET_STATES,
    STREAM_TRANSITIONS,
    ConnectionInput,
    ConnectionState,
    Signal,
    StreamState,
)
from rstreams.wire._varint import MAX_U64, encode_varint
from rstreams.wire.config import ConnectionConfig
from rstreams.wire.events import ConnectionClosed, Event, ExtensionReceived, OnNextBatch, StreamError
from rstreams.wire.extensions import BY_TYPE, KEEPALIVE_PAYLOAD_SIZE, PING, PONG
from rstreams.wire.frames import (
    PROTOCOL_VERSION,
    Cancel,
    ClientHello,
    ExtensionMessage,
    Frame,
    FrameType,
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
    encode_into,
    make_on_next,
)

__all__ = ["Connection", "Side"]

_OPEN = ConnectionState.OPEN
_CLOSED = ConnectionState.CLOSED
_ACTIVE = StreamState.ACTIVE
_CANCELLED = StreamState.CANCELLED
_V = encode_varint
_BYTE = [bytes((i,)) for i in range(256)]
_PACKED = bytes((FrameType.ON_NEXT_PACKED,))
_COMPLETE = bytes((FrameType.ON_COMPLETE,))
_LARGE = 16 * 1024
"""Payloads at least this big are handed to the transport as their own chunk (no copy)."""


class Side(Enum):
    """Which end of the transport we are: the one that opened it, or the one that accepted."""

    CLIENT = "client"
    SERVER = "server"


class _Stream:
    """One subscription, seen from this end."""

    __slots__ = ("credit", "element_size", "header", "next_element_id", "parts", "publishing", "state")

    def __init__(self, sid: int, publishing: bool, credit: int) -> None:
        self.publishing = publishing
        self.state = StreamState.SUBSCRIBED
        self.credit = credit
        """Elements the publisher may still send: granted minus delivered, saturating (§6)."""
        self.element_size = 0
        self.header = bytes((FrameType.ON_NEXT,)) + _V(sid)
        """Type byte + id, prebuilt for the onNext encoder (publishing end)."""
        self.next_element_id = 0
        self.parts: dict[int, bytearray] = {}
        """Element id -> bytes received so far of a split element (subscribing end)."""


class _Split:
    """An element being sent as parts; ``offset`` is how much has gone out (§8)."""

    __slots__ = ("data", "element_id", "offset", "sid")

    def __init__(self, sid: int, element_id: int, data: bytes) -> None:
        self.sid = sid
        self.element_id = element_id
        self.data = data
        self.offset = 0


class Connection:
    """The RS.io protocol state of one connection; see the module docstring."""

    def __init__(
        self, side: Side, config: ConnectionConfig | None = None, *, batch_on_next: bool = False
    ) -> None:
        """``batch_on_next=True``: consecutive in-demand onNext frames of one subscriber
        are reported as one :class:`OnNextBatch` event instead of one :class:`OnNext`
        each (cheaper for a driver that delivers them in a loop)."""
        self.side = side
        self.config = config = config or ConnectionConfig()
        self._state = ConnectionState.AWAITING_HELLO
        self._parser = FrameParser(
            max_element_size=config.max_element_size,
            max_string_length=config.max_string_length,
            max_extensions=config.max_extensions,
            batch_on_next=batch_on_next,
        )
        self._events: list[Event] = []
        self._out = bytearray()
        self._chunks: list[bytes] = []
        self._backlogs: dict[int, deque[bytes | _Split]] = {}
        self._subscribing: dict[int, _Stream] = {}
        self._publishing: dict[int, _Stream] = {}
        self._closed: dict[tuple[bool, int], None] = {}
        self._partial_count = 0
        self._partial_bytes = 0
        self._error: RemoteProtocolError | None = None
        self.extensions: frozenset[int] = frozenset()
        """Active extensions: ours ∩ the peer's hello (§4.4); empty until the peer's hello."""
        self.peer_hello: ClientHello | ServerHello | None = None
        hello_cls = ClientHello if side is Side.CLIENT else ServerHello
        self._peer_hello_cls: type[ClientHello | ServerHello] = (
            ServerHello if side is Side.CLIENT else ClientHello
        )
        encode_into(self._out, hello_cls(extensions=tuple(sorted(config.extensions))))
        self._handlers: dict[type[Frame], Callable[[Any], None]] = {
            ClientHello: self._recv_hello,
            ServerHello: self._recv_hello,
            Goodbye: self._recv_goodbye,
            Subscribe: self._recv_subscribe,
            Request: self._recv_request,
            Cancel: self._recv_cancel,
            OnSubscribe: self._recv_on_subscribe,
            OnNext: self._recv_on_next,
            OnNextPacked: self._recv_on_next_packed,
            OnNextPart: self._recv_part,
            OnNextLastPart: self._recv_part,
            OnComplete: self._recv_terminal,
            OnError: self._recv_terminal,
            ExtensionMessage: self._recv_extension,
        }

    # -- state ---------------------------------------------------------------------------------
    @property
    def state(self) -> ConnectionState:
        """The connection's state (§12)."""
        return self._state

    @property
    def error(self) -> RemoteProtocolError | None:
        """Why the connection closed, if the peer broke the protocol."""
        return self._error

    def credit(self, subscriber: int) -> int:
        """Elements we may still send on the peer's subscription ``subscriber`` (0 if not open)."""
        st = self._publishing.get(subscriber)
        return st.credit if st is not None and st.state is _ACTIVE else 0

    def id_in_use(self, subscriber: int) -> bool:
        """Whether our subscriber id is still in use (§5.3): subscribed, and its onComplete or
        onError not yet received (after our cancel, until the publisher's acknowledgement)."""
        return subscriber in self._subscribing

    def subscriptions(self, *, publishing: bool) -> dict[int, StreamState]:
        """Open subscriptions: the peer's on us (``publishing=True``) or ours on the peer."""
        table = self._publishing if publishing else self._subscribing
        return {sid: st.state for sid, st in table.items()}

    # -- input -------------------------------------------------------------------------------
    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes read from the transport; then call :meth:`data_to_send` and :meth:`events_received`.

        Raises:
            ConnectionBrokenError: the connection is already closed.
        """
        if self._state is _CLOSED:
            raise self._broken()
        if self._receive_frames(self._parser.feed(data)):
            return
        if self._parser.error is not None:
            self._fail(self._parser.error)

    def _receive_frames(self, frames: list[Frame | OnNextBatch]) -> bool:
        """Handle parsed frames in order; ``True`` once the connection is closed."""
        events = self._events
        subs = self._subscribing
        handlers = self._handlers
        for f in frames:
            if type(f) is OnNextBatch:  # the batched hot path: consecutive elements within demand
                sid = f.subscriber
                elements = f.elements
                st = subs.get(sid)
                if (
                    st is not None
                    and st.state is _ACTIVE
                    and st.credit >= len(elements)
                    and self._state is _OPEN
                ):
                    if st.credit != UNBOUNDED:
                        st.credit -= len(elements)
                    events.append(f)
                    continue
                # Not all within demand (or not open): judge element by element, as OnNext frames.
                if self._receive_frames([make_on_next(sid, element) for element in elements]):
                    return True
                continue
            if self._state is not _OPEN:
                self._recv_not_open(f)  # type: ignore[arg-type]  # OnNextBatch was handled above
                if self._state is _CLOSED:
                    return True
                continue
            if type(f) is OnNext:  # the hot path: an element within demand
                st = subs.get(f.subscriber)
                if st is not None and st.state is _ACTIVE and st.credit:
                    if st.credit != UNBOUNDED:
                        st.credit -= 1
                    events.append(f)
                    continue
            handlers[f.__class__](f)  # type: ignore[index]  # OnNextBatch was handled above
            if self._state is _CLOSED:
                return True
        return False

    def receive_eof(self) -> None:
        """The transport's input ended. Idempotent; a no-op once closed."""
        if self._state is _CLOSED:
            return
        error = self._parser.eof()
        if error is not None:
            self._fail(error)
        elif self._state is ConnectionState.CLOSING:
            self._finish(ConnectionInput.RECV_EOF, None, "")
        else:
            self._fail(AbruptCloseError("input ended without a goodbye"))

    def events_received(self) -> list[Event]:
        """Everything that happened since the last call, in order; the list is handed over."""
        events = self._events
        self._events = []
        return events

    # -- output --------------------------------------------------------------------------------
    @property
    def has_data_to_send(self) -> bool:
        """Whether :meth:`data_to_send` would return anything (split parts may remain, §8)."""
        return bool(self._out or self._chunks or self._backlogs)

    def data_to_send(self, limit: int = 1 << 20) -> list[bytes]:
        """Bytes to write, in order, as few chunks as possible (write them with one ``writelines``).

        Parts of split elements are interleaved round-robin, one part per subscription per
        round, until about ``limit`` bytes are collected; call again while
        :attr:`has_data_to_send` is true and the transport accepts more.
        """
        if self._backlogs:
            self._drain_backlogs(limit)
        if self._out:
            self._chunks.append(bytes(self._out))
            self._out.clear()
        chunks = self._chunks
        self._chunks = []
        return chunks

    def send(self, frame: Frame) -> None:
        """Queue ``frame`` for the peer, after checking it is allowed now.

        Hellos are sent automatically and parts are made by splitting, so neither may be
        sent here. Signals for a subscription that closed recently (the peer cancelled,
        or it already ended) are dropped quietly: they raced with its end (rules 3.6/3.12).

        Raises:
            LocalProtocolError: the frame breaks the protocol (no demand, wrong state,
                unknown id, goodbye already sent); nothing was queued.
            ConnectionBrokenError: the connection is closed.
        """
        self._check_can_send()
        if type(frame) is OnNext:
            self.send_on_next(frame.subscriber, frame.element)
        elif type(frame) is Request:
            self.send_request(frame.subscriber, frame.demand)
        elif type(frame) is Subscribe:
            self._send_subscribe(frame)
        elif type(frame) is Cancel:
            self._send_cancel(frame.subscriber)
        elif type(frame) is OnSubscribe:
            self._send_on_subscribe(frame)
        elif type(frame) is OnNextPacked:
            self._send_on_next_packed(frame)
        elif type(frame) is OnComplete or type(frame) is OnError:
            self._send_terminal(frame)
        elif type(frame) is Goodbye:
            self._send_goodbye(frame)
        elif type(frame) is ExtensionMessage:
            self.send_extension(frame.type, frame.payload)
        else:
            raise LocalProtocolError(
                f"{type(frame).__name__} is not sent by hand: hellos go out automatically and parts are "
                f"made by sending an OnNext larger than split_threshold"
            )

    def close(self, reason: str = "") -> None:
        """Say goodbye (§9.1): ends every subscription; the peer answers with its goodbye."""
        self.send(Goodbye(reason=reason))

    def send_extension(self, type: int, payload: bytes = b"") -> None:  # noqa: A002  # the field's name
        """Send a message of an extension (§4.4): ``type`` in 0x80..0xFF, ``payload`` its bytes.

        Raises:
            LocalProtocolError: the extension owning ``type`` is not active on this
                connection (both hellos must list it; nothing is active before the peer's
                hello), or no extension owns ``type``; nothing was queued.
            ValueError / TypeError: ``type`` or ``payload`` is malformed.
            ConnectionBrokenError: the connection is closed.
        """
        message = ExtensionMessage(type=type, payload=payload)  # validates
        self._check_can_send()
        owner = BY_TYPE.get(type)
        if owner is None:
            raise LocalProtocolError(
                f"can't send message type 0x{type:02x}: no extension owns it (PROTOCOL.md §4.4)"
            )
        if owner.id not in self.extensions:
            when = "" if self._state is _OPEN else " (the peer's hello has not arrived yet)"
            raise LocalProtocolError(
                f"can't send message type 0x{type:02x}: extension {owner} is not active on this "
                f"connection{when}; it is active only when both hellos list it (PROTOCOL.md §4.4)"
            )
        encode_into(self._out, message)

    def send_on_next(self, subscriber: int, element: bytes) -> None:
        """Send one element on the peer's subscription ``subscriber``; consumes one credit.

        Elements above ``split_threshold`` go out as parts (§8). Raises like :meth:`send`.
        """
        st = self._publishing.get(subscriber)
        if st is None or st.state is not _ACTIVE or not st.credit or self._state is not _OPEN:
            if not self._on_next_allowed(subscriber, st, 1):
                return
            assert st is not None
        size = len(element)
        if st.element_size and size != st.element_size:
            raise LocalProtocolError(
                f"can't send OnNext on subscriber {subscriber}: elements are {st.element_size} bytes "
                f"(its onSubscribe elementSize), got {size}",
                subscriber=subscriber,
            )
        if st.credit != UNBOUNDED:
            st.credit -= 1
        if size > self.config.split_threshold:
            self._split(subscriber, st, element)
            return
        if subscriber in self._backlogs:  # keep order behind a split element
            out = bytearray()
            self._write_on_next(out, st, element, size)
            self._backlogs[subscriber].append(bytes(out))
            return
        self._write_on_next(self._out, st, element, size)

    def send_on_next_many(self, subscriber: int, elements: list[bytes]) -> None:
        """Send ``elements`` in order on the peer's subscription ``subscriber``, one credit each.

        The same frames as :meth:`send_on_next` per element, encoded in one go: when the
        elements have one length (the common case) their frames are ``prefix.join``-ed by
        a single C call. Demand is checked once for the batch: ``len(elements)`` credits
        must be available. Raises like :meth:`send`; nothing is queued then.
        """
        count = len(elements)
        if not count:
            return
        st = self._publishing.get(subscriber)
        if st is None or st.state is not _ACTIVE or st.credit < count or self._state is not _OPEN:
            if not self._on_next_allowed(subscriber, st, count):
                return
            assert st is not None
        if count > 1 and not st.element_size and subscriber not in self._backlogs:
            lengths = set(map(len, elements))
            if len(lengths) == 1:
                size = lengths.pop()
                if size < _LARGE and size <= self.config.split_threshold:
                    if st.credit != UNBOUNDED:
                        st.credit -= count
                    prefix = st.header + (_V(size) if size >= 0x80 else _BYTE[size])
                    out = self._out
                    out += prefix
                    out += prefix.join(elements)
                    return
        for element in elements:
            self.send_on_next(subscriber, element)

    def send_subscribe(self, publisher: str, subscriber: int, initial_demand: int) -> None:
        """``send(Subscribe(...))`` without building the frame (request/response's hot path)."""
        if (
            self._state is not _OPEN
            or type(publisher) is not str
            or type(subscriber) is not int
            or type(initial_demand) is not int
            or not 0 <= subscriber <= MAX_U64
            or not 0 <= initial_demand <= MAX_U64
            or subscriber in self._subscribing
        ):
            self.send(Subscribe(publisher=publisher, subscriber=subscriber, initial_demand=initial_demand))
            return
        name = publisher.encode()  # a lone surrogate raises here, as Subscribe() would
        demand = min(initial_demand, UNBOUNDED)
        self._closed.pop((False, subscriber), None)
        self._subscribing[subscriber] = _Stream(subscriber, False, demand)
        out = self._out
        out.append(FrameType.SUBSCRIBE)
        out += _V(len(name))
        out += name
        out += _V(subscriber)
        out += _V(demand)

    def send_on_subscribe(self, subscriber: int, element_size: int = 0) -> None:
        """``send(OnSubscribe(...))`` without building the frame."""
        st = self._publishing.get(subscriber)
        if (
            self._state is not _OPEN
            or st is None
            or st.state is not StreamState.SUBSCRIBED
            or type(element_size) is not int
            or not 0 <= element_size <= MAX_U64
        ):
            self.send(OnSubscribe(subscriber=subscriber, element_size=element_size))
            return
        st.state = STREAM_TRANSITIONS[st.state, Signal.ON_SUBSCRIBE]
        st.element_size = element_size
        out = self._out
        out.append(FrameType.ON_SUBSCRIBE)
        out += _V(subscriber)
        out += _V(element_size)

    def send_on_complete(self, subscriber: int) -> None:
        """``send(OnComplete(...))`` without building the frame."""
        st = self._publishing.get(subscriber)
        if self._state is not _OPEN or st is None:
            self.send(OnComplete(subscriber=subscriber))
            return
        st.state = STREAM_TRANSITIONS[st.state, Signal.ON_COMPLETE]
        self._forget(True, subscriber)
        self._emit(subscriber, _COMPLETE + _V(subscriber))

    def send_request(self, subscriber: int, demand: int) -> None:
        """Ask for ``demand`` more elements on our subscription; above 2**63-1 saturates (§6.1).

        Raises:
            ValueError: ``demand < 1`` (a request(n <= 0) is the local subscriber's rule-3.9
                error, not something to put on the wire).
            LocalProtocolError, ConnectionBrokenError: like :meth:`send`.
        """
        if type(demand) is not int or demand < 1:
            raise ValueError(f"rule 3.9: request(n) needs n > 0, got {demand!r}")
        self._check_can_send()
        st = self._subscribing.get(subscriber)
        if st is None or st.state is _CANCELLED:
            self._require_recently_closed(False, subscriber, st, "Request")
            return
        if demand > UNBOUNDED:
            demand = UNBOUNDED
        st.credit = add(st.credit, demand)
        out = self._out
        out.append(FrameType.REQUEST)
        out += _V(subscriber)
        out += _V(demand)

    # -- sending, by frame type ------------------------------------------------------------------
    def _check_can_send(self) -> None:
        if self._state is _OPEN:
            return
        if self._state is _CLOSED:
            raise self._broken()
        if (self._state, ConnectionInput.SEND_FRAME) not in CONNECTION_TRANSITIONS:
            raise LocalProtocolError(f"can't send in state {self._state.name}: goodbye was already sent")

    def _write_on_next(self, out: bytearray, st: _Stream, element: bytes, size: int) -> None:
        out += st.header
        if not st.element_size:
            if size < 0x80:
                out.append(size)
            else:
                out += _V(size)
        if size >= _LARGE and out is self._out:
            self._chunks.append(bytes(out))
            out.clear()
            self._chunks.append(element)
        else:
            out += element

    def _on_next_allowed(self, sid: int, st: _Stream | None, count: int) -> bool:
        """Slow-path checks for onNext/onNextPacked; False = drop quietly, raise = misuse."""
        self._check_can_send()
        if st is None:
            self._require_recently_closed(True, sid, None, "OnNext")
            return False
        if st.state is not _ACTIVE:
            raise LocalProtocolError(
                f"can't send OnNext on subscriber {sid} in state {st.state.name}: send OnSubscribe first",
                subscriber=sid,
            )
        if st.credit < count:
            raise LocalProtocolError(
                f"can't send {count} element(s) on subscriber {sid}: outstanding demand is {st.credit}",
                subscriber=sid,
            )
        return True

    def _require_recently_closed(self, publishing: bool, sid: int, st: _Stream | None, what: str) -> None:
        if st is None and (publishing, sid) not in self._closed:
            side = "the peer's subscription" if publishing else "our subscription"
            raise LocalProtocolError(f"can't send {what}: {side} {sid} does not exist", subscriber=sid)

    def _send_subscribe(self, f: Subscribe) -> None:
        sid = f.subscriber
        st = self._subscribing.get(sid)
        if st is not None:
            raise LocalProtocolError(
                f"can't subscribe with id {sid}: still in use (state {st.state.name}); an id is free "
                f"again once its onComplete/onError has been received (PROTOCOL.md §5.3)",
                subscriber=sid,
            )
        demand = min(f.initial_demand, UNBOUNDED)
        self._closed.pop((False, sid), None)
        self._subscribing[sid] = _Stream(sid, False, demand)
        encode_into(self._out, Subscribe(publisher=f.publisher, subscriber=sid, initial_demand=demand))

    def _send_cancel(self, sid: int) -> None:
        st = self._subscribing.get(sid)
        if st is None or st.state is _CANCELLED:
            self._require_recently_closed(False, sid, st, "Cancel")
            return
        self._cancel_ours(sid, st)

    def _cancel_ours(self, sid: int, st: _Stream) -> None:
        st.state = STREAM_TRANSITIONS[st.state, Signal.CANCEL]
        self._drop_parts(st)
        encode_into(self._out, Cancel(subscriber=sid))

    def _send_on_subscribe(self, f: OnSubscribe) -> None:
        st = self._publishing.get(f.subscriber)
        if st is None:
            self._require_recently_closed(True, f.subscriber, None, "OnSubscribe")
            return
        new = STREAM_TRANSITIONS.get((st.state, Signal.ON_SUBSCRIBE))
        if new is None:
            raise LocalProtocolError(
                f"can't send OnSubscribe on subscriber {f.subscriber} in state {st.state.name}",
                subscriber=f.subscriber,
            )
        st.state = new
        st.element_size = f.element_size
        encode_into(self._out, f)

    def _send_on_next_packed(self, f: OnNextPacked) -> None:
        self.send_on_next_packed(f.subscriber, f.count, f.elements)

    def send_on_next_packed(self, subscriber: int, count: int, elements: bytes) -> None:
        """Send ``count`` fixed-size elements, back to back in ``elements``, as one onNextPacked.

        The same as ``send(OnNextPacked(...))`` without building the frame object; a large
        payload is handed to the transport as its own chunk (not copied). Raises like
        :meth:`send`.
        """
        st = self._publishing.get(subscriber)
        if st is None or st.state is not _ACTIVE or st.credit < count or self._state is not _OPEN:
            if not self._on_next_allowed(subscriber, st, count):
                return
            assert st is not None
        size = st.element_size
        if type(count) is not int or count < 1 or not size or len(elements) != count * size:
            raise LocalProtocolError(
                f"can't send OnNextPacked on subscriber {subscriber}: its elementSize is {size}, "
                f"the frame has {len(elements)} bytes for {count} element(s)",
                subscriber=subscriber,
            )
        if st.credit != UNBOUNDED:
            st.credit -= count
        header = _PACKED + _V(subscriber) + _V(count)
        backlog = self._backlogs.get(subscriber)
        if backlog is not None:
            backlog.append(header + bytes(elements))
            return
        out = self._out
        out += header
        if len(elements) >= _LARGE:
            self._chunks.append(bytes(out))
            out.clear()
            self._chunks.append(bytes(elements))  # no copy for bytes
        else:
            out += elements

    def _send_terminal(self, f: OnComplete | OnError) -> None:
        sid = f.subscriber
        st = self._publishing.get(sid)
        if st is None:
            self._require_recently_closed(True, sid, None, type(f).__name__)
            return
        signal = Signal.ON_COMPLETE if type(f) is OnComplete else Signal.ON_ERROR
        st.state = STREAM_TRANSITIONS[st.state, signal]  # SUBSCRIBED and ACTIVE both allow it
        self._forget(True, sid)
        out = bytearray()
        encode_into(out, f)
        self._emit(sid, bytes(out))

    def _send_goodbye(self, f: Goodbye) -> None:
        self._state = CONNECTION_TRANSITIONS[self._state, ConnectionInput.SEND_GOODBYE]
        self._close_all_streams()
        encode_into(self._out, f)

    def _emit(self, sid: int, frame: bytes) -> None:
        """Queue an encoded publisher frame, behind a split element of the same stream if any."""
        backlog = self._backlogs.get(sid)
        if backlog is not None:
            backlog.append(frame)
        else:
            self._out += frame

    # -- splitting (§8) ----------------------------------------------------------------------
    def _split(self, sid: int, st: _Stream, element: bytes) -> None:
        item = _Split(sid, st.next_element_id, element)
        st.next_element_id = (st.next_element_id + 1) & 0x7F
        self._backlogs.setdefault(sid, deque()).append(item)

    def _drain_backlogs(self, limit: int) -> None:
        """Round-robin: each backlogged stream sends what precedes its next part, and one part."""
        part_size = self.config.split_threshold
        budget = limit - len(self._out)
        while self._backlogs and budget > 0:
            for sid in list(self._backlogs):
                backlog = self._backlogs[sid]
                while backlog:
                    item = backlog[0]
                    if isinstance(item, bytes):
                        self._out += item
                        budget -= len(item)
                        backlog.popleft()
                        continue
                    budget -= self._write_part(item, part_size)
                    if item.offset >= len(item.data):
                        backlog.popleft()
                    break
                if not backlog:
                    del self._backlogs[sid]

    def _write_part(self, item: _Split, part_size: int) -> int:
        start = item.offset
        end = min(start + part_size, len(item.data))
        last = end >= len(item.data)
        out = self._out
        out.append(FrameType.ON_NEXT_LAST_PART if last else FrameType.ON_NEXT_PART)
        out += _V(item.sid)
        out += _V(item.element_id)
        out += _V(end - start)
        self._chunks.append(bytes(out))
        out.clear()
        self._chunks.append(item.data[start:end])
        item.offset = end
        return end - start

    # -- receiving, by frame type --------------------------------------------------------------
    def _recv_not_open(self, f: Frame) -> None:
        if self._state is ConnectionState.AWAITING_HELLO:
            if type(f) is Goodbye:
                self._recv_goodbye(f)
            elif type(f) is self._peer_hello_cls:
                self._recv_hello(f)
            else:
                self._fail(
                    HandshakeError(
                        f"the first message must be {self._peer_hello_cls.__name__}, got {type(f).__name__}"
                    )
                )
        elif type(f) is Goodbye:  # CLOSING: the answer, or a simultaneous goodbye (§9.2)
            self._events.append(f)
            self._finish(ConnectionInput.RECV_GOODBYE, None, f.reason)
        # any other frame while CLOSING is discarded: our goodbye closed every stream

    def _recv_hello(self, f: ClientHello | ServerHello) -> None:
        if self._state is not ConnectionState.AWAITING_HELLO or type(f) is not self._peer_hello_cls:
            self._fail(HandshakeError(f"unexpected {type(f).__name__}: the handshake is over or it is ours"))
            return
        if f.version != PROTOCOL_VERSION:
            self._fail(UnsupportedVersionError(f.version))
            return
        self._state = CONNECTION_TRANSITIONS[self._state, ConnectionInput.RECV_HELLO]
        self.peer_hello = f
        self.extensions = self.config.extensions & frozenset(f.extensions)
        self._events.append(f)

    def _recv_extension(self, f: ExtensionMessage) -> None:
        owner = BY_TYPE.get(f.type)
        if owner is None or owner.id not in self.extensions:
            whose = "no extension" if owner is None else f"extension {owner}, which is not active"
            self._fail(ExtensionError(f"message type 0x{f.type:02x} belongs to {whose} on this connection"))
            return
        if f.type == PING or f.type == PONG:
            if len(f.payload) != KEEPALIVE_PAYLOAD_SIZE:
                what = "ping" if f.type == PING else "pong"
                self._fail(
                    ExtensionError(
                        f"keepalive {what} payload must be {KEEPALIVE_PAYLOAD_SIZE} bytes, "
                        f"got {len(f.payload)}",
                        section="14",
                    )
                )
                return
            if f.type == PING:
                encode_into(self._out, ExtensionMessage(type=PONG, payload=f.payload))
        self._events.append(ExtensionReceived(type=f.type, payload=f.payload))

    def _recv_goodbye(self, f: Goodbye) -> None:
        self._events.append(f)
        encode_into(self._out, Goodbye(reason="goodbye acknowledged"))
        self._finish(ConnectionInput.RECV_GOODBYE, None, f.reason)

    def _recv_subscribe(self, f: Subscribe) -> None:
        sid = f.subscriber
        if sid in self._publishing:
            self._fail(
                StreamStateError(
                    f"subscribe reuses subscriber id {sid} before its subscription ended", subscriber=sid
                )
            )
            return
        self._closed.pop((True, sid), None)
        config = self.config
        refusal: str | None = None
        if len(self._publishing) >= config.max_subscriptions:
            refusal = f"refused: at most {config.max_subscriptions} subscriptions per connection (§11)"
        elif len(f.publisher.encode()) > config.max_name_length:
            refusal = f"refused: publisher name longer than {config.max_name_length} bytes (§11)"
        elif f.initial_demand > UNBOUNDED:
            refusal = RemoteInvalidDemandError(
                f"rule 3.9: initialDemand {f.initial_demand} is negative"
            ).reason
        if refusal is not None:
            encode_into(self._out, OnError(subscriber=sid, error=refusal))
            self._remember_closed(True, sid)
            return
        self._publishing[sid] = _Stream(sid, True, f.initial_demand)
        self._events.append(f)

    def _recv_request(self, f: Request) -> None:
        st = self._publishing.get(f.subscriber)
        if st is None:
            return  # crossed our onComplete/onError (IGNORED_WHEN_UNKNOWN)
        n = f.demand
        if n == 0 or n > UNBOUNDED:
            what = "0" if n == 0 else f"{n} (a negative 64-bit number)"
            error = RemoteInvalidDemandError(f"rule 3.9: request({what}) is illegal", subscriber=f.subscriber)
            self._stream_error(f.subscriber, st, error)
            return
        st.credit = add(st.credit, n)
        self._events.append(f)

    def _recv_cancel(self, f: Cancel) -> None:
        sid = f.subscriber
        st = self._publishing.get(sid)
        if st is None:
            return  # crossed our onComplete/onError (IGNORED_WHEN_UNKNOWN)
        st.state = STREAM_TRANSITIONS[st.state, Signal.CANCEL]
        self._backlogs.pop(sid, None)
        st.state = STREAM_TRANSITIONS[st.state, Signal.ON_COMPLETE]  # the acknowledgement, §5.4
        encode_into(self._out, OnComplete(subscriber=sid))
        self._forget(True, sid)
        self._events.append(f)

    def _ours(self, sid: int, signal: Signal) -> tuple[_Stream | None, StreamState | None]:
        """Our subscription ``sid`` and its next state, or (None, None) after failing."""
        st = self._subscribing.get(sid)
        if st is None:
            self._fail(StreamStateError(f"{signal.value} for unknown subscriber id {sid}", subscriber=sid))
            return None, None
        new = STREAM_TRANSITIONS.get((st.state, signal))
        if new is None:
            self._fail(
                StreamStateError(
                    f"{signal.value} for subscriber {sid} in state {st.state.name}", subscriber=sid
                )
            )
            return None, None
        return st, new

    def _recv_on_subscribe(self, f: OnSubscribe) -> None:
        st, new = self._ours(f.subscriber, Signal.ON_SUBSCRIBE)
        if st is None or new is None or st.state in QUIET_STATES:
            return
        st.state = new
        st.element_size = f.element_size
        self._events.append(f)

    def _take_credit(self, sid: int, st: _Stream, count: int) -> bool:
        if st.credit < count:
            self._fail(
                DemandExceededError(
                    f"{count} element(s) for subscriber {sid} exceed the outstanding demand of {st.credit}",
                    subscriber=sid,
                )
            )
            return False
        if st.credit != UNBOUNDED:
            st.credit -= count
        return True

    def _recv_on_next(self, f: OnNext) -> None:  # only reached when the fast path declined
        st, new = self._ours(f.subscriber, Signal.ON_NEXT)
        if st is None or new is None or st.state in QUIET_STATES:
            return
        if self._take_credit(f.subscriber, st, 1):
            self._events.append(f)

    def _recv_on_next_packed(self, f: OnNextPacked) -> None:
        st, new = self._ours(f.subscriber, Signal.ON_NEXT)
        if st is None or new is None or st.state in QUIET_STATES:
            return
        if self._take_credit(f.subscriber, st, f.count):
            self._events.append(f)

    def _recv_part(self, f: OnNextPart | OnNextLastPart) -> None:
        sid = f.subscriber
        st, new = self._ours(sid, Signal.ON_NEXT)
        if st is None or new is None or st.state in QUIET_STATES:
            return
        config = self.config
        last = type(f) is OnNextLastPart
        buf = st.parts.get(f.element_id)
        if buf is None:  # the first part of an element takes its credit
            if not self._take_credit(sid, st, 1):
                return
            if last:
                self._deliver(sid, st, f.data)
                return
            if self._partial_count >= config.max_parts_in_flight:
                self._fail(
                    LimitExceededError(
                        f"more than max_parts_in_flight={config.max_parts_in_flight} split elements at once",
                        limit="max_parts_in_flight",
                        subscriber=sid,
                    )
                )
                return
            buf = st.parts[f.element_id] = bytearray()
            self._partial_count += 1
        if len(buf) + len(f.data) > config.max_element_size:
            error = LimitExceededError(
                f"split element {f.element_id} for subscriber {sid} grows past "
                f"max_element_size={config.max_element_size}",
                limit="max_element_size",
                subscriber=sid,
            )
            self._stream_error(sid, st, error)
            return
        if self._partial_bytes + len(f.data) > config.max_reassembly_bytes:
            self._fail(
                LimitExceededError(
                    f"split elements in flight exceed max_reassembly_bytes={config.max_reassembly_bytes}",
                    limit="max_reassembly_bytes",
                    subscriber=sid,
                )
            )
            return
        buf += f.data
        self._partial_bytes += len(f.data)
        if last:
            del st.parts[f.element_id]
            self._partial_count -= 1
            self._partial_bytes -= len(buf)
            self._deliver(sid, st, bytes(buf))

    def _deliver(self, sid: int, st: _Stream, element: bytes) -> None:
        if st.element_size and len(element) != st.element_size:
            self._fail(
                StreamStateError(
                    f"joined element of {len(element)} bytes for subscriber {sid}, "
                    f"whose elementSize is {st.element_size}",
                    subscriber=sid,
                )
            )
            return
        self._events.append(OnNext(subscriber=sid, element=element))

    def _recv_terminal(self, f: OnComplete | OnError) -> None:
        sid = f.subscriber
        signal = Signal.ON_COMPLETE if type(f) is OnComplete else Signal.ON_ERROR
        st, new = self._ours(sid, signal)
        if st is None or new is None:
            return
        quiet = st.state in QUIET_STATES
        if st.parts and signal is Signal.ON_COMPLETE and not quiet:
            self._fail(
                StreamStateError(
                    f"onComplete for subscriber {sid} with {len(st.parts)} unfinished split element(s)",
                    subscriber=sid,
                )
            )
            return
        self._drop_parts(st)
        st.state = new
        self._forget(False, sid)
        if not quiet:
            self._events.append(f)

    # -- ending things -------------------------------------------------------------------------
    def _stream_error(self, sid: int, st: _Stream, error: RemoteProtocolError) -> None:
        """End one subscription for a per-stream violation (§10): onError or cancel, plus an event."""
        if st.publishing:
            st.state = STREAM_TRANSITIONS[st.state, Signal.ON_ERROR]
            self._backlogs.pop(sid, None)
            self._forget(True, sid)
            encode_into(self._out, OnError(subscriber=sid, error=getattr(error, "reason", str(error))))
        else:
            self._cancel_ours(sid, st)
        self._events.append(StreamError(subscriber=sid, publishing=st.publishing, error=error))

    def _drop_parts(self, st: _Stream) -> None:
        for buf in st.parts.values():
            self._partial_count -= 1
            self._partial_bytes -= len(buf)
        st.parts.clear()

    def _forget(self, publishing: bool, sid: int) -> None:
        table = self._publishing if publishing else self._subscribing
        del table[sid]
        self._remember_closed(publishing, sid)

    def _remember_closed(self, publishing: bool, sid: int) -> None:
        closed = self._closed
        closed[publishing, sid] = None
        if len(closed) > self.config.max_closed_streams:
            del closed[next(iter(closed))]

    def _close_all_streams(self) -> None:
        for st in self._subscribing.values():
            self._drop_parts(st)
        self._subscribing.clear()
        self._publishing.clear()
        self._backlogs.clear()
        self._parser.element_sizes.clear()

    def _finish(self, why: ConnectionInput, error: RemoteProtocolError | None, reason: str) -> None:
        self._state = CONNECTION_TRANSITIONS[self._state, why]
        self._error = error
        self._close_all_streams()
        self._events.append(ConnectionClosed(error=error, reason=reason))

    def _fail(self, error: RemoteProtocolError) -> None:
        """A connection-scoped violation (§10): goodbye naming the section, then CLOSED."""
        reason = getattr(error, "reason", str(error))
        if self._state is not ConnectionState.CLOSING:
            encode_into(self._out, Goodbye(reason=reason))
        self._finish(ConnectionInput.PROTOCOL_ERROR, error, reason)

    def _broken(self) -> ConnectionBrokenError:
        exc = ConnectionBrokenError("the RS.io connection is closed")
        exc.__cause__ = self._error
        return exc
