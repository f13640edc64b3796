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
such a codec for raw bytes, :data:`INT64` and :data:`FLOAT64` for numbers. An element of
another size ends its stream with :class:`ElementSizeError`.

Content types (PROTOCOL.md §17): a codec names the media type of what it encodes
(``media_type``). A serving side announces it when it answers a subscribe, and
``conn.publisher(name)`` without ``codec=`` decodes by the announcement with the codec
:func:`codec_for` finds; an explicit codec whose type differs fails the subscription with
:class:`ContentTypeError`, naming both. :data:`RAW` takes any stream as bytes. An element
that does not decode ends its subscription with :class:`DecodeError` (the decoder's error as
its cause), naming the publisher and the type.

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

from rstreams.errors import MissingExtraError, ReactiveStreamsError
from rstreams.wire._content import (
    ARROW_STREAM,
    FLOAT64_LE,
    INT64_LE,
    MSGPACK_TYPE,
    OCTET_STREAM,
    TEXT_UTF8,
    check_media_type,
    normal_form,
)
from rstreams.wire._content import JSON as JSON_TYPE

__all__ = [
    "ARROW",
    "FLOAT64",
    "INT64",
    "JSON",
    "MSGPACK",
    "RAW",
    "UTF8",
    "Codec",
    "ContentTypeError",
    "DecodeError",
    "ElementSizeError",
    "EncodeError",
    "codec_for",
    "decode_failed",
    "fixed_size",
    "split_packed",
]

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
    media_type: str | None = None
    """The media type of the encoded elements (PROTOCOL.md §17), announced to subscribers;
    ``None``: unstated (nothing is announced, and no announcement is contradicted)."""

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
        if self.media_type is not None:
            text: object = self.media_type
            problem = check_media_type(text) if isinstance(text, str) else "not a str"
            if problem is not None:
                raise ValueError(f"Codec media_type {self.media_type!r}: {problem} (PROTOCOL.md §17.1)")

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

    return Codec(identity, identity, n, b"".join, split, OCTET_STREAM)


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


def _msgpack() -> Any:
    """The msgpack module (the msgpack extra; imported on first use), or an error naming the extra."""
    try:
        import msgpack
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] != "msgpack":
            raise
        raise MissingExtraError(
            "the MSGPACK codec needs the msgpack extra: pip install 'rstreams[msgpack]'", name=missing.name
        ) from missing
    return msgpack


def _msgpack_encode(item: Any) -> bytes:
    return _msgpack().packb(item, use_bin_type=True)  # type: ignore[no-any-return]


def _msgpack_decode(data: bytes) -> Any:
    return _msgpack().unpackb(data, raw=False)


def _arrow_encode(data: Any) -> bytes:
    import pyarrow as pa  # the spark extra's pyarrow; imported on first use

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


def _arrow_decode(data: bytes) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_all()


JSON: Codec[Any] = Codec(_json_encode, json.loads, media_type=JSON_TYPE)
"""Elements as compact JSON (UTF-8), ``application/json``."""

UTF8: Codec[str] = Codec(str.encode, bytes.decode, media_type=TEXT_UTF8)
"""Elements as UTF-8 text, ``text/plain; charset=utf-8``."""

INT64: Codec[int] = Codec(_INT64.pack, _unpack_int64, 8, *_many("q"), media_type=INT64_LE)
"""Signed 64-bit little-endian integers (``application/vnd.rsio.int64le``): fixed size, sent packed."""

FLOAT64: Codec[float] = Codec(_FLOAT64.pack, _unpack_float64, 8, *_many("d"), media_type=FLOAT64_LE)
"""IEEE 754 doubles, little-endian (``application/vnd.rsio.float64le``): fixed size, sent packed."""

MSGPACK: Codec[Any] = Codec(_msgpack_encode, _msgpack_decode, media_type=MSGPACK_TYPE)
"""One MessagePack object per element, ``application/msgpack`` (needs the ``msgpack`` extra)."""

ARROW: Codec[Any] = Codec(_arrow_encode, _arrow_decode, media_type=ARROW_STREAM)
"""One Arrow IPC stream per element (schema, record batches, end-of-stream), ``application/
vnd.apache.arrow.stream``: encodes a ``pyarrow.Table`` or ``RecordBatch``, decodes to a
``pyarrow.Table`` (needs ``pyarrow``)."""

RAW: Codec[bytes] = Codec(identity, identity)
"""Elements as the bytes they are, whatever the publisher announces (no type, no check)."""

_BY_MEDIA_TYPE: dict[str, Codec[Any]] = {
    normal_form(codec.media_type): codec
    for codec in (JSON, UTF8, INT64, FLOAT64, MSGPACK, ARROW)
    if codec.media_type is not None
}


def codec_for(media_type: str) -> Codec[Any] | None:
    """The built-in codec for an announced ``media_type``, or ``None`` (keep the bytes:
    ``application/octet-stream`` and types rstreams has no codec for)."""
    return _BY_MEDIA_TYPE.get(normal_form(media_type))


class ElementSizeError(ReactiveStreamsError, ValueError):
    """A served element, or a batch of them, does not have the size its codec promised: a codec
    whose ``element_size`` is n (``fixed_size(n)``, ``INT64``, ``FLOAT64``) announces n in
    ``onSubscribe``, and every element of that subscription must then be exactly n bytes
    (PROTOCOL.md §7). The stream ends with this (its upstream cancelled); the remote subscriber
    gets its type and text, code 1; other streams go on. ``size`` is what was encoded, in bytes,
    ``element_size`` what was promised; ``batch`` tells a batch (``with_codec(...,
    batched=True)``), whose size is not a multiple of ``element_size``."""

    def __init__(self, size: int, element_size: int, *, batch: bool = False) -> None:
        what = f"a batch of {size} bytes, not a whole number of them" if batch else f"{size} bytes"
        super().__init__(
            f"the codec promised {element_size}-byte elements (its element_size; PROTOCOL.md §7: "
            f"every element of the subscription is exactly that), got {what}"
        )
        self.size = size
        self.element_size = element_size
        self.batch = batch


class ContentTypeError(ReactiveStreamsError, TypeError):
    """A subscription's explicit codec decodes another media type than the publisher announced."""

    def __init__(self, publisher: str, announced: str, codec: Codec[Any]) -> None:
        super().__init__(
            f"publisher {publisher!r} announces {announced!r} (PROTOCOL.md §17), but the codec given "
            f"decodes {codec.media_type!r}; leave codec= out to decode by the announcement, or pass "
            f"codec=RAW for the bytes"
        )
        self.publisher = publisher
        self.announced = announced
        self.expected = codec.media_type


class DecodeError(ReactiveStreamsError, ValueError):
    """A received element that its subscription's codec cannot decode: bytes that are not the
    content type the publisher announced (PROTOCOL.md §17) or the explicit ``codec=`` expects.
    The subscription ends with this (cancelled on the wire), the decoder's own error as
    ``__cause__``; ``codec=RAW`` receives any element as its bytes. ``publisher`` names the
    publisher, ``media_type`` the type decoded by (``None``: a codec without one)."""

    def __init__(self, publisher: str, media_type: str | None, codec: str, error: BaseException) -> None:
        what = f"{media_type!r} ({codec})" if media_type is not None else codec
        kind, cause = type(error), type(error).__qualname__
        if kind.__module__ != "builtins":
            cause = f"{kind.__module__}.{cause}"  # struct.error, json.decoder.JSONDecodeError
        super().__init__(
            f"publisher {publisher!r}: an element does not decode as {what}: "
            f"{cause}: {error} (PROTOCOL.md §17; pass codec=RAW to receive the bytes as they are)"
        )
        self.publisher = publisher
        self.media_type = media_type


def decode_failed(publisher: str, decode: Callable[..., Any] | None, error: BaseException) -> BaseException:
    """What a subscription to ``publisher`` ends with when ``decode`` (a codec's ``decode``,
    ``decode_many`` or ``decode_batch``) raised ``error``: a :class:`DecodeError` naming the
    publisher and codec, ``error`` its cause. An rstreams error (a missing extra, say) stays as
    it is. Called on the failure path only: decoding itself is the codec's plain call."""
    if isinstance(error, ReactiveStreamsError):
        return error
    bound = getattr(decode, "__self__", None)
    codec = bound if isinstance(bound, Codec) else None  # decode_batch
    for name in ("JSON", "UTF8", "INT64", "FLOAT64", "MSGPACK", "ARROW"):
        known: Codec[Any] = globals()[name]
        if codec is known or (codec is None and decode in (known.decode, known.decode_many)):
            label, media_type = name, known.media_type
            break
    else:
        label = f"the codec's {getattr(decode, '__qualname__', 'decode')}"
        media_type = codec.media_type if codec is not None else None
    failure = DecodeError(publisher, media_type, label, error)
    failure.__cause__ = error
    return failure


class EncodeError(ReactiveStreamsError, TypeError):
    """An element that a served stream cannot send: its codec cannot encode it (a type or a
    range the codec does not take), the codec's ``encode`` returned something other than
    bytes, or, without a codec, the element is not bytes. The stream ends with this (onError
    to the subscriber, PROTOCOL.md §6); the encoder's own error, if any, is ``__cause__``."""


_TAKES = {
    "JSON": "dict, list, str, int, float, bool or None",
    "UTF8": "str",
    "INT64": "int from -2**63 to 2**63 - 1",
    "FLOAT64": "float or int",
    "MSGPACK": "dict, list, str, bytes, int, float, bool or None",
    "ARROW": "a pyarrow Table or RecordBatch",
}
"""What each built-in codec encodes, for :func:`encode_failed`'s message."""


def not_bytes(element: object) -> EncodeError:
    """An element that is not bytes, served without a codec (or so returned by a codec's
    ``encode``: :func:`encode_failed` words that case)."""
    failure = EncodeError(
        f"elements are bytes on the wire, got {type(element).__name__}; pass codec=rstreams.net.JSON "
        "(or another Codec) to send Python objects"
    )
    failure.got = type(element).__name__  # type: ignore[attr-defined]
    return failure


def encode_failed(encode: Callable[..., Any], element: object, error: BaseException) -> BaseException:
    """What a served stream ends with when ``encode`` (a codec's ``encode`` or ``encode_batch``)
    raised ``error`` for ``element``, or returned what is not bytes (``error`` is then
    :func:`not_bytes`'s): an :class:`EncodeError` naming the codec, what it takes and what it
    got, ``error`` its cause. An rstreams error (a missing extra, say) stays as it is. Called on
    the failure path only: encoding itself is the codec's plain call."""
    returned = getattr(error, "got", None)
    if isinstance(error, ReactiveStreamsError) and returned is None:
        return error
    bound = getattr(encode, "__self__", None)
    codec = bound if isinstance(bound, Codec) else None  # encode_batch
    for name, takes in _TAKES.items():
        known: Codec[Any] = globals()[name]
        if codec is known or (codec is None and encode in (known.encode, known.encode_many)):
            label = f"{name} (which takes {takes})"
            break
    else:
        label = f"the codec's {getattr(encode, '__qualname__', 'encode')}"
    if returned is not None:
        return EncodeError(f"{label} returned {returned}, not bytes (a Codec's encode returns bytes)")
    got = "a batch" if codec is not None else type(element).__name__
    kind, cause = type(error), type(error).__qualname__
    if kind.__module__ != "builtins":
        cause = f"{kind.__module__}.{cause}"  # struct.error
    failure = EncodeError(f"an element does not encode with {label}: got {got} ({cause}: {error})")
    failure.__cause__ = error
    return failure
