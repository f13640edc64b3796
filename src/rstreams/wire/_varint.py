"""Unsigned base-128 varints (the protobuf varint), PROTOCOL.md §2.1.

Seven bits per byte, least significant group first; the high bit of a byte says
"another byte follows". A value takes 1 byte below 2**7, 2 below 2**14, ..., 9 below
2**63 and 10 up to 2**64 - 1, the largest value the wire can carry.

Decoding is strict so that every value has exactly one encoding:

* more than 10 bytes, or a 10th byte above 1 (a value >= 2**64), is rejected;
* a non-minimal encoding (a last byte of ``0x00`` after a continuation byte, e.g.
  ``80 00`` for 0) is rejected.

The hot paths (the frame parser and the OnNext encoder) inline the one-byte case;
these functions are the general path.
"""

from __future__ import annotations

from rstreams.errors import ReactiveStreamsError
from rstreams.wire._errors import FrameError

__all__ = ["MAX_U64", "MAX_VARINT_BYTES", "Incomplete", "decode_varint", "encode_varint", "varint_size"]

MAX_U64 = 2**64 - 1
"""The largest value a varint may carry (10 bytes)."""

MAX_VARINT_BYTES = 10
"""ceil(64 / 7): the longest legal varint."""

_SMALL = tuple(bytes((i,)) for i in range(128))
"""Pre-built encodings of 0..127, the common case (ids, short lengths)."""


class Incomplete(ReactiveStreamsError):
    """Raised by decoders when the buffer ends inside a field: "need more data".

    ``end`` is the buffer position the frame needs to reach when it is known (a length
    prefix was read), else 0.
    """

    def __init__(self, end: int = 0) -> None:
        super().__init__()
        self.end = end


def encode_varint(value: int) -> bytes:
    """Encode ``0 <= value <= 2**64 - 1``; raises ``ValueError`` outside that range."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    if value < 0 or value > MAX_U64:
        raise ValueError(f"a varint holds 0..2**64-1, got {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_size(value: int) -> int:
    """Number of bytes :func:`encode_varint` produces for ``value``."""
    return max(1, (value.bit_length() + 6) // 7)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode the varint starting at ``buf[pos]``; return ``(value, position after it)``.

    Raises:
        Incomplete: the varint runs past ``end``.
        FrameError: over-long (more than 10 bytes or >= 2**64) or non-minimal.
    """
    if pos >= end:
        raise Incomplete
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    start = pos
    pos += 1
    while True:
        if pos >= end:
            raise Incomplete
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if b == 0:
                raise FrameError("non-minimal varint encoding (trailing 0x00 byte)", section="2.1")
            if result > MAX_U64:
                break
            return result, pos
        if pos - start >= MAX_VARINT_BYTES:
            break
        shift += 7
    raise FrameError("over-long varint: more than 10 bytes or a value above 2**64-1", section="2.1")
