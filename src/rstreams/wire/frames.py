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


def make_subscribe(publisher: str, subscriber: int, initial_demand: int) -> Subscribe:
    """Build a :class:`Subscribe` from decoded fields without re-validating."""
    frame: Subscribe = _new(Subscribe)
    _sub_name(frame, publisher)
    _sub_sid(frame, subscriber)
    _sub_demand(frame, initial_demand)
    return frame


# -- encoding ------------------------------------------------------------------------------
_V = encode_varint


def _string(out: bytearray, text: str) -> None:
    data = text.encode()
    out += _V(len(data))
    out += data


def _hello(out: bytearray, f: ClientHello | ServerHello, _: int) -> None:
    out.append(f.version)
    out += _V(len(f.extensions))
    for ext in f.extensions:
        out += _V(ext)


def _goodbye(out: bytearray, f: Goodbye, _: int) -> None:
    _string(out, f.reason)


def _subscribe(out: bytearray, f: Subscribe, _: int) -> None:
    _string(out, f.publisher)
    out += _V(f.subscriber)
    out += _V(f.initial_demand)


def _request(out: bytearray, f: Request, _: int) -> None:
    out += _V(f.subscriber)
    out += _V(f.demand)


def _id_only(out: bytearray, f: Cancel | OnComplete, _: int) -> None:
    out += _V(f.subscriber)


def _on_subscribe(out: bytearray, f: OnSubscribe, _: int) -> None:
    out += _V(f.subscriber)
    out += _V(f.element_size)


def _on_next(out: bytearray, f: OnNext, element_size: int) -> None:
    out += _V(f.subscriber)
    if element_size:
        if len(f.element) != element_size:
            raise ValueError(f"element must be exactly {element_size} bytes, got {len(f.element)}")
    else:
        out += _V(len(f.element))
    out += f.element


def _on_next_packed(out: bytearray, f: OnNextPacked, element_size: int) -> None:
    if element_size and f.element_size != element_size:
        raise ValueError(f"packed elements must be {element_size} bytes each, got {f.element_size}")
    out += _V(f.subscriber)
    out += _V(f.count)
    out += f.elements


def _part(out: bytearray, f: OnNextPart | OnNextLastPart, _: int) -> None:
    out += _V(f.subscriber)
    out += _V(f.element_id)
    out += _V(len(f.data))
    out += f.data


def _on_error(out: bytearray, f: OnError, _: int) -> None:
    out += _V(f.subscriber)
    _string(out, f.error)


_Encoder = Callable[[bytearray, "Frame", int], None]
_ENCODERS: dict[type[Frame], _Encoder] = {
    ClientHello: _hello,  # type: ignore[dict-item]
    ServerHello: _hello,  # type: ignore[dict-item]
    Goodbye: _goodbye,  # type: ignore[dict-item]
    Subscribe: _subscribe,  # type: ignore[dict-item]
    Request: _request,  # type: ignore[dict-item]
    Cancel: _id_only,  # type: ignore[dict-item]
    OnSubscribe: _on_subscribe,  # type: ignore[dict-item]
    OnNext: _on_next,  # type: ignore[dict-item]
    OnNextPacked: _on_next_packed,  # type: ignore[dict-item]
    OnNextPart: _part,  # type: ignore[dict-item]
    OnNextLastPart: _part,  # type: ignore[dict-item]
    OnComplete: _id_only,  # type: ignore[dict-item]
    OnError: _on_error,  # type: ignore[dict-item]
}


def encode_into(out: bytearray, frame: Frame, element_size: int = 0) -> None:
    """Append ``frame``'s bytes to ``out`` (see :func:`encode`)."""
    if type(frame) is ExtensionMessage:
        out.append(frame.type)
        out += _V(len(frame.payload))
        out += frame.payload
        return
    out.append(FRAME_TYPES[type(frame)])
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
