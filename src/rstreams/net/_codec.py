"""Element codecs: how Python objects become the bytes RS.io carries, and back.

At this layer elements are bytes. A :class:`Codec` is a pair of plain functions, applied
once per element right where the element crosses the wire (no extra hop): ``encode``
on the publishing side, ``decode`` on the subscribing side. ``None`` as a codec means
raw bytes (``bytes``, ``bytearray`` and ``memoryview`` are sent as they are).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["JSON", "UTF8", "Codec"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Codec(Generic[T]):
    """``encode(element) -> bytes`` and ``decode(bytes) -> element``; both must not return ``None``."""

    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]

    def __post_init__(self) -> None:
        for name in ("encode", "decode"):
            if not callable(getattr(self, name)):
                raise TypeError(f"Codec(encode, decode) needs two callables; {name} is not")


def _json_encode(item: Any) -> bytes:
    return json.dumps(item, separators=(",", ":")).encode()


JSON: Codec[Any] = Codec(_json_encode, json.loads)
"""Elements as compact JSON (UTF-8)."""

UTF8: Codec[str] = Codec(str.encode, bytes.decode)
"""Elements as UTF-8 text."""
