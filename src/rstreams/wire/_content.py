"""Extension content-types (PROTOCOL.md §17): the publisher states its elements' media type.

One message, ``contentType`` (``0x90``), payload ``subscriber: varint`` then the media type as
US-ASCII text filling the rest of the payload. It qualifies the onSubscribe written right
after it (a qualifier, like errorCode, §19.1). No contentType means the type is unstated:
the elements are opaque bytes, as without the extension.

The built-in types, whose bytes §17.3 specifies, are the constants below.
"""

from __future__ import annotations

from rstreams.errors import RemoteProtocolError
from rstreams.wire._errors import ExtensionError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "ARROW_STREAM",
    "FLOAT64_LE",
    "INT64_LE",
    "JSON",
    "MAX_MEDIA_TYPE_LENGTH",
    "MSGPACK_TYPE",
    "OCTET_STREAM",
    "TEXT_UTF8",
    "check_media_type",
    "decode_content_type",
    "encode_content_type",
    "normal_form",
    "same_media_type",
]

OCTET_STREAM = "application/octet-stream"
JSON = "application/json"
MSGPACK_TYPE = "application/msgpack"
ARROW_STREAM = "application/vnd.apache.arrow.stream"
TEXT_UTF8 = "text/plain; charset=utf-8"
INT64_LE = "application/vnd.rsio.int64le"
FLOAT64_LE = "application/vnd.rsio.float64le"

MAX_MEDIA_TYPE_LENGTH = 255
"""Longest media type, in bytes (§17.1)."""

_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def check_media_type(text: str) -> str | None:
    """Why ``text`` is not a media type of §17.1 (``type/subtype *(; parameter)``, printable
    US-ASCII, 1-255 bytes), or ``None`` when it is one."""
    if not 0 < len(text) <= MAX_MEDIA_TYPE_LENGTH:
        return f"a media type is 1..{MAX_MEDIA_TYPE_LENGTH} bytes, got {len(text)}"
    if not text.isascii() or not text.isprintable():
        return "a media type is printable US-ASCII"
    essence = text.split(";", 1)[0].strip()
    kind, slash, sub = essence.partition("/")
    if not slash or not kind or not sub or not set(kind + sub) <= _TOKEN:
        return f"a media type starts with type/subtype, got {essence!r}"
    return None


def same_media_type(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same type: case-insensitive, spaces around ``;`` and
    ``=`` ignored, parameters in order (§17.1)."""
    return normal_form(a) == normal_form(b)


def normal_form(text: str) -> str:
    """The form two media types are compared in (§17.1): lower case, no spaces around ``;``, ``=``."""
    return ";".join("=".join(p.strip() for p in part.split("=")) for part in text.lower().split(";"))


def encode_content_type(subscriber: int, media_type: str) -> bytes:
    """A contentType payload (§17.1): subscriber varint, then the media type's bytes."""
    return encode_varint(subscriber) + media_type.encode("ascii")


def decode_content_type(data: bytes) -> tuple[int, str]:
    """``(subscriber, media type)``; :class:`ExtensionError` citing §17.1 if malformed."""
    try:
        subscriber, pos = decode_varint(data, 0, len(data))
    except (Incomplete, RemoteProtocolError):
        raise ExtensionError("malformed contentType payload (subscriber id)", section="17.1") from None
    try:
        text = data[pos:].decode("ascii")
    except UnicodeDecodeError:
        raise ExtensionError("malformed contentType payload (not US-ASCII)", section="17.1") from None
    problem = check_media_type(text)
    if problem is not None:
        raise ExtensionError(f"malformed contentType payload ({problem})", section="17.1")
    return subscriber, text
