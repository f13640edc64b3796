"""The channels extension's payloads (PROTOCOL.md §21): a subscription that carries an input stream.

Sans-I/O: bytes in, values out, and back. Every payload starts with the subscriber id of
the channel's subscription (the opener's id, as in subscribe; §5.1)::

    channel (0xA0)        subscriber                     opener -> publisher: the subscribe right
                                                         after it (same id) opens a channel
    inputRequest (0xA1)   subscriber, demand: varint     publisher -> opener: demand for input
    inputCancel (0xA2)    subscriber                     publisher -> opener: no more input
    inputNext (0xA3)      subscriber, element: the rest  opener -> publisher: one input element
    inputComplete (0xA4)  subscriber                     opener -> publisher: the input ended
    inputError (0xA5)     subscriber, error: the rest    opener -> publisher: the input failed (UTF-8)
    inputNextPart (0xA6)  subscriber, data: the rest     opener -> publisher: a part of an input element
                                                         whose last part is the inputNext that follows
                                                         (extension input-parts, id 9, §21.6)
"""

from __future__ import annotations

from rstreams.demand import UNBOUNDED
from rstreams.wire._errors import ExtensionError, FrameError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "CHANNEL",
    "INPUT_CANCEL",
    "INPUT_COMPLETE",
    "INPUT_ERROR",
    "INPUT_NEXT",
    "INPUT_NEXT_PART",
    "INPUT_REQUEST",
    "NAMES",
    "decode_channel_message",
    "encode_channel_message",
    "encode_input_parts",
    "split_input",
]

CHANNEL = 0xA0
INPUT_REQUEST = 0xA1
INPUT_CANCEL = 0xA2
INPUT_NEXT = 0xA3
INPUT_COMPLETE = 0xA4
INPUT_ERROR = 0xA5
INPUT_NEXT_PART = 0xA6

NAMES = {
    CHANNEL: "channel",
    INPUT_REQUEST: "inputRequest",
    INPUT_CANCEL: "inputCancel",
    INPUT_NEXT: "inputNext",
    INPUT_COMPLETE: "inputComplete",
    INPUT_ERROR: "inputError",
    INPUT_NEXT_PART: "inputNextPart",
}

_ID_ONLY = frozenset({CHANNEL, INPUT_CANCEL, INPUT_COMPLETE})
_SECTION = "21.2"


def encode_channel_message(message_type: int, subscriber: int, rest: bytes | int = b"") -> bytes:
    """The payload of ``message_type`` for ``subscriber``: ``rest`` is inputRequest's demand,
    inputNext's element or inputError's UTF-8 text, nothing for the others."""
    head = encode_varint(subscriber)
    if isinstance(rest, int):
        return head + encode_varint(rest)
    return head + rest


def _varint(payload: bytes, pos: int, what: str) -> tuple[int, int]:
    try:
        return decode_varint(payload, pos, len(payload))
    except Incomplete:
        raise ExtensionError(f"{what}: the payload ends inside a varint", section=_SECTION) from None
    except FrameError as error:
        raise ExtensionError(f"{what}: {error}", section=_SECTION) from None


def decode_channel_message(message_type: int, payload: bytes) -> tuple[int, int | bytes | str | None]:
    """``(subscriber, value)`` of a channels message: inputRequest's demand, inputNext's element,
    inputNextPart's data, inputError's text, ``None`` for the others. ``ExtensionError`` (§21.2)
    if malformed or reserved."""
    what = NAMES.get(message_type)
    if what is None:
        raise ExtensionError(f"message type 0x{message_type:02x} is reserved", section=_SECTION)
    sid, pos = _varint(payload, 0, what)
    if message_type in _ID_ONLY:
        if pos != len(payload):
            extra = len(payload) - pos
            raise ExtensionError(f"{what} has {extra} byte(s) after its subscriber", section=_SECTION)
        return sid, None
    if message_type == INPUT_REQUEST:
        demand, end = _varint(payload, pos, what)
        if end != len(payload):
            extra = len(payload) - end
            raise ExtensionError(f"inputRequest has {extra} byte(s) after its demand", section=_SECTION)
        if not 1 <= demand <= UNBOUNDED:
            raise ExtensionError(f"inputRequest demand must be 1 .. 2**63-1, got {demand}", section=_SECTION)
        return sid, demand
    if message_type in (INPUT_NEXT, INPUT_NEXT_PART):
        return sid, payload[pos:]
    try:
        return sid, payload[pos:].decode()
    except UnicodeDecodeError:
        raise ExtensionError("inputError text is not valid UTF-8", section=_SECTION) from None


def encode_input_parts(subscriber: int, element: bytes, part_size: int) -> list[bytes]:
    """The payloads of the inputNextPart messages, then of the inputNext, that carry ``element``
    for ``subscriber`` in parts of at most ``part_size`` bytes (§21.6): each the subscriber id
    then its part, made with one copy of the element's bytes (``split_input`` then
    ``encode_channel_message`` made two)."""
    if part_size < 1:
        raise ValueError(f"part_size must be >= 1, got {part_size}")
    head = encode_varint(subscriber)
    view = memoryview(element)
    payloads = [head + view[at : at + part_size] for at in range(0, len(element), part_size)]
    return payloads or [head]


def split_input(element: bytes, part_size: int) -> list[bytes]:
    """The data of the inputNextPart messages, then of the inputNext, that carry ``element`` in
    parts of at most ``part_size`` bytes (§21.6); one piece when it fits in one."""
    if part_size < 1:
        raise ValueError(f"part_size must be >= 1, got {part_size}")
    view = memoryview(element)
    pieces = [bytes(view[at : at + part_size]) for at in range(0, len(element), part_size)]
    return pieces or [b""]
