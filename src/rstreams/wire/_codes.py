"""Extension error-codes (PROTOCOL.md §19): a number from a small registry beside the text of
onError and goodbye.

Two messages, each sent immediately before the core message it qualifies and never alone:

* ``errorCode`` (``0x98``), payload ``subscriber: varint, code: varint``: the code of the
  next onError for that subscriber id;
* ``goodbyeCode`` (``0x99``), payload ``code: varint``: the code of the goodbye that follows.

The text stays what it was: a peer without the extension loses only the number. This module
holds the registry and the payloads' bytes; :class:`~rstreams.wire.Connection` writes and
reads them.
"""

from __future__ import annotations

from enum import IntEnum

from rstreams.errors import RemoteProtocolError
from rstreams.wire._errors import ExtensionError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "ErrorCode",
    "decode_error_code",
    "decode_goodbye_code",
    "encode_error_code",
    "encode_goodbye_code",
]


class ErrorCode(IntEnum):
    """The registry of PROTOCOL.md §19.2. Codes 1024 and above are for private use."""

    NORMAL = 0
    """goodbye only: an orderly close, nothing failed."""
    APPLICATION = 1
    """The publisher itself signalled the error (its on_error)."""
    UNKNOWN_PUBLISHER = 2
    """No publisher has the subscribed name (§5.5)."""
    UNAUTHENTICATED = 3
    """Credentials are missing or were refused (§15.3, §15.4)."""
    UNAUTHORIZED = 4
    """The principal may not subscribe to that name (§15.4)."""
    INVALID_DEMAND = 5
    """request(0), request(>= 2**63) or initialDemand >= 2**63 (rule 3.9, §6.2)."""
    PROTOCOL_VIOLATION = 6
    """The peer broke a rule of this document (§10)."""
    LIMIT_EXCEEDED = 7
    """A limit of the receiver was exceeded (§11)."""
    UNAVAILABLE = 8
    """The publisher or the endpoint cannot serve now (shutting down, overloaded: a server beyond its
    max_connections says goodbye with it, §10); try later."""
    INTERNAL = 9
    """The serving side failed (e.g. a publisher factory raised); not the subscriber's fault."""
    CANCELLED = 10
    """The serving side ended the stream (or the connection) on its own decision."""
    TIMEOUT = 11
    """Something did not happen in time (idle, authentication timeouts; a handshake timeout has no code)."""


def _malformed(what: str) -> ExtensionError:
    return ExtensionError(f"malformed {what} payload", section="19.1")


def encode_error_code(subscriber: int, code: int) -> bytes:
    """An errorCode payload (§19.1): subscriber varint, code varint."""
    return encode_varint(subscriber) + encode_varint(code)


def encode_goodbye_code(code: int) -> bytes:
    """A goodbyeCode payload (§19.1): code varint."""
    return encode_varint(code)


def _varints(data: bytes, count: int, what: str) -> list[int]:
    out: list[int] = []
    pos = 0
    try:
        for _ in range(count):
            value, pos = decode_varint(data, pos, len(data))
            out.append(value)
    except Incomplete:
        raise _malformed(f"{what} (truncated)") from None
    except RemoteProtocolError:
        raise _malformed(f"{what} (bad varint)") from None
    if pos != len(data):
        raise _malformed(f"{what} ({len(data) - pos} trailing bytes)")
    return out


def decode_error_code(data: bytes) -> tuple[int, int]:
    """``(subscriber, code)`` from an errorCode payload; :class:`ExtensionError` (§19.1) if malformed."""
    subscriber, code = _varints(data, 2, "errorCode")
    return subscriber, code


def decode_goodbye_code(data: bytes) -> int:
    """The code of a goodbyeCode payload; :class:`ExtensionError` (§19.1) if malformed."""
    return _varints(data, 1, "goodbyeCode")[0]
