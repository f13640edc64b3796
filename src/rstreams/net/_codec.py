"""Element codecs: how Python objects become the bytes RS.io carries, and back.

At this layer elements are bytes. A :class:`Codec` is a pair of plain functions, applied
once per element right where the element crosses the wire (no extra hop): ``encode``
on the publishing side, ``decode`` on the subscribing side. ``None`` as a codec means
raw bytes (``bytes``, ``bytearray`` and ``memoryview`` are sent as they are).

A codec whose ``element_size`` is not 0 promises that every encoded element has exactly
that many bytes. The serving side then declares the size in ``onSubscribe`` and sends
the elements of one event-loop turn packed together in ``onNextPacked`` frames (no
length prefix, one frame header per batch instead of per element): the cheapest way to
move small fixed-size records such as ints, floats or structs. :func:`fixed_size` makes
such a codec for raw bytes, :data:`INT64` and :data:`FLOAT64` for numbers.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["FLOAT64", "INT64", "JSON", "UTF8", "Codec", "fixed_size"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Codec(Generic[T]):
    """``encode(element) -> bytes`` and ``decode(bytes) -> element``; neither may return ``None``.

    ``element_size``: 0 for elements of any size, else the exact size of every encoded
    element (enables packed frames; an element of another size fails the stream).
    """

    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]
    element_size: int = 0

    def __post_init__(self) -> None:
        for name in ("encode", "decode"):
            if not callable(getattr(self, name)):
                raise TypeError(f"Codec(encode, decode) needs two callables; {name} is not")
        if type(self.element_size) is not int or self.element_size < 0:
            raise ValueError(f"element_size must be an int >= 0, got {self.element_size!r}")


def _json_encode(item: Any) -> bytes:
    return json.dumps(item, separators=(",", ":")).encode()


def identity(data: bytes) -> bytes:
    """Raw bytes in, the same bytes out (the serving side skips the call)."""
    return data


def fixed_size(n: int) -> Codec[bytes]:
    """Raw ``bytes`` elements of exactly ``n`` bytes each, sent packed."""
    if type(n) is not int or n < 1:
        raise ValueError(f"fixed_size(n) needs an int n >= 1, got {n!r}")
    return Codec(identity, identity, n)


_INT64 = struct.Struct("<q")
_FLOAT64 = struct.Struct("<d")


def _unpack_int64(data: bytes) -> int:
    return int(_INT64.unpack(data)[0])


def _unpack_float64(data: bytes) -> float:
    return float(_FLOAT64.unpack(data)[0])


JSON: Codec[Any] = Codec(_json_encode, json.loads)
"""Elements as compact JSON (UTF-8)."""

UTF8: Codec[str] = Codec(str.encode, bytes.decode)
"""Elements as UTF-8 text."""

INT64: Codec[int] = Codec(_INT64.pack, _unpack_int64, 8)
"""Signed 64-bit little-endian integers: fixed size, sent packed."""

FLOAT64: Codec[float] = Codec(_FLOAT64.pack, _unpack_float64, 8)
"""IEEE 754 doubles, little-endian: fixed size, sent packed."""
