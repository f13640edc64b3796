"""RS.io messages: one frozen dataclass per message type, and their encoder (PROTOCOL.md §3).

Each frame is one type byte (:class:`FrameType`) followed by its fields in the order the
dataclass declares them. Integers are unsigned varints (§2.1), strings and byte arrays are
varint-length-prefixed (§2.2), ``version`` is one raw byte. Two exceptions depend on the
subscription, not on the frame: on a stream whose ``OnSubscribe.element_size`` is ``n != 0``
an ``OnNext`` element is exactly ``n`` raw bytes with no length prefix, and ``OnNextPacked``
carries ``count * n`` raw bytes. :func:`encode` therefore takes ``element_size``.

The classes check themselves when built (``ValueError``/``TypeError`` on bad fields), so a
frame that exists can be encoded. They check syntax only: whether a frame is allowed in the
connection's state is :mod:`rstreams.wire.connection`'s business. The same classes are
used for sending and receiving; :mod:`rstreams.wire._parser` builds them from bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeAlias

from rstreams.wire._varint import MAX_U64, encode_varint

__all__ = [
    "FRAME_CLASSES",
    "ClientHello",
    "Frame",
    "FrameType",
    "Goodbye",
    "OnComplete",
    "OnError",
    "OnNext",
    "OnNextLastPart",
    "OnNextPacked",
    "OnNextPart",
    "OnSubscribe",
    "Request",
    "ServerHello",
    "Subscribe",
    "encode",
]

PROTOCOL_VERSION = 0
"""The only version this implementation speaks (§4.2)."""


class FrameType(IntEnum):
    """The type byte that starts every frame (§3). 0x00 is reserved and never valid."""

    CLIENT_HELLO = 0x01
    SERVER_HELLO = 0x02
    GOODBYE = 0x03
    SUBSCRIBE = 0x04
    REQUEST = 0x05
    CANCEL = 0x06
    ON_SUBSCRIBE = 0x07
    ON_NEXT = 0x08
    ON_NEXT_PACKED = 0x09
    ON_NEXT_PART = 0x0A
    ON_NEXT_LAST_PART = 0x0B
    ON_COMPLETE = 0x0C
    ON_ERROR = 0x0D


FIRST_RESERVED_CORE_TYPE = 0x0E
"""0x0E..0x7F: reserved for later versions of the core protocol (fatal if received)."""
FIRST_EXTENSION_TYPE = 0x80
"""0x80..0xFF: message types defined by negotiated extensions (§4.4)."""


def _check_uint(name: str, value: object, maximum: int = MAX_U64) -> None:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= maximum:
        raise ValueError(f"{name} must be in 0..{maximum}, got {value}")


def _check_str(name: str, value: object) -> None:
    if type(value) is not str:
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    value.encode()  # UnicodeEncodeError (a ValueError) for lone surrogates


def _check_bytes(name: str, value: object) -> None:
    if type(value) is not bytes:
        raise TypeError(f"{name} must be bytes, got {type(value).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientHello:
    """First frame from the side that opened the connection (§4.1)."""

    version: int = PROTOCOL_VERSION
    extensions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_uint("version", self.version, 255)
        if type(self.extensions) is not tuple:
            raise TypeError("extensions must be a tuple of ints")
        for ext in self.extensions:
            _check_uint("extension id", ext)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerHello:
    """First frame from the side that accepted the connection (§4.1)."""

    version: int = PROTOCOL_VERSION
    extensions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_uint("version", self.version, 255)
        if type(self.extensions) is not tuple:
            raise TypeError("extensions must be a tuple of ints")
        for ext in self.extensions:
            _check_uint("extension id", ext)


@dataclass(frozen=True, slots=True, kw_only=True)
class Goodbye:
    """Ends the connection and every subscription on it; answered by a goodbye (§9)."""

    reason: str = ""

    def __post_init__(self) -> None:
        _check_str("reason", self.reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe:
    """Subscriber -> publisher: open subscription ``subscriber`` (the sender's id) on ``publisher``."""

    publisher: str
    subscriber: int
    initial_demand: int = 0

    def __post_init__(self) -> None:
        _check_str("publisher", self.publisher)
        _check_uint("subscriber", self.subscriber)
        _check_uint("initial_demand", self.initial_demand)


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Subscriber -> publisher: ``demand`` more elements (§6)."""

    subscriber: int
    demand: int

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_uint("demand", self.demand)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cancel:
    """Subscriber -> publisher: stop; the publisher acknowledges with a terminal signal (§5.4)."""

    subscriber: int

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnSubscribe:
    """Publisher -> subscriber: the subscription is live; ``element_size != 0`` fixes element sizes."""

    subscriber: int
    element_size: int = 0

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_uint("element_size", self.element_size)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnNext:
    """Publisher -> subscriber: one element (also what joined parts are surfaced as)."""

    subscriber: int
    element: bytes

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_bytes("element", self.element)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnNextPacked:
    """Publisher -> subscriber: ``count`` fixed-size elements back to back (§7)."""

    subscriber: int
    count: int
    elements: bytes

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_uint("count", self.count)
        _check_bytes("elements", self.elements)
        if self.count == 0 or not self.elements or len(self.elements) % self.count:
            raise ValueError(
                f"elements must hold count >= 1 equal non-empty elements, "
                f"got count={self.count} and {len(self.elements)} bytes"
            )

    @property
    def element_size(self) -> int:
        """Size of each element: ``len(elements) // count``."""
        return len(self.elements) // self.count

    def split(self) -> list[bytes]:
        """The elements as separate ``bytes`` objects."""
        size = len(self.elements) // self.count
        data = self.elements
        return [data[i : i + size] for i in range(0, len(data), size)]


@dataclass(frozen=True, slots=True, kw_only=True)
class OnNextPart:
    """Publisher -> subscriber: a non-final piece of split element ``element_id`` (§8); wire-only."""

    subscriber: int
    element_id: int
    data: bytes

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_uint("element_id", self.element_id)
        _check_bytes("data", self.data)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnNextLastPart:
    """Publisher -> subscriber: the final piece of split element ``element_id`` (§8); wire-only."""

    subscriber: int
    element_id: int
    data: bytes

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_uint("element_id", self.element_id)
        _check_bytes("data", self.data)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnComplete:
    """Publisher -> subscriber: the stream ended normally (or a cancel is acknowledged, §5.4)."""

    subscriber: int

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)


@dataclass(frozen=True, slots=True, kw_only=True)
class OnError:
    """Publisher -> subscriber: the stream failed (or the subscribe was refused)."""

    subscriber: int
    error: str

    def __post_init__(self) -> None:
        _check_uint("subscriber", self.subscriber)
        _check_str("error", self.error)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionMessage:
    """A message of a negotiated extension (§4.4): ``type`` in 0x80..0xFF and an opaque payload.

    Its wire form is the same for every extension: the type byte, a varint payload length,
    the payload. Which extension owns ``type`` is :mod:`rstreams.wire.extensions`' table.
    """

    type: int
    payload: bytes = b""

    def __post_init__(self) -> None:
        _check_uint("type", self.type, 0xFF)
        if self.type < FIRST_EXTENSION_TYPE:
            raise ValueError(f"extension message types are 0x80..0xFF, got 0x{self.type:02x}")
        _check_bytes("payload", self.payload)


Frame: TypeAlias = (
    ClientHello
    | ServerHello
    | Goodbye
    | Subscribe
    | Request
    | Cancel
    | OnSubscribe
    | OnNext
    | OnNextPacked
    | OnNextPart
    | OnNextLastPart
    | OnComplete
    | OnError
    | ExtensionMessage
)

FRAME_CLASSES: dict[FrameType, type[Frame]] = {
    FrameType.CLIENT_HELLO: ClientHello,
    FrameType.SERVER_HELLO: ServerHello,
    FrameType.GOODBYE: Goodbye,
    FrameType.SUBSCRIBE: Subscribe,
    FrameType.REQUEST: Request,
    FrameType.CANCEL: Cancel,
    FrameType.ON_SUBSCRIBE: OnSubscribe,
    FrameType.ON_NEXT: OnNext,
    FrameType.ON_NEXT_PACKED: OnNextPacked,
    FrameType.ON_NEXT_PART: OnNextPart,
    FrameType.ON_NEXT_LAST_PART: OnNextLastPart,
    FrameType.ON_COMPLETE: OnComplete,
    FrameType.ON_ERROR: OnError,
}
"""The one table mapping type codes to message classes."""

FRAME_TYPES: dict[type[Frame], FrameType] = {cls: code for code, cls in FRAME_CLASSES.items()}
"""Core message classes -> type code (:class:`ExtensionMessage` carries its own code)."""


# -- fast construction for the parser: fields already validated by decoding ----------------
_new = object.__new__
_set_subscriber = OnNext.__dict__["subscriber"].__set__  # slot descriptors bypass the frozen __setattr__
_set_element = OnNext.__dict__["element"].__set__


def make_on_next(subscriber: int, element: bytes) -> OnNext:
    """Build an :class:`OnNext` without re-validating (the parser's hot path)."""
    frame: OnNext = _new(OnNext)
    _set_subscriber(frame, subscriber)
    _set_element(frame, element)
    return frame


def _setters(cls: type, *names: str) -> list[Any]:
    return [cls.__dict__[name].__set__ for name in names]


_req_sid, _req_demand = _setters(Request, "subscriber", "demand")
_cancel_sid, _complete_sid = _setters(Cancel, "subscriber")[0], _setters(OnComplete, "subscriber")[0]
_onsub_sid, _onsub_size = _setters(OnSubscribe, "subscriber", "element_size")
_sub_name, _sub_sid, _sub_demand = _setters(Subscribe, "publisher", "subscriber", "initial_demand")
_ext_type, _ext_payload = _setters(ExtensionMessage, "type", "payload")


def make_request(subscriber: int, demand: int) -> Request:
    """Build a :class:`Request` from decoded fields without re-validating."""
    frame: Request = _new(Request)
    _req_sid(frame, subscriber)
    _req_demand(frame, demand)
    return frame


def make_cancel(subscriber: int) -> Cancel:
    """Build a :class:`Cancel` from a decoded field without re-validating."""
    frame: Cancel = _new(Cancel)
    _cancel_sid(frame, subscriber)
    return frame


def make_on_complete(subscriber: int) -> OnComplete:
    """Build an :class:`OnComplete` from a decoded field without re-validating."""
    frame: OnComplete = _new(OnComplete)
    _complete_sid(frame, subscriber)
    return frame


def make_on_subscribe(subscriber: int, element_size: int) -> OnSubscribe:
    """Build an :class:`OnSubscribe` from decoded fields without re-validating."""
    frame: OnSubscribe = _new(OnSubscribe)
    _onsub_sid(frame, subscriber)
    _onsub_size(frame, element_size)
    return frame


def make_extension_message(message_type: int, payload: bytes) -> ExtensionMessage:
    """Build an :class:`ExtensionMessage` from decoded fields (a type some extension owns, a
    ``bytes`` payload) without re-validating."""
    frame: ExtensionMessage = _new(ExtensionMessage)
    _ext_type(frame, message_type)
    _ext_payload(frame, payload)
    return frame


def make_subscribe(publisher: str, subscriber: int, initial_demand: int) -> Subscribe:
    """Build a :class:`Subscribe` from decoded fields without re-validating."""
    frame: Subscribe = _new(Subscribe)
    _sub_name(frame, publisher)
    _sub_sid(frame, subscriber)
    _sub_demand(frame, initial_demand)
    return frame


# -- encoding ------------------------------------------------------------------------------
# Every byte rstreams writes is laid out by the functions below, and only here. Varints
# below 0x80 (ids, small demands and lengths: the common case) are appended inline, one
# byte, instead of calling ``encode_varint``. The
# ``write_*`` functions take fields, not frame objects, so that the connection's measured
# fast paths (``Connection.on_next``, ``on_next_many``, ``request``, ``send_subscribe``,
# ``send_on_subscribe``, ``send_on_complete``) can use them without building a frame;
# :data:`_ENCODERS`, the table behind :func:`encode` and
# ``Connection.send``, calls the same functions with a frame's fields.
_V = encode_varint
_BYTE = tuple(bytes((i,)) for i in range(256))
# The type codes as plain ints: reading an enum member costs ~70 ns, on every frame.
_GOODBYE = int(FrameType.GOODBYE)
_SUBSCRIBE = int(FrameType.SUBSCRIBE)
_REQUEST = int(FrameType.REQUEST)
_CANCEL = int(FrameType.CANCEL)
_ON_SUBSCRIBE = int(FrameType.ON_SUBSCRIBE)
_ON_NEXT = int(FrameType.ON_NEXT)
_ON_NEXT_BYTE = _BYTE[FrameType.ON_NEXT]
_ON_NEXT_PACKED_BYTE = _BYTE[FrameType.ON_NEXT_PACKED]
_ON_NEXT_PART_BYTE = _BYTE[FrameType.ON_NEXT_PART]
_ON_NEXT_LAST_PART_BYTE = _BYTE[FrameType.ON_NEXT_LAST_PART]
ON_NEXT_HEADERS = tuple(_ON_NEXT_BYTE + _BYTE[sid] for sid in range(0x80))
""":func:`on_next_header` of the one-byte ids (0 ... 127), made once."""
_ON_COMPLETE = int(FrameType.ON_COMPLETE)
_ON_ERROR = int(FrameType.ON_ERROR)
_ANSWER_HEADS = tuple(bytes((_ON_SUBSCRIBE, sid, 0, _ON_NEXT, sid)) for sid in range(0x80))
"""onSubscribe(sid, 0) and the start of an onNext of ``sid``, for the one-byte ids (write_answer)."""
_COMPLETES = tuple(bytes((_ON_COMPLETE, sid)) for sid in range(0x80))
"""onComplete(sid) of the one-byte ids (write_answer)."""


def _write_string(out: bytearray, data: bytes) -> None:
    size = len(data)
    if size < 0x80:
        out.append(size)
    else:
        out += _V(size)
    out += data


def write_hello(out: bytearray, code: FrameType, version: int, extensions: tuple[int, ...]) -> None:
    """Append a clientHello or serverHello (§4.1): type, version byte, varint count, ids."""
    out.append(code)
    out.append(version)
    out += _V(len(extensions))
    for ext in extensions:
        out += _V(ext)


def write_goodbye(out: bytearray, reason: str) -> None:
    """Append a goodbye (§9): type, UTF-8 reason."""
    out.append(_GOODBYE)
    _write_string(out, reason.encode())


def write_subscribe(out: bytearray, publisher: bytes, subscriber: int, initial_demand: int) -> None:
    """Append a subscribe (§5.1); ``publisher`` is the name already encoded as UTF-8."""
    out.append(_SUBSCRIBE)
    size = len(publisher)  # _write_string, inlined: once per request/response
    if size < 0x80:
        out.append(size)
    else:
        out += _V(size)
    out += publisher
    if 0 <= subscriber < 0x80 and 0 <= initial_demand < 0x80:  # small ids and demands: no varint calls
        out.append(subscriber)
        out.append(initial_demand)
        return
    out += _V(subscriber)
    out += _V(initial_demand)


def write_request(out: bytearray, subscriber: int, demand: int) -> None:
    """Append a request (§6.1)."""
    out.append(_REQUEST)
    if 0 <= subscriber < 0x80 and 0 <= demand < 0x80:
        out.append(subscriber)
        out.append(demand)
        return
    out += _V(subscriber)
    out += _V(demand)


def write_cancel(out: bytearray, subscriber: int) -> None:
    """Append a cancel (§5.4)."""
    out.append(_CANCEL)
    out += _V(subscriber)


def write_on_complete(out: bytearray, subscriber: int) -> None:
    """Append an onComplete (§5.2; also the acknowledgement of a cancel, §5.4)."""
    out.append(_ON_COMPLETE)
    if 0 <= subscriber < 0x80:
        out.append(subscriber)
    else:
        out += _V(subscriber)


def write_on_subscribe(out: bytearray, subscriber: int, element_size: int) -> None:
    """Append an onSubscribe (§5.2, §7)."""
    out.append(_ON_SUBSCRIBE)
    if 0 <= subscriber < 0x80 and 0 <= element_size < 0x80:
        out.append(subscriber)
        out.append(element_size)
        return
    out += _V(subscriber)
    out += _V(element_size)


def write_answer(out: bytearray, subscriber: int, element_size: int, element: bytes) -> None:
    """Append a whole one-element answer: onSubscribe, onNext with ``element``, onComplete
    (§5.2): the bytes of :func:`write_on_subscribe`, :func:`write_on_next` and
    :func:`write_on_complete` in turn, one call (a test holds them equal)."""
    size = len(element)
    if 0 <= subscriber < 0x80 and 0 <= element_size < 0x80 and size < 0x80:  # one-byte varints
        if element_size:
            out += bytes((_ON_SUBSCRIBE, subscriber, element_size, _ON_NEXT, subscriber))
            out += element
            out += _COMPLETES[subscriber]
        else:  # one join and one append to the buffer (each append may grow it: a realloc)
            out += b"".join((_ANSWER_HEADS[subscriber], _BYTE[size], element, _COMPLETES[subscriber]))
        return
    write_on_subscribe(out, subscriber, element_size)
    write_on_next(out, on_next_header(subscriber), element, element_size)
    write_on_complete(out, subscriber)


def on_next_header(subscriber: int) -> bytes:
    """The bytes every onNext for ``subscriber`` starts with: type and id (built once per stream)."""
    if 0 <= subscriber < 0x80:
        return ON_NEXT_HEADERS[subscriber]
    return _ON_NEXT_BYTE + _V(subscriber)


def on_next_head(header: bytes, size: int, element_size: int) -> bytes:
    """``header`` (:func:`on_next_header`) plus the length prefix of a ``size``-byte element,
    which a stream with a fixed ``element_size`` leaves out (§7): all of an onNext but its element."""
    if element_size:
        return header
    return header + (_BYTE[size] if size < 0x80 else _V(size))


def write_on_next(out: bytearray, header: bytes, element: bytes, element_size: int) -> None:
    """Append one onNext: ``on_next_head(header, len(element), element_size) + element``.

    The per-element form of :func:`on_next_head`, written out so that the hot path makes
    one call per element and no intermediate ``bytes``; a property test holds the two equal.
    :meth:`rstreams.wire.Connection.on_next` writes out its common case (a length below 128, no
    elementSize) as a twin, held equal to the table's encoding by its own property test.
    """
    out += header
    if not element_size:
        size = len(element)
        if size < 0x80:
            out.append(size)
        else:
            out += _V(size)
    out += element


def on_next_packed_head(subscriber: int, count: int) -> bytes:
    """All of an onNextPacked but its ``count * elementSize`` bytes of elements (§7)."""
    return _ON_NEXT_PACKED_BYTE + _V(subscriber) + _V(count)


def part_head(last: bool, subscriber: int, element_id: int, length: int) -> bytes:
    """All of an onNextPart / onNextLastPart but its ``length`` bytes of data (§8)."""
    code = _ON_NEXT_LAST_PART_BYTE if last else _ON_NEXT_PART_BYTE
    return code + _V(subscriber) + _V(element_id) + _V(length)


def write_on_error(out: bytearray, subscriber: int, error: str) -> None:
    """Append an onError (§5.2): id and UTF-8 text."""
    out.append(_ON_ERROR)
    if 0 <= subscriber < 0x80:
        out.append(subscriber)
    else:
        out += _V(subscriber)
    text = error.encode()
    size = len(text)  # _write_string, inlined: once per refused subscribe
    if size < 0x80:
        out.append(size)
    else:
        out += _V(size)
    out += text


def write_extension(out: bytearray, type: int, payload: bytes) -> None:  # noqa: A002  # the field's name
    """Append an extension message (§4.4): type byte, varint length, payload."""
    out.append(type)
    _write_string(out, payload)


def _hello(out: bytearray, f: ClientHello | ServerHello, _: int) -> None:
    write_hello(out, FRAME_TYPES[type(f)], f.version, f.extensions)


def _goodbye(out: bytearray, f: Goodbye, _: int) -> None:
    write_goodbye(out, f.reason)


def _subscribe(out: bytearray, f: Subscribe, _: int) -> None:
    write_subscribe(out, f.publisher.encode(), f.subscriber, f.initial_demand)


def _request(out: bytearray, f: Request, _: int) -> None:
    write_request(out, f.subscriber, f.demand)


def _cancel(out: bytearray, f: Cancel, _: int) -> None:
    write_cancel(out, f.subscriber)


def _on_complete(out: bytearray, f: OnComplete, _: int) -> None:
    write_on_complete(out, f.subscriber)


def _on_subscribe(out: bytearray, f: OnSubscribe, _: int) -> None:
    write_on_subscribe(out, f.subscriber, f.element_size)


def _on_next(out: bytearray, f: OnNext, element_size: int) -> None:
    if element_size and len(f.element) != element_size:
        raise ValueError(f"element must be exactly {element_size} bytes, got {len(f.element)}")
    write_on_next(out, on_next_header(f.subscriber), f.element, element_size)


def _on_next_packed(out: bytearray, f: OnNextPacked, element_size: int) -> None:
    if element_size and f.element_size != element_size:
        raise ValueError(f"packed elements must be {element_size} bytes each, got {f.element_size}")
    out += on_next_packed_head(f.subscriber, f.count)
    out += f.elements


def _part(out: bytearray, f: OnNextPart | OnNextLastPart, _: int) -> None:
    out += part_head(type(f) is OnNextLastPart, f.subscriber, f.element_id, len(f.data))
    out += f.data


def _on_error(out: bytearray, f: OnError, _: int) -> None:
    write_on_error(out, f.subscriber, f.error)


def _extension(out: bytearray, f: ExtensionMessage, _: int) -> None:
    write_extension(out, f.type, f.payload)


_Encoder = Callable[[bytearray, Any, int], None]
_ENCODERS: dict[type[Frame], _Encoder] = {
    ClientHello: _hello,
    ServerHello: _hello,
    Goodbye: _goodbye,
    Subscribe: _subscribe,
    Request: _request,
    Cancel: _cancel,
    OnSubscribe: _on_subscribe,
    OnNext: _on_next,
    OnNextPacked: _on_next_packed,
    OnNextPart: _part,
    OnNextLastPart: _part,
    OnComplete: _on_complete,
    OnError: _on_error,
    ExtensionMessage: _extension,
}
"""Message class -> its encoder: the one table every frame object is written through."""


def encode_into(out: bytearray, frame: Frame, element_size: int = 0) -> None:
    """Append ``frame``'s bytes to ``out`` (see :func:`encode`)."""
    _ENCODERS[type(frame)](out, frame, element_size)


def encode(frame: Frame, *, element_size: int = 0) -> bytes:
    """The wire bytes of ``frame``.

    Args:
        frame: any message.
        element_size: the subscription's ``OnSubscribe.element_size``; when non-zero an
            ``OnNext`` element must have exactly that length and is written without a
            length prefix (§7).

    Raises:
        ValueError: the element does not match ``element_size``.
    """
    out = bytearray()
    encode_into(out, frame, element_size)
    return bytes(out)
