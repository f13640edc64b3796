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

Batches: ``conn.publisher(name, codec=..., batched=True)`` hands the subscriber lists of
elements (one per packed frame, decoded by ``decode_many`` in one call) and
``with_codec(target, codec, batched=True)`` serves a publisher that emits lists (encoded
by ``encode_many`` in one call): at millions of elements per second a Python call per
element is the limit, so these move elements a frame at a time.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["FLOAT64", "INT64", "JSON", "UTF8", "Codec", "fixed_size", "split_packed"]

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
    encode_many: Callable[[Sequence[T]], bytes] | None = None
    """Optional, fixed-size codecs: many elements -> their encodings back to back, in one
    call (what a batched publisher's lists become; default: ``encode`` each and join)."""
    decode_many: Callable[[bytes], list[T]] | None = None
    """Optional, fixed-size codecs: a packed payload -> its elements, in one call (what a
    batched subscriber receives; default: split and ``decode`` each)."""

    def __post_init__(self) -> None:
        for name in ("encode", "decode"):
            if not callable(getattr(self, name)):
                raise TypeError(f"Codec(encode, decode) needs two callables; {name} is not")
        if type(self.element_size) is not int or self.element_size < 0:
            raise ValueError(f"element_size must be an int >= 0, got {self.element_size!r}")
        for name in ("encode_many", "decode_many"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"Codec {name} must be callable or None, got {value!r}")

    def encode_batch(self, elements: Sequence[T]) -> bytes:
        """``elements`` encoded back to back (``encode_many`` if given)."""
        if self.encode_many is not None:
            return self.encode_many(elements)
        return b"".join(map(self.encode, elements))

    def decode_batch(self, data: bytes) -> list[T]:
        """The elements of a packed payload of ``element_size``-byte elements (``decode_many`` if given)."""
        if self.decode_many is not None:
            return self.decode_many(data)
        size = self.element_size
        decode = self.decode
        return [decode(data[i : i + size]) for i in range(0, len(data), size)]


def _json_encode(item: Any) -> bytes:
    return json.dumps(item, separators=(",", ":")).encode()


def identity(data: bytes) -> bytes:
    """Raw bytes in, the same bytes out (the serving side skips the call)."""
    return data


def fixed_size(n: int) -> Codec[bytes]:
    """Raw ``bytes`` elements of exactly ``n`` bytes each, sent packed."""
    if type(n) is not int or n < 1:
        raise ValueError(f"fixed_size(n) needs an int n >= 1, got {n!r}")

    def split(data: bytes) -> list[bytes]:
        return split_packed(data, n)

    return Codec(identity, identity, n, b"".join, split)


_SPLIT = 64
_splitters: dict[tuple[int, int], struct.Struct] = {}


def split_packed(data: bytes, size: int) -> list[bytes]:
    """``data`` cut into ``size``-byte elements, by ``struct`` in C (``"8s8s..."``), 64 at a time."""
    out: list[bytes] = []
    count = len(data) // size
    pos = 0
    while count:
        k = min(count, _SPLIT)
        splitter = _splitters.get((size, k))
        if splitter is None:
            if len(_splitters) >= 1024:
                _splitters.clear()
            splitter = _splitters[size, k] = struct.Struct(f"{size}s" * k)
        out += splitter.unpack_from(data, pos)
        pos += k * size
        count -= k
    return out


_INT64 = struct.Struct("<q")
_FLOAT64 = struct.Struct("<d")


def _many(code: str) -> tuple[Callable[[Sequence[Any]], bytes], Callable[[bytes], list[Any]]]:
    """Batch pack/unpack of little-endian 8-byte numbers (``q`` or ``d``) at C speed."""

    def encode_many(values: Sequence[Any]) -> bytes:
        return struct.pack(f"<{len(values)}{code}", *values)

    if sys.byteorder == "little":

        def decode_many(data: bytes) -> list[Any]:
            return memoryview(data).cast(code).tolist()  # type: ignore[call-overload,no-any-return]

    else:  # pragma: no cover - big-endian hosts

        def decode_many(data: bytes) -> list[Any]:
            return list(struct.unpack(f"<{len(data) >> 3}{code}", data))

    return encode_many, decode_many


def _unpack_int64(data: bytes) -> int:
    return int(_INT64.unpack(data)[0])


def _unpack_float64(data: bytes) -> float:
    return float(_FLOAT64.unpack(data)[0])


JSON: Codec[Any] = Codec(_json_encode, json.loads)
"""Elements as compact JSON (UTF-8)."""

UTF8: Codec[str] = Codec(str.encode, bytes.decode)
"""Elements as UTF-8 text."""

INT64: Codec[int] = Codec(_INT64.pack, _unpack_int64, 8, *_many("q"))
"""Signed 64-bit little-endian integers: fixed size, sent packed."""

FLOAT64: Codec[float] = Codec(_FLOAT64.pack, _unpack_float64, 8, *_many("d"))
"""IEEE 754 doubles, little-endian: fixed size, sent packed."""
