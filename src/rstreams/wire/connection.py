"""One RS.io connection, sans I/O: bytes in -> events out, frames in -> bytes out.

Usage by a transport (PROTOCOL.md is the rulebook; section numbers below refer to it)::

    conn = Connection(Side.CLIENT)          # our hello is queued at once
    write(conn.data_to_send())
    on bytes:  conn.receive_data(chunk)
    on EOF:    conn.receive_eof()
    after any receive_* or send: write(conn.data_to_send()); handle(conn.events_received())
    (or, for a read, both at once: handle(conn.receive(chunk)))

The connection holds the connection-level state (§12) and routes every frame, in and
out, through a table to one handler per message type. Its parts each have one job:
:mod:`~rstreams.wire._parser` finds frames in bytes, :mod:`~rstreams.wire._streams`
keeps the subscriptions (ids, credit, element sizes, recently closed ids, every state
change through :mod:`~rstreams.wire._state`'s table), :mod:`~rstreams.wire._assembler`
joins split elements, :mod:`~rstreams.wire._output` orders the bytes to write, and
:mod:`~rstreams.wire.frames` lays out every byte.

Sending: :meth:`Connection.send` takes any frame we may send and dispatches it by type.
Measured fast paths take fields instead of a frame and call the same encoders:
:meth:`~Connection.on_next`, :meth:`~Connection.on_next_many`, :meth:`~Connection.request`,
and the signals of every request/response, :meth:`~Connection.send_subscribe`,
:meth:`~Connection.send_on_subscribe`, :meth:`~Connection.send_on_complete`. They check their
fields as the frames do, except :meth:`~Connection.send_subscribe_unchecked`, which a driver
that made the fields itself calls (the net layer: its own ids and demand).

Errors: calling this object wrong raises (``LocalProtocolError``, ``ValueError``) and
changes nothing. A peer's violation never raises out of ``receive_data``: a per-stream
one ends that subscription (onError or cancel sent, :class:`StreamError` emitted), a
connection one queues a goodbye naming the section and emits :class:`ConnectionClosed`.
Once closed, ``receive_data`` and ``send`` raise :class:`ConnectionBrokenError`.
"""

from __future__ import annotations

from collections.abc import Callable, KeysView
from enum import Enum
from typing import Any

from rstreams.demand import UNBOUNDED
from rstreams.errors import ConnectionBrokenError, LocalProtocolError, RemoteProtocolError
from rstreams.wire._assembler import Assembler
from rstreams.wire._channels import CHANNEL, decode_channel_message
from rstreams.wire._codes import (
    ErrorCode,
    decode_error_code,
    decode_goodbye_code,
    encode_error_code,
    encode_goodbye_code,
)
from rstreams.wire._content import decode_content_type, encode_content_type
from rstreams.wire._errors import (
    AbruptCloseError,
    ExtensionError,
    FrameError,
    HandshakeError,
    LimitExceededError,
    RemoteInvalidDemandError,
    StreamStateError,
    TLSRecordError,
    UnsupportedVersionError,
    tls_record_type,
)
from rstreams.wire._metadata import (
    REMEMBERED_METADATA,
    Metadata,
    decode_metadata,
    remembered,
)
from rstreams.wire._output import LARGE, Output
from rstreams.wire._parser import FrameParser, HeldMetadata, Parsed
from rstreams.wire._state import (
    CONNECTION_TRANSITIONS,
    FLOWING,
    QUIET_STATES,
    STREAM_TRANSITIONS,
    ConnectionInput,
    ConnectionState,
    Signal,
    StreamState,
)
from rstreams.wire._streams import REQUEST_KEEPS, Stream, StreamTable, Violation
from rstreams.wire._varint import MAX_U64, encode_varint
from rstreams.wire.config import ConnectionConfig
from rstreams.wire.events import (
    Answer,
    ConnectionClosed,
    Event,
    ExtensionReceived,
    OnNextBatch,
    Qualifier,
    StreamError,
)
from rstreams.wire.extensions import (
    BY_TYPE,
    CONTENT_TYPE,
    CONTENT_TYPES,
    ERROR_CODE,
    ERROR_CODES,
    GOODBYE_CODE,
    KEEPALIVE_PAYLOAD_SIZE,
    METADATA,
    PING,
    PONG,
    SUBSCRIBE_METADATA,
)
from rstreams.wire.frames import (
    FRAME_TYPES,
    ON_NEXT_HEADERS,
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
    make_on_complete,
    make_on_next,
    make_on_subscribe,
    on_next_head,
    on_next_header,
    on_next_packed_head,
    write_answer,
    write_cancel,
    write_extension,
    write_goodbye,
    write_hello,
    write_on_complete,
    write_on_error,
    write_on_next,
    write_on_subscribe,
    write_request,
    write_subscribe,
)

__all__ = ["Connection", "Side"]

# Enum members as module constants: reading one through its class costs ~70 ns.
_AWAITING_HELLO = ConnectionState.AWAITING_HELLO
_OPEN = ConnectionState.OPEN
_CLOSING = ConnectionState.CLOSING
_CLOSED = ConnectionState.CLOSED
_REQUEST = Signal.REQUEST
_CANCEL = Signal.CANCEL
_ON_SUBSCRIBE = Signal.ON_SUBSCRIBE
_ON_NEXT = Signal.ON_NEXT
_ON_COMPLETE = Signal.ON_COMPLETE
_ON_ERROR = Signal.ON_ERROR
_SUBSCRIBED = StreamState.SUBSCRIBED
_REQUEST_ONE = [bytes((FrameType.REQUEST, sid, 1)) for sid in range(0x80)]
"""request(sid, 1) of the one-byte ids: one element at a time on an open stream."""
_ACCEPTED = STREAM_TRANSITIONS[_SUBSCRIBED, _ON_SUBSCRIBE]
"""The state our subscription's onSubscribe moves it to from SUBSCRIBED (read from the table once)."""
_ENDABLE = frozenset(
    state
    for state in StreamState
    if state not in QUIET_STATES
    and (state, _ON_COMPLETE) in STREAM_TRANSITIONS
    and (state, _ON_ERROR) in STREAM_TRANSITIONS
)
"""States a received onComplete or onError ends and surfaces (read from the table once)."""


def _goodbye_code(payload: bytes) -> tuple[int, int]:
    return 0, decode_goodbye_code(payload)


def _channel_mark(payload: bytes) -> tuple[int, object]:
    return decode_channel_message(CHANNEL, payload)


_QUALIFIERS: dict[int, tuple[type[Frame], str]] = {
    CONTENT_TYPE: (OnSubscribe, "17.1"),
    CHANNEL: (Subscribe, "21.3"),
    ERROR_CODE: (OnError, "19.1"),
    GOODBYE_CODE: (Goodbye, "19.1"),
}
"""Extension messages that qualify the core message sent right after them: type -> (the
qualified message's class, the section whose rules they follow); §17.1, §19.1, §21.3
(a channel mark is taken by the next subscribe whether it is accepted or refused). Their
payload decoders (-> subscriber id, value) are each connection's ``_decoders``. The one
qualifier most subscribes carry, subscribeMetadata (§18.1), has a path of its own: the
connection holds it in ``_held_metadata`` and emits it as a :class:`Metadata` event."""

_ADJACENT: dict[int, tuple[str, str, type[Frame], str]] = {
    CONTENT_TYPE: ("contentType", "its onSubscribe", OnSubscribe, "17.1"),
    SUBSCRIBE_METADATA: ("subscribeMetadata", "its subscribe", Subscribe, "18.1"),
    ERROR_CODE: ("errorCode", "its onError", OnError, "19.1"),
    GOODBYE_CODE: ("goodbyeCode", "a goodbye", Goodbye, "19.1"),
}
"""The qualifiers whose message must come right after them (§19.1: a channel mark, §21.3, need
not): type -> (their name, what they qualify, its class, their section)."""


def _two(kind: int) -> str:
    """The violation of a second qualifier of type ``kind`` before the message it qualifies."""
    if kind not in _ADJACENT:
        return f"two 0x{kind:02x} messages before one {_QUALIFIERS[kind][0].__name__}"
    name, target, _, _ = _ADJACENT[kind]
    return f"two {name} (0x{kind:02x}) messages before one {target.split()[-1]}"


_new_metadata = Metadata.__new__
_set_entries = Metadata.__dict__["_entries"].__set__  # a received dict, wrapped without a copy


def _code_of(error: RemoteProtocolError) -> int:
    """The error code (§19) of a violation the core detected."""
    if isinstance(error, LimitExceededError):
        return ErrorCode.LIMIT_EXCEEDED
    if isinstance(error, RemoteInvalidDemandError):
        return ErrorCode.INVALID_DEMAND
    return ErrorCode.PROTOCOL_VIOLATION


_HTTP_METHODS = (b"GET ", b"POST ", b"PUT ", b"HEAD ", b"OPTIONS ", b"DELETE ", b"PATCH ", b"CONNECT ")


def _first_bytes(error: RemoteProtocolError, data: bytes | bytearray | memoryview) -> RemoteProtocolError:
    """The error for a peer's first bytes that do not parse: when they look like HTTP, one that
    says so (a plain RS.io URL pointed at a web server, or a browser at an RS.io port); when
    they are a TLS record, :class:`TLSRecordError` (a plain client answered by a TLS server)."""
    if type(error) is not FrameError:
        return error
    head = bytes(data[:8])
    record = tls_record_type(head)
    if record is not None:
        return TLSRecordError(record)
    if head.startswith(b"HTTP/"):
        looks = "an HTTP response; for a WebSocket server use ws:// or wss://"
    elif head.startswith(_HTTP_METHODS):
        looks = "an HTTP request; this endpoint speaks RS.io, not HTTP"
    else:
        return error
    return HandshakeError(f"the peer's first bytes are not an RS.io hello (they look like {looks})")


class Side(Enum):
    """Which end of the transport we are: the one that opened it, or the one that accepted."""

    CLIENT = "client"
    SERVER = "server"


class Connection:
    """The RS.io protocol state of one connection; see the module docstring."""

    def __init__(
        self,
        side: Side,
        config: ConnectionConfig | None = None,
        *,
        batch_on_next: bool = False,
        answers: bool = False,
    ) -> None:
        """``batch_on_next=True``: consecutive in-demand onNext frames of one subscriber
        are reported as one :class:`OnNextBatch` event instead of one :class:`OnNext`
        each (cheaper for a driver that delivers them in a loop). ``answers=True``: a
        request/response's answer that arrives whole (onSubscribe, one onNext, onComplete)
        is reported as one :class:`Answer` event instead of three."""
        self.side = side
        self.config = config = config or ConnectionConfig()
        self._state = _AWAITING_HELLO
        self._parser = FrameParser(
            max_element_size=config.max_element_size,
            max_string_length=config.max_string_length,
            max_extensions=config.max_extensions,
            batch_on_next=batch_on_next,
            answers=answers,
        )
        self._streams = StreamTable(
            max_closed=config.max_closed_streams,
            max_subscriptions=config.max_subscriptions,
            max_name_length=config.max_name_length,
        )
        self._publishing = self._streams.publishing  # the fast paths' view of the tables
        self._subscribing = self._streams.subscribing
        self.ids_in_use: KeysView[int] = self._subscribing.keys()
        """Our subscriber ids in use, a live view: ``sid in ids_in_use`` is :meth:`id_in_use`
        without a call (a request/response asks it once per answer)."""
        self._assembler = Assembler(
            max_element_size=config.max_element_size,
            max_parts_in_flight=config.max_parts_in_flight,
            max_reassembly_bytes=config.max_reassembly_bytes,
        )
        self._split_parts = (
            self._assembler.parts
        )  # the receive fast paths' view: sids with unfinished elements
        self._output = self.output = Output(config.split_threshold)
        """What is yet to be written, for a driver to read only: whether its ``buf``, ``chunks``
        or ``backlogs`` hold anything is :attr:`has_data_to_send`, without a property's call
        (a driver asks after every read)."""
        self._out = self._output.buf  # the fast paths write here directly
        self._last_subscribe: tuple[str, int, int, bytearray] = ("", -1, -1, bytearray())
        """The last subscribe sent (name, id, demand) and its frame's bytes: the same one again
        (a request repeated) is those bytes again, not encoded anew."""
        self._backlogs = self._output.backlogs
        self._small = min(LARGE, config.split_threshold + 1)
        """Elements below this size are copied into the output buffer, neither split nor handed over."""
        self._events: list[Event] = []
        self.taken = 0
        """Bytes of its input the last :meth:`receive` took: all of them, unless a ``limit`` left
        a rest for the caller to feed later (a plain field: a driver asks after every long read)."""
        self._error: RemoteProtocolError | None = None
        self.extensions: frozenset[int] = frozenset()
        """Active extensions: ours ∩ the peer's hello (§4.4); empty until the peer's hello."""
        self._codes = False  # extension error-codes is active (§19)
        self._content_types = False  # extension content-types is active (§17)
        self._metadata = False  # extension metadata is active (§18)
        self._decoders: dict[int, Callable[[bytes], tuple[int, Any]]] = {
            CONTENT_TYPE: decode_content_type,
            ERROR_CODE: decode_error_code,
            GOODBYE_CODE: _goodbye_code,
            CHANNEL: _channel_mark,
        }
        self._qualifiers: dict[int, tuple[int, Any]] = {}  # received, awaiting the message they qualify
        self._held_metadata: tuple[int, Metadata] | None = None  # subscribeMetadata, awaiting its subscribe
        self._held = 0  # the type of the qualifier held for the very next message (_ADJACENT), or 0
        self.peer_hello: ClientHello | ServerHello | None = None
        self.acknowledge_cancels = True
        """Whether a received cancel is answered at once with its onComplete (§5.4). A driver that
        holds the peer's subscribes before answering them (extension auth, §15.3) sets it to
        ``False``: a cancel then leaves the subscription CANCELLED, unanswered, and the driver
        calls :meth:`acknowledge_cancel` when that subscription's turn to be answered comes."""
        ours = FrameType.CLIENT_HELLO if side is Side.CLIENT else FrameType.SERVER_HELLO
        self._peer_hello_cls: type[ClientHello | ServerHello] = (
            ServerHello if side is Side.CLIENT else ClientHello
        )
        write_hello(self._out, ours, PROTOCOL_VERSION, tuple(sorted(config.extensions)))
        self._senders: dict[type[Frame], Callable[[Any], None]] = {
            OnNext: self._send_on_next,
            Request: self._send_request,
            Subscribe: self._send_subscribe,
            Cancel: self._send_cancel,
            OnSubscribe: self._send_on_subscribe,
            OnNextPacked: self._send_on_next_packed,
            OnComplete: self._send_terminal,
            OnError: self._send_terminal,
            Goodbye: self._send_goodbye,
            ExtensionMessage: self._send_extension,
        }
        self._handlers: dict[type[Parsed], Callable[[Any], None]] = {
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
            tuple: self._recv_metadata,  # a subscribeMetadata the parser read
            Answer: self._recv_answer,  # one receive's fast path declined
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
        return st.credit if st is not None and st.state is FLOWING else 0

    def id_in_use(self, subscriber: int) -> bool:
        """Whether our subscriber id is still in use (§5.3): subscribed, and its onComplete or
        onError not yet received (after our cancel, until the publisher's acknowledgement)."""
        return subscriber in self._subscribing

    def split_in_flight(self) -> tuple[int, int]:
        """Split elements part-way through (§8): being sent (parts still queued), being received
        (parts joined so far, the last not yet here). For monitoring: it walks the queues."""
        sending = sum(
            1 for backlog in self._backlogs.values() for item in backlog if item.__class__ is not bytes
        )
        return sending, self._assembler.held[0]

    def subscriptions(self, *, publishing: bool) -> dict[int, StreamState]:
        """Open subscriptions: the peer's on us (``publishing=True``) or ours on the peer."""
        table = self._publishing if publishing else self._subscribing
        return {sid: st.state for sid, st in table.items()}

    # -- input -------------------------------------------------------------------------------
    def receive_data(self, data: bytes | bytearray | memoryview, limit: int = 0) -> int:
        """Feed bytes read from the transport; then call :meth:`data_to_send` and :meth:`events_received`.

        ``limit`` bounds the work: only about that many bytes of small messages are taken
        (whole messages, at least one; large elements whole, whatever the limit); the rest
        of ``data`` is the caller's to feed later. Returns how many bytes were taken (all of
        them without a limit).

        Raises:
            ConnectionBrokenError: the connection is already closed.
        """
        self._events = self.receive(data, limit)  # nothing is added to it once receive returns
        return self._parser.taken

    def receive(self, data: bytes | bytearray | memoryview, limit: int = 0) -> list[Event]:
        """:meth:`receive_data` and :meth:`events_received` in one call (what a driver does with
        every read): returns the events, handed over. ``limit`` as for :meth:`receive_data`,
        whose return value is then the parser's ``taken``.

        The loop over the frames is written out here, the common case of each frame of a
        request/response and of an element at a time included (their handlers take the rest):
        at a few calls per message, a call saved is a measurable part of a round trip.

        Raises:
            ConnectionBrokenError: the connection is already closed.
        """
        if self._state is _CLOSED:
            raise self._broken()
        parser = self._parser
        events = self._events
        subs = self._subscribing
        handlers = self._handlers
        frames = parser.feed(data, limit)
        for f in frames:
            if type(f) is OnNextBatch:  # the batched hot path: consecutive elements within demand
                sid = f.subscriber
                elements = f.elements
                st = subs.get(sid)
                if st is not None and st.state is FLOWING and self._state is _OPEN and not self._held:
                    credit = st.credit
                    if credit == UNBOUNDED:
                        events.append(f)
                        continue
                    count = len(elements)
                    if credit >= count:
                        st.credit = credit - count
                        events.append(f)
                        continue
                # Not all within demand (or not open): judge element by element, as OnNext frames.
                if self._held and self._state is _OPEN and self._refuse_after_qualifier(f):
                    break
                if self._receive_elements(sid, elements):
                    break
                continue
            if self._state is not _OPEN:
                self._recv_not_open(f)  # type: ignore[arg-type]  # OnNextBatch was handled above
                if self._state is _CLOSED:
                    break
                continue
            # The common case of the frames of a request/response and of one element at a time,
            # inlined from their handlers (no qualifiers, nothing split, no state to judge), the most
            # frequent first (a core that batches onNext, as the net layer's, never sees OnNext).
            if type(f) is Request:  # receive_request's, no state change (read from the table)
                st = self._publishing.get(f.subscriber)
                n = f.demand
                if st is not None and 0 < n <= UNBOUNDED and st.state in REQUEST_KEEPS and not self._held:
                    credit = st.credit + n
                    st.credit = credit if credit < UNBOUNDED else UNBOUNDED
                    events.append(f)
                    continue
            elif type(f) is Answer:  # a request/response's answer (answers=True): its frames' common case
                sid = f.subscriber
                st = subs.get(sid)
                if (
                    st is not None
                    and st.state is _SUBSCRIBED
                    and st.credit
                    and not self._held
                    and sid not in self._split_parts
                ):
                    st.state = _ACCEPTED  # the onSubscribe (the onNext keeps the state) ...
                    self._streams.close(st, _ON_COMPLETE)  # ... and the onComplete
                    events.append(f)
                    continue
            elif type(f) is Subscribe:  # _recv_subscribe's, no subscribeMetadata or qualifier held
                if self._held_metadata is None and not self._qualifiers:
                    verdict = self._streams.receive_subscribe(f)
                    if type(verdict) is Stream:
                        events.append(f)
                    else:
                        self._refuse_subscribe(f, verdict)  # type: ignore[arg-type]  # not a Stream
                        if self._state is _CLOSED:
                            break
                    continue
            elif type(f) is OnSubscribe:
                st = subs.get(f.subscriber)
                if st is not None and st.state is _SUBSCRIBED and not self._held:
                    st.state = _ACCEPTED  # ours() and the table's step
                    st.element_size = f.element_size
                    events.append(f)
                    continue
            elif type(f) is OnComplete:  # _recv_terminal's
                sid = f.subscriber
                st = subs.get(sid)
                if (
                    st is not None
                    and st.state in _ENDABLE
                    and not self._held
                    and sid not in self._split_parts
                ):
                    self._streams.close(st, _ON_COMPLETE)
                    events.append(f)
                    continue
            elif type(f) is OnNext:  # an element within demand (a core that batches none)
                st = subs.get(f.subscriber)
                if st is not None and st.state is FLOWING and st.credit and not self._held:
                    if st.credit != UNBOUNDED:
                        st.credit -= 1
                    events.append(f)
                    continue
            # A subscribeMetadata the parser read (FrameParser.metadata_window), nothing held yet:
            # _recv_metadata's common case.
            elif type(f) is tuple and not self._held:
                self._held_metadata = f
                self._held = SUBSCRIBE_METADATA
                continue
            if self._held and self._refuse_after_qualifier(f):  # not the message it qualifies
                break
            handlers[f.__class__](f)  # (OnNextBatch was handled above)
            if self._state is _CLOSED:
                break
        else:
            if parser.error is not None:
                self._fail(
                    parser.error if self._state is not _AWAITING_HELLO else _first_bytes(parser.error, data)
                )
        self.taken = parser.taken
        self._events = []
        return events

    def _receive_elements(self, sid: int, elements: list[bytes]) -> bool:
        """The elements of a batch not all within demand (or arriving while the connection is
        not open), judged one by one as the OnNext frames they came as; ``True`` once the
        connection is closed."""
        subs = self._subscribing
        events = self._events
        for element in elements:
            f = make_on_next(sid, element)
            if self._state is not _OPEN:
                self._recv_not_open(f)
                if self._state is _CLOSED:
                    return True
                continue
            st = subs.get(sid)
            if st is not None and st.state is FLOWING and st.credit:
                if st.credit != UNBOUNDED:
                    st.credit -= 1
                events.append(f)
                continue
            self._recv_on_next(f)
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
        elif self._state is _CLOSING:
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
        output = self._output  # Output.pending, inlined: the driver asks after every read and write
        if output.buf or output.chunks or output.backlogs:  # noqa: SIM103  # bool(...) costs a call
            return True
        return False

    def data_to_send(self, limit: int = 1 << 20) -> list[bytes]:
        """Bytes to write, in order, as few chunks as possible (write them with one ``writelines``).

        Parts of split elements are interleaved round-robin, one part per subscription per
        round, until about ``limit`` bytes are collected; call again while
        :attr:`has_data_to_send` is true and the transport accepts more.
        """
        output = self._output
        buf = output.buf
        if buf and not output.chunks and not output.backlogs:  # Output.take's common case, inlined
            data = [bytes(buf)]
            buf.clear()
            return data
        return output.take(limit)

    # -- sending: the one path -------------------------------------------------------------------
    def send(self, frame: Frame) -> None:
        """Queue ``frame`` for the peer, after checking it is allowed now.

        Any frame but a hello or a part: hellos are sent automatically and parts are made
        by splitting an ``OnNext`` larger than ``split_threshold``. Signals for a
        subscription that closed recently (the peer cancelled, or it already ended) are
        dropped quietly: they raced with its end (rules 3.6/3.12).

        Raises:
            LocalProtocolError: the frame breaks the protocol (no demand, wrong state,
                unknown id, goodbye already sent, an extension that is not active);
                nothing was queued.
            ValueError: a ``Request`` for fewer than one element (rule 3.9).
            ConnectionBrokenError: the connection is closed.
        """
        if self._state is not _OPEN:
            self._check_can_send()
        sender = self._senders.get(type(frame))
        if sender is None:
            raise LocalProtocolError(
                f"{type(frame).__name__} is not sent by hand: hellos go out automatically and parts are "
                f"made by sending an OnNext larger than split_threshold"
            )
        sender(frame)

    def close(self, reason: str = "", *, code: int | None = None) -> None:
        """Say goodbye (§9.1): ends every subscription; the peer answers with its goodbye.

        ``code`` (an :class:`~rstreams.wire._codes.ErrorCode` or a private code >= 1024) goes
        out as a goodbyeCode right before the goodbye when extension error-codes is active
        (§19), and is dropped otherwise.
        """
        if code is not None:
            _check_code(code)
            self._check_can_send()
            if self._codes:
                write_extension(self._out, GOODBYE_CODE, encode_goodbye_code(code))
        self.send(Goodbye(reason=reason))

    def send_error(self, subscriber: int, error: str, code: int | None = None) -> None:
        """``send(OnError(subscriber=..., error=...))``, preceded by an errorCode carrying
        ``code`` when extension error-codes is active (§19); without it, just the onError."""
        if code is not None and type(code) is not ErrorCode:  # (an ErrorCode is valid)
            _check_code(code)
        if type(subscriber) is not int or subscriber < 0 or type(error) is not str or not error.isascii():
            OnError(subscriber=subscriber, error=error)  # raises what the frame's checks raise, if any
        if self._state is not _OPEN:
            self._check_can_send()
        self._terminal(subscriber, error, code)  # no frame built: refusals come in floods

    # -- sending: the measured fast paths, fields instead of a frame -----------------------------
    def on_next(self, subscriber: int, element: bytes) -> None:
        """``send(OnNext(subscriber=..., element=...))`` without building the frame; one credit.

        Elements above ``split_threshold`` go out as parts (§8). Raises like :meth:`send`.
        """
        st = self._publishing.get(subscriber)
        if st is None or st.state is not FLOWING or not st.credit or self._state is not _OPEN:
            self._check_can_send()
            st = self._streams.send_elements(subscriber, 1)
            if st is None:
                return
        size = len(element)
        fixed = st.element_size
        if fixed and size != fixed:
            raise LocalProtocolError(
                f"can't send OnNext on subscriber {subscriber}: elements are {fixed} bytes "
                f"(its onSubscribe elementSize), got {size}",
                subscriber=subscriber,
            )
        if st.credit != UNBOUNDED:
            st.credit -= 1
        if size < self._small and subscriber not in self._backlogs:
            if size < 0x80 and not fixed:
                # The twin of frames.write_on_next's common case, written out: an element at a time
                # pays it per element. tests/wire/test_send_paths.py holds both equal to encode():
                # test_on_next this path, test_on_next_encoders_agree_with_the_table write_on_next.
                out = self._out
                out += st.header
                out.append(size)
                out += element
            else:
                write_on_next(self._out, st.header, element, fixed)
        elif size > self.config.split_threshold:
            self._output.split(st, element)
        elif subscriber in self._backlogs:  # keep order behind a split element
            out = bytearray()
            write_on_next(out, st.header, element, fixed)
            self._backlogs[subscriber].append(bytes(out))
        else:
            self._output.write_large(on_next_head(st.header, size, fixed), element)

    def on_next_many(self, subscriber: int, elements: list[bytes]) -> None:
        """Send ``elements`` in order on the peer's subscription ``subscriber``, one credit each.

        The same frames as :meth:`on_next` per element, encoded in one go: when the
        elements have one length (the common case) their frames are ``head.join``-ed by
        a single C call, or, for large ones, share one head between their payloads. Demand
        is checked once for the batch: ``len(elements)`` credits must be available. Raises
        like :meth:`send`; nothing is queued then.
        """
        count = len(elements)
        if not count:
            return
        st = self._publishing.get(subscriber)
        if st is None or st.state is not FLOWING or st.credit < count or self._state is not _OPEN:
            self._check_can_send()
            st = self._streams.send_elements(subscriber, count)
            if st is None:
                return
        if count > 1 and not st.element_size and subscriber not in self._backlogs:
            lengths = set(map(len, elements))
            if len(lengths) == 1:
                size = lengths.pop()
                if size < self._small:
                    if st.credit != UNBOUNDED:
                        st.credit -= count
                    head = on_next_head(st.header, size, 0)
                    out = self._out
                    out += head
                    out += head.join(elements)
                    return
                if size <= self.config.split_threshold:  # large: handed over by reference, one head
                    if st.credit != UNBOUNDED:
                        st.credit -= count
                    self._output.write_many_large(on_next_head(st.header, size, 0), elements)
                    return
        for element in elements:
            self.on_next(subscriber, element)

    def request(self, subscriber: int, demand: int) -> None:
        """``send(Request(...))`` without building the frame: ``demand`` more elements on our
        subscription; above 2**63-1 saturates (§6.1). A no-op once it is cancelled (rule 3.6).

        Raises:
            ValueError: ``demand`` not an int, or below 1 (a request(n <= 0) is the local
                subscriber's rule-3.9 error, not something to put on the wire).
            LocalProtocolError, ConnectionBrokenError: like :meth:`send`.
        """
        if type(demand) is not int or demand < 1:
            raise ValueError(
                f"rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got {demand!r}"
            )
        st = self._subscribing.get(subscriber)
        if st is None or st.state not in REQUEST_KEEPS or self._state is not _OPEN:
            self._check_can_send()
            st = self._streams.send_request_or_cancel(subscriber, _REQUEST)
            if st is None:
                return
        if demand > UNBOUNDED:
            demand = UNBOUNDED
        credit = st.credit + demand  # demand.add, inlined (the one-element-at-a-time path)
        st.credit = credit if credit < UNBOUNDED else UNBOUNDED
        if demand == 1 and subscriber < 0x80:  # write_request's most common frame, made once
            self._out += _REQUEST_ONE[subscriber]
        else:
            write_request(self._out, subscriber, demand)

    # -- sending, by frame type (the table in __init__) ------------------------------------------
    def _check_can_send(self) -> None:
        if self._state is _OPEN:
            return
        if self._state is _CLOSED:
            raise self._broken()
        if (self._state, ConnectionInput.SEND_FRAME) not in CONNECTION_TRANSITIONS:
            raise LocalProtocolError(f"can't send in state {self._state.name}: goodbye was already sent")

    def _send_on_next(self, f: OnNext) -> None:
        self.on_next(f.subscriber, f.element)

    def _send_request(self, f: Request) -> None:
        self.request(f.subscriber, f.demand)

    def send_subscribe(
        self, publisher: str, subscriber: int, initial_demand: int, metadata: bytes | None = None
    ) -> None:
        """``send(Subscribe(...))`` without building the frame (its fields are checked as the
        frame checks them); with ``metadata``, preceded by a subscribeMetadata when extension
        metadata is active (§18): ``metadata`` is its payload after the subscriber id, the entry
        count and the entries (:func:`rstreams.wire._metadata.encode_entries`). Without the
        extension the subscribe goes alone. Raises like :meth:`send`."""
        if (
            type(publisher) is not str
            or type(subscriber) is not int
            or type(initial_demand) is not int
            or not 0 <= subscriber <= MAX_U64
            or not 0 <= initial_demand <= MAX_U64
        ):
            Subscribe(publisher=publisher, subscriber=subscriber, initial_demand=initial_demand)  # raises
        self.send_subscribe_unchecked(publisher, subscriber, initial_demand, metadata)

    def send_subscribe_unchecked(
        self, publisher: str, subscriber: int, initial_demand: int, metadata: bytes | None = None
    ) -> None:
        """:meth:`send_subscribe` for a caller whose fields are right by construction: ``publisher``
        a ``str``, ``subscriber`` and ``initial_demand`` ints in 0..2**64-1. They are not checked
        again (the net layer's subscription table makes its ids and sums its demand itself, and
        its ``request``/``publisher`` take only a ``str`` name); the connection's state, the id's
        being free and the name's encoding are. Raises like :meth:`send`."""
        last = self._last_subscribe
        again = publisher == last[0] and subscriber == last[1] and initial_demand == last[2]
        name = b"" if again else publisher.encode()  # first: a failure must leave the table as it was
        if self._state is not _OPEN:
            self._check_can_send()
        demand = initial_demand if initial_demand < UNBOUNDED else UNBOUNDED
        self._streams.send_subscribe(subscriber, demand)
        out = self._out
        if metadata is not None and self._metadata:  # adjacent to its subscribe (§18.1)
            out.append(SUBSCRIBE_METADATA)
            size = len(metadata)
            if subscriber < 0x80 and size < 0x7F:  # one-byte varints, inline (§2.1)
                out.append(1 + size)
                out.append(subscriber)
            else:
                sid = encode_varint(subscriber)
                out += encode_varint(len(sid) + size)
                out += sid
            out += metadata
        if again:
            out += last[3]
        else:
            start = len(out)
            write_subscribe(out, name, subscriber, demand)
            self._last_subscribe = (publisher, subscriber, initial_demand, out[start:])

    @property
    def input_parts(self) -> Assembler:
        """The joiner of split channel input (extension input-parts, §21.6), which the channels
        driver feeds: it shares this connection's split-element limits (§8, §11)."""
        return self._assembler

    def _send_subscribe(self, f: Subscribe) -> None:
        self.send_subscribe_unchecked(f.publisher, f.subscriber, f.initial_demand)  # the frame checked them

    def _send_cancel(self, f: Cancel) -> None:
        st = self._streams.send_request_or_cancel(f.subscriber, _CANCEL)
        if st is not None:
            self._assembler.drop(st.sid)
            write_cancel(self._out, st.sid)

    def _send_on_subscribe(self, f: OnSubscribe) -> None:
        self.send_on_subscribe(f.subscriber, f.element_size)

    def send_on_subscribe(
        self, subscriber: int, element_size: int = 0, content_type: str | None = None
    ) -> None:
        """``send(OnSubscribe(...))`` without building the frame (its fields are checked as the
        frame checks them), preceded by a contentType stating ``content_type`` when extension
        content-types is active (§17); ``None``: the type is not stated. Raises like :meth:`send`."""
        if (
            type(subscriber) is not int
            or type(element_size) is not int
            or not 0 <= subscriber <= MAX_U64
            or not 0 <= element_size <= MAX_U64
        ):
            OnSubscribe(subscriber=subscriber, element_size=element_size)  # raises
        stated = content_type is not None and self._content_types
        if not stated and self._state is _OPEN:  # the common case: StreamTable.send_on_subscribe's, inlined
            st = self._publishing.get(subscriber)
            if st is not None and st.state is _SUBSCRIBED:
                st.state = _ACCEPTED
                st.element_size = element_size
                st.header = ON_NEXT_HEADERS[subscriber] if subscriber < 0x80 else on_next_header(subscriber)
                write_on_subscribe(self._out, subscriber, element_size)
                return
        payload = encode_content_type(subscriber, content_type) if stated else b""  # type: ignore[arg-type]
        if self._state is not _OPEN:
            self._check_can_send()
        if self._streams.send_on_subscribe(subscriber, element_size) is not None:
            if stated:
                write_extension(self._out, CONTENT_TYPE, payload)  # adjacent to its onSubscribe (§17.1)
            write_on_subscribe(self._out, subscriber, element_size)

    def send_on_complete(self, subscriber: int) -> None:
        """``send(OnComplete(subscriber=...))`` without building the frame (the id checked as the
        frame checks it). Raises like :meth:`send`."""
        if type(subscriber) is not int or not 0 <= subscriber <= MAX_U64:
            OnComplete(subscriber=subscriber)  # raises
        if self._state is not _OPEN:
            self._check_can_send()
        if subscriber in self._backlogs:  # behind a split element: queued after its parts
            self._terminal(subscriber, None, None)
            return
        st = self._publishing.get(subscriber)  # StreamTable.send_terminal's common case, inlined
        if st is not None:
            self._streams.close(st, _ON_COMPLETE)  # SUBSCRIBED and ACTIVE both allow it
            write_on_complete(self._out, subscriber)  # _terminal's common case, inlined
        elif self._streams.send_terminal(subscriber, _ON_COMPLETE, "OnComplete") is not None:
            write_on_complete(self._out, subscriber)

    def send_answer(
        self, subscriber: int, element_size: int, content_type: str | None, element: bytes
    ) -> bool:
        """onSubscribe, one onNext of ``element`` and onComplete for the peer's new subscription
        ``subscriber`` (a known one-element answer, ``just(x)``), written in one go: what
        :meth:`send_on_subscribe`, :meth:`on_next` and :meth:`send_on_complete` in turn would
        write, for an element that is neither split nor handed over. ``False``, and nothing
        done, when that is not the case now (no demand, the subscription not waiting for its
        onSubscribe, the connection not open, a large element): the caller sends the three
        signals as usual then."""
        st = self._publishing.get(subscriber)
        if (
            st is None
            or st.state is not _SUBSCRIBED
            or not st.credit
            or self._state is not _OPEN
            or len(element) >= self._small
            or (element_size and len(element) != element_size)
            or subscriber in self._backlogs
        ):
            return False
        st.state = _ACCEPTED  # then onNext (no change) and onComplete: the table's close
        self._streams.close(st, _ON_COMPLETE)
        if content_type is not None and self._content_types:  # adjacent to its onSubscribe (§17.1)
            write_extension(self._out, CONTENT_TYPE, encode_content_type(subscriber, content_type))
        write_answer(self._out, subscriber, element_size, element)
        return True

    def _send_on_next_packed(self, f: OnNextPacked) -> None:
        sid, count, elements = f.subscriber, f.count, f.elements
        st = self._publishing.get(sid)
        if st is None or st.state is not FLOWING or st.credit < count or self._state is not _OPEN:
            st = self._streams.send_elements(sid, count)
            if st is None:
                return
        size = st.element_size
        if not size or len(elements) != count * size:
            raise LocalProtocolError(
                f"can't send OnNextPacked on subscriber {sid}: its elementSize is {size}, "
                f"the frame has {len(elements)} bytes for {count} element(s)",
                subscriber=sid,
            )
        if st.credit != UNBOUNDED:
            st.credit -= count
        head = on_next_packed_head(sid, count)
        if sid in self._backlogs:
            self._backlogs[sid].append(head + elements)
        elif len(elements) >= LARGE:
            self._output.write_large(head, elements)
        else:
            self._out += head
            self._out += elements

    def _send_terminal(self, f: OnComplete | OnError, code: int | None = None) -> None:
        self._terminal(f.subscriber, f.error if type(f) is OnError else None, code)

    def _terminal(self, sid: int, error: str | None, code: int | None) -> None:
        """onComplete (``error`` None) or onError with ``error`` (and ``code``, §19) for ``sid``."""
        signal = _ON_COMPLETE if error is None else _ON_ERROR
        if self._streams.send_terminal(sid, signal, "OnComplete" if error is None else "OnError") is None:
            return
        backlog = sid in self._backlogs  # behind a split element: queued after its parts
        out = bytearray() if backlog else self._out
        if error is None:
            write_on_complete(out, sid)
        else:
            if code is not None and self._codes:  # in the same chunk: adjacent on the wire (§19.1)
                if sid < 0x80 and code < 0x80:  # both one-byte varints: the message at once
                    out += bytes((ERROR_CODE, 2, sid, code))
                else:
                    write_extension(out, ERROR_CODE, encode_error_code(sid, code))
            write_on_error(out, sid, error)
        if backlog:
            self._output.emit(sid, bytes(out))

    def _send_goodbye(self, f: Goodbye) -> None:
        self._state = CONNECTION_TRANSITIONS[self._state, ConnectionInput.SEND_GOODBYE]
        self._close_all_streams()
        write_goodbye(self._out, f.reason)

    def _send_extension(self, f: ExtensionMessage) -> None:
        owner = BY_TYPE.get(f.type)
        if owner is None:
            raise LocalProtocolError(
                f"can't send message type 0x{f.type:02x}: no extension owns it (PROTOCOL.md §4.4)"
            )
        if owner.id not in self.extensions:
            when = "" if self._state is _OPEN else " (the peer's hello has not arrived yet)"
            raise LocalProtocolError(
                f"can't send message type 0x{f.type:02x}: extension {owner} is not active on this "
                f"connection{when}; it is active only when both hellos list it (PROTOCOL.md §4.4)"
            )
        if f.type in owner.reserved:
            raise LocalProtocolError(
                f"can't send message type 0x{f.type:02x}: extension {owner} reserves it without "
                "defining it (PROTOCOL.md §4.4)"
            )
        payload = f.payload
        if len(payload) >= LARGE:  # its own chunk, not copied (a channel's input part, §21.6)
            self._output.write_large(bytes((f.type,)) + encode_varint(len(payload)), payload)
        else:
            write_extension(self._out, f.type, payload)

    # -- receiving, by frame type (the table in __init__) ----------------------------------------
    def _recv_not_open(self, f: Frame | Answer | HeldMetadata) -> None:
        if type(f) is Answer:  # its first frame says it all: a handshake error, or discarded
            f = make_on_subscribe(f.subscriber, 0)
        if self._state is _AWAITING_HELLO:
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
            self._finish(ConnectionInput.RECV_GOODBYE, None, f.reason, self._peer_goodbye_code())
        elif type(f) is ExtensionMessage and f.type == GOODBYE_CODE and self._codes:
            self._qualify(f.type, f.payload)  # the code of the answering goodbye
        # any other frame while CLOSING is discarded: our goodbye closed every stream

    def _recv_hello(self, f: ClientHello | ServerHello) -> None:
        if self._state is not _AWAITING_HELLO or type(f) is not self._peer_hello_cls:
            self._fail(HandshakeError(f"unexpected {type(f).__name__}: the handshake is over or it is ours"))
            return
        if f.version != PROTOCOL_VERSION:
            self._fail(UnsupportedVersionError(f.version))
            return
        self._state = CONNECTION_TRANSITIONS[self._state, ConnectionInput.RECV_HELLO]
        self.peer_hello = f
        self.extensions = self.config.extensions & frozenset(f.extensions)
        self._codes = ERROR_CODES.id in self.extensions
        self._content_types = CONTENT_TYPES.id in self.extensions
        self._metadata = METADATA.id in self.extensions
        self._events.append(f)

    def _recv_extension(self, f: ExtensionMessage) -> None:
        if f.type == SUBSCRIBE_METADATA and self._metadata:  # a qualifier (§18.1), held for its subscribe
            payload = f.payload
            config = self.config
            try:
                sid, entries = decode_metadata(
                    payload, config.max_metadata_bytes, config.max_metadata_entries
                )
            except RemoteProtocolError as error:  # malformed (§18.1) or a limit (§11)
                self._fail(error)
                return
            metadata = _new_metadata(Metadata)
            _set_entries(metadata, entries)
            if sid < 0x80 and len(payload) <= REMEMBERED_METADATA:  # the parser reads the next ones
                parser = self._parser
                parser.metadata_window = remembered(payload, metadata, entries, parser.metadata_window)
            self._recv_metadata((sid, metadata))
            return
        owner = BY_TYPE.get(f.type)
        if owner is None or owner.id not in self.extensions:
            whose = "no extension" if owner is None else f"extension {owner}, which is not active"
            self._fail(ExtensionError(f"message type 0x{f.type:02x} belongs to {whose} on this connection"))
            return
        if f.type in owner.reserved:
            self._fail(ExtensionError(f"message type 0x{f.type:02x} is reserved by extension {owner}"))
            return
        if f.type == PING or f.type == PONG:
            if len(f.payload) != KEEPALIVE_PAYLOAD_SIZE:
                what = "ping" if f.type == PING else "pong"
                self._fail(
                    ExtensionError(
                        f"keepalive {what} payload must be {KEEPALIVE_PAYLOAD_SIZE} bytes, "
                        f"got {len(f.payload)}",
                        section="14.1",
                    )
                )
                return
            if f.type == PING:
                write_extension(self._out, PONG, f.payload)
        elif f.type in _QUALIFIERS:
            self._qualify(f.type, f.payload)
            return
        self._events.append(ExtensionReceived(type=f.type, payload=f.payload))

    def _recv_metadata(self, held: tuple[int, Metadata]) -> None:
        """A subscribeMetadata, decoded (by :meth:`_recv_extension`, or by the parser when its
        window describes it: :attr:`~rstreams.wire._parser.FrameParser.metadata_window`), held
        for the subscribe it qualifies, which must come next (§18.1). The common case of one the
        parser read, nothing held yet, is also written out in :meth:`receive`."""
        if self._held_metadata is not None:
            self._fail(ExtensionError(_two(SUBSCRIBE_METADATA), section="18.1"))
            return
        self._held_metadata = held
        self._held = SUBSCRIBE_METADATA

    def _qualify(self, kind: int, payload: bytes) -> None:
        """A qualifier (§19.1): held until the message it qualifies, which must come next."""
        section = _QUALIFIERS[kind][1]
        try:
            sid, value = self._decoders[kind](payload)
        except RemoteProtocolError as error:  # malformed (the extension's section) or a limit (§11)
            self._fail(error)
            return
        if kind in self._qualifiers:
            self._fail(ExtensionError(_two(kind), section=section))
            return
        self._qualifiers[kind] = (sid, value)
        if kind in _ADJACENT:
            self._held = kind

    def _refuse_after_qualifier(self, f: Frame | Answer | HeldMetadata | OnNextBatch) -> bool:
        """``f`` came right after the qualifier held (``_held``): ``False`` if it is the message
        that qualifier qualifies (of its id); else the connection fails, citing the qualifier's
        section (the sender's MUST of §19.1), and ``True``."""
        kind = self._held
        name, target, cls, section = _ADJACENT[kind]
        held = self._held_metadata if kind == SUBSCRIBE_METADATA else self._qualifiers[kind]
        held_sid = held[0] if held is not None else 0
        f_type: int
        f_cls: type
        if type(f) is Answer:
            f_type, f_cls = FrameType.ON_SUBSCRIBE, OnSubscribe
        elif type(f) is OnNextBatch:
            f_type, f_cls = FrameType.ON_NEXT, OnNext
        elif type(f) is tuple:
            f_type, f_cls = SUBSCRIBE_METADATA, tuple
        elif type(f) is ExtensionMessage:
            f_type, f_cls = f.type, ExtensionMessage
        else:
            f_type, f_cls = FRAME_TYPES[type(f)], type(f)  # type: ignore[index]
        if f_cls is cls and (kind == GOODBYE_CODE or f.subscriber == held_sid):  # type: ignore[union-attr]
            self._held = 0
            return False
        if f_type == kind:
            text = _two(kind)
        else:
            whose = "" if kind == GOODBYE_CODE else f" for subscriber {held_sid}"
            other = f" for subscriber {f.subscriber}" if f_cls is cls else ""  # type: ignore[union-attr]
            text = f"{name} (0x{kind:02x}){whose} followed by message type 0x{f_type:02x}{other}"
            text += f", not by {target}"
        self._fail(ExtensionError(text, section=section))
        return True

    def _take_qualifiers(self, cls: type[Frame], sid: int) -> list[Qualifier] | None:
        """The held qualifiers of the ``cls`` message for ``sid`` that just arrived; ``None``
        after failing the connection because one was meant for another id (a channel mark,
        §21.3: the others were checked when the message arrived, ``_refuse_after_qualifier``)."""
        taken: list[Qualifier] = []
        for kind in list(self._qualifiers):  # a copy: taken ones are popped
            if _QUALIFIERS[kind][0] is not cls:
                continue
            target_sid, value = self._qualifiers.pop(kind)
            if target_sid != sid:
                self._fail(
                    ExtensionError(
                        f"0x{kind:02x} for subscriber {target_sid} followed by a {cls.__name__} "
                        f"for subscriber {sid}",
                        section=_QUALIFIERS[kind][1],
                    )
                )
                return None
            taken.append(Qualifier(type=kind, subscriber=sid, value=value))
        return taken

    def _recv_goodbye(self, f: Goodbye) -> None:
        self._events.append(f)
        write_goodbye(self._out, "goodbye acknowledged")
        self._finish(ConnectionInput.RECV_GOODBYE, None, f.reason, self._peer_goodbye_code())

    def _peer_goodbye_code(self) -> int | None:
        held = self._qualifiers.pop(GOODBYE_CODE, None)
        return None if held is None else int(held[1])

    def _recv_subscribe(self, f: Subscribe) -> None:
        held = self._held_metadata
        if held is not None:
            self._held_metadata = None
            if held[0] != f.subscriber:
                self._fail(
                    ExtensionError(
                        f"subscribeMetadata (0x94) for subscriber {held[0]} followed by message type 0x04 "
                        f"for subscriber {f.subscriber}, not by its subscribe",
                        section="18.1",
                    )
                )
                return
        qualifiers = self._take_qualifiers(Subscribe, f.subscriber) if self._qualifiers else None
        if self._state is _CLOSED:
            return
        verdict = self._streams.receive_subscribe(f)
        if type(verdict) is Stream:  # accepted
            if qualifiers:
                self._events += qualifiers
            if held is not None:
                self._events.append(held[1])
            self._events.append(f)
        else:
            self._refuse_subscribe(f, verdict)  # type: ignore[arg-type]  # not a Stream

    def _refuse_subscribe(self, f: Subscribe, verdict: Violation | str) -> None:
        """The table's verdict on the peer's subscribe ``f`` was not a new stream: the onError
        that refuses it, or the violation."""
        if type(verdict) is str:
            if self._codes:
                code = (
                    ErrorCode.INVALID_DEMAND if verdict.startswith("rule 3.9") else ErrorCode.LIMIT_EXCEEDED
                )
                write_extension(self._out, ERROR_CODE, encode_error_code(f.subscriber, code))
            write_on_error(self._out, f.subscriber, verdict)
        else:
            self._violated(verdict)  # type: ignore[arg-type]  # the one type left

    def _recv_request(self, f: Request) -> None:  # the common case is receive's
        verdict = self._streams.receive_request(f.subscriber, f.demand)
        if isinstance(verdict, Violation):
            self._violated(verdict)
        elif verdict is not None:  # None: it crossed our onComplete/onError (IGNORED_WHEN_UNKNOWN)
            self._events.append(f)

    def _recv_cancel(self, f: Cancel) -> None:
        acknowledge = self.acknowledge_cancels
        st = self._streams.receive_cancel(f.subscriber, close=acknowledge)
        if st is not None:  # None: it crossed our onComplete/onError (IGNORED_WHEN_UNKNOWN)
            self._output.drop(st.sid)
            if acknowledge:
                write_on_complete(self._out, st.sid)  # the acknowledgement, §5.4
            self._events.append(f)

    def acknowledge_cancel(self, subscriber: int) -> None:
        """Send the onComplete that acknowledges the peer's cancel of ``subscriber`` (§5.4).

        For a driver that turned :attr:`acknowledge_cancels` off. A no-op unless the peer's
        subscription ``subscriber`` is open and CANCELLED (it may have ended meanwhile).
        """
        st = self._publishing.get(subscriber)
        if st is None or st.state is not StreamState.CANCELLED:
            return
        self._streams.close(st, _ON_COMPLETE)
        self._output.drop(subscriber)
        write_on_complete(self._out, subscriber)

    def _recv_on_subscribe(self, f: OnSubscribe) -> None:  # the common case is receive's
        found = self._streams.ours(f.subscriber, _ON_SUBSCRIBE)
        if isinstance(found, Violation):
            self._violated(found)
            return
        qualifiers = self._take_qualifiers(OnSubscribe, f.subscriber) if self._qualifiers else None
        if found[0].state in QUIET_STATES or self._state is _CLOSED:
            return  # dropped after our cancel (§5.4), with its qualifiers
        st, new = found
        st.state = new
        st.element_size = f.element_size
        if qualifiers:
            self._events += qualifiers
        self._events.append(f)

    def _recv_answer(self, f: Answer) -> None:  # only reached when receive's fast path declined
        """A request/response's answer parsed whole (``answers=True``) that is not the common
        case (no demand, a qualifier held, not our subscription, ...): its frames one by one."""
        sid = f.subscriber
        self._recv_on_subscribe(make_on_subscribe(sid, 0))
        if self._state is _CLOSED or self._receive_elements(sid, [f.element]):
            return
        self._recv_terminal(make_on_complete(sid))

    def _recv_elements(self, f: OnNext | OnNextPacked, count: int) -> None:
        found = self._streams.ours(f.subscriber, _ON_NEXT)
        if isinstance(found, Violation):
            self._violated(found)
            return
        if found[0].state in QUIET_STATES:
            return
        verdict = self._streams.take(found[0], count)
        if verdict is not None:
            self._violated(verdict)
        else:
            self._events.append(f)

    def _recv_on_next(self, f: OnNext) -> None:  # only reached when the fast path declined
        self._recv_elements(f, 1)

    def _recv_on_next_packed(self, f: OnNextPacked) -> None:
        self._recv_elements(f, f.count)

    def _recv_part(self, f: OnNextPart | OnNextLastPart) -> None:
        sid = f.subscriber
        found = self._streams.ours(sid, _ON_NEXT)
        if isinstance(found, Violation):
            self._violated(found)
            return
        st = found[0]
        if st.state in QUIET_STATES:
            return
        if self._assembler.starts(sid, f.element_id):  # the first part of an element takes its credit
            verdict = self._streams.take(st, 1)
            if verdict is not None:
                self._violated(verdict)
                return
        joined = self._assembler.add(st, f.element_id, f.data, type(f) is OnNextLastPart)
        if isinstance(joined, Violation):
            self._violated(joined)
        elif joined is not None:
            self._deliver(st, joined)

    def _deliver(self, st: Stream, element: bytes) -> None:
        if st.element_size and len(element) != st.element_size:
            self._fail(
                StreamStateError(
                    f"joined element of {len(element)} bytes for subscriber {st.sid}, "
                    f"whose elementSize is {st.element_size}",
                    subscriber=st.sid,
                    section="7",
                )
            )
            return
        self._events.append(OnNext(subscriber=st.sid, element=element))

    def _recv_terminal(self, f: OnComplete | OnError) -> None:
        sid = f.subscriber
        signal = _ON_COMPLETE if type(f) is OnComplete else _ON_ERROR
        st = self._subscribing.get(sid)
        if (
            st is not None and st.state in _ENDABLE and not self._qualifiers and sid not in self._split_parts
        ):  # the common case (an onComplete's is receive's): what follows, without the calls
            self._streams.close(st, signal)
            self._events.append(f)
            return
        found = self._streams.ours(sid, signal)
        if isinstance(found, Violation):
            self._violated(found)
            return
        st = found[0]
        quiet = st.state in QUIET_STATES
        unfinished = self._assembler.unfinished(sid)
        if unfinished and signal is _ON_COMPLETE and not quiet:
            self._fail(
                StreamStateError(
                    f"onComplete for subscriber {sid} with {unfinished} unfinished split element(s)",
                    subscriber=sid,
                    section="8",
                )
            )
            return
        if unfinished:
            self._assembler.drop(sid)
        self._streams.close(st, signal)
        qualifiers = self._take_qualifiers(type(f), sid) if self._qualifiers else None
        if self._state is _CLOSED:
            return
        if not quiet:
            if qualifiers:
                self._events += qualifiers
            self._events.append(f)

    # -- ending things -------------------------------------------------------------------------
    def _violated(self, verdict: Violation) -> None:
        """Act on a verdict: end its stream alone (§10), or the connection."""
        st = verdict.stream
        if st is None:
            self._fail(verdict.error)
            return
        if st.publishing:
            self._streams.close(st, _ON_ERROR)
            self._output.drop(st.sid)
            if self._codes:
                write_extension(self._out, ERROR_CODE, encode_error_code(st.sid, _code_of(verdict.error)))
            write_on_error(self._out, st.sid, getattr(verdict.error, "reason", str(verdict.error)))
        else:
            self._send_cancel(Cancel(subscriber=st.sid))
        self._events.append(StreamError(subscriber=st.sid, publishing=st.publishing, error=verdict.error))

    def _close_all_streams(self) -> None:
        self._assembler.clear()
        self._streams.clear()
        self._output.backlogs.clear()

    def _finish(
        self, why: ConnectionInput, error: RemoteProtocolError | None, reason: str, code: int | None = None
    ) -> None:
        self._state = CONNECTION_TRANSITIONS[self._state, why]
        self._error = error
        self._qualifiers.clear()
        self._held_metadata = None
        self._held = 0
        self._close_all_streams()
        self._events.append(ConnectionClosed(error=error, reason=reason, code=code))

    def _fail(self, error: RemoteProtocolError) -> None:
        """A connection-scoped violation (§10): goodbye naming the section, then CLOSED."""
        reason = getattr(error, "reason", str(error))
        code = _code_of(error)
        if self._state is not _CLOSING:
            if self._codes:
                write_extension(self._out, GOODBYE_CODE, encode_goodbye_code(code))
            write_goodbye(self._out, reason)
        self._finish(ConnectionInput.PROTOCOL_ERROR, error, reason, code)

    def _broken(self) -> ConnectionBrokenError:
        exc = ConnectionBrokenError("the RS.io connection is closed")
        exc.__cause__ = self._error
        return exc


def _check_code(code: object) -> None:
    if type(code) is not int and not isinstance(code, ErrorCode):
        raise TypeError(f"an error code is an int (rstreams.wire.ErrorCode), got {type(code).__name__}")
    if not 0 <= code < 2**64:
        raise ValueError(f"an error code is a varint (0..2**64-1, PROTOCOL.md §19.2), got {code}")
