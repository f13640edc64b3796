"""The RS.io extensions this implementation knows, and the message types each one owns (PROTOCOL.md §4.4).

An extension is switched on per connection by listing its id in both hellos (the active set is
the intersection, §4.4). It may then use its own message types, all in ``0x80..0xFF``.
Every extension message has one generic wire form, whatever the extension::

    type: u8 (0x80..0xFF), length: varint, payload: length bytes

so any receiver can frame it, and skip nothing: a message of an extension that is not active
(or of a type no extension owns), and a type its active extension reserves without defining
it (``reserved``), is a connection error citing §4.4. What the payload means
is the owning extension's business (PROTOCOL.md §14 onwards).

The registry is a plain table; the core looks a type up in :data:`BY_TYPE` to find its owner.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AUTH",
    "AUTH_AUTHENTICATE",
    "AUTH_OK",
    "AUTH_SUBSCRIBE_CREDENTIALS",
    "BY_ID",
    "BY_TYPE",
    "CHANNELS",
    "CONTENT_TYPE",
    "CONTENT_TYPES",
    "ERROR_CODE",
    "ERROR_CODES",
    "GOODBYE_CODE",
    "INPUT_PARTS",
    "KEEPALIVE",
    "KEEPALIVE_PAYLOAD_SIZE",
    "MESSAGES",
    "METADATA",
    "PING",
    "PONG",
    "REGISTERED",
    "RESUME",
    "SUBSCRIBE_METADATA",
    "Extension",
    "owner_of",
]


@dataclass(frozen=True, slots=True)
class Extension:
    """One extension: the id hellos list, a name for messages, and the message types it owns.

    ``reserved``: owned types it does not define (yet); receiving one is a connection error
    even while the extension is active (§4.4).
    """

    id: int
    name: str
    message_types: frozenset[int]
    reserved: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if type(self.id) is not int or not 0 <= self.id < 2**64:
            raise ValueError(f"an extension id is a u64, got {self.id!r}")
        if not self.message_types or any(
            type(t) is not int or not 0x80 <= t <= 0xFF for t in self.message_types
        ):
            raise ValueError(f"extension {self.name!r}: message types must be in 0x80..0xFF")
        if not self.reserved < self.message_types:
            raise ValueError(f"extension {self.name!r}: reserved types must be some of its message types")

    def __str__(self) -> str:
        return f"{self.name} (id {self.id})"


PING = 0x80
"""keepalive ping: payload = 8 opaque bytes (§14)."""
PONG = 0x81
"""keepalive pong: payload = the 8 bytes of the ping it answers (§14)."""
KEEPALIVE_PAYLOAD_SIZE = 8

AUTH_AUTHENTICATE = 0x84
"""auth authenticate, client -> server: payload = credentials (§15)."""
AUTH_OK = 0x85
"""auth authenticated, server -> client: empty payload; the credentials were accepted (§15)."""
AUTH_SUBSCRIBE_CREDENTIALS = 0x86
"""auth subscribeCredentials, client -> server: subscriber id + credentials for that subscribe (§15)."""

KEEPALIVE = Extension(1, "keepalive", frozenset({PING, PONG}))
AUTH = Extension(2, "auth", frozenset(range(0x84, 0x88)), reserved=frozenset({0x87}))
RESUME = Extension(3, "resume", frozenset(range(0x88, 0x90)), reserved=frozenset(range(0x8D, 0x90)))
"""Session resumption; its payloads are defined in PROTOCOL.md by the resumption extension."""

CONTENT_TYPE = 0x90
"""content-types contentType: subscriber varint + media type, immediately before that onSubscribe (§17)."""
CONTENT_TYPES = Extension(
    4, "content-types", frozenset(range(0x90, 0x94)), reserved=frozenset(range(0x91, 0x94))
)
SUBSCRIBE_METADATA = 0x94
"""metadata subscribeMetadata: subscriber varint + entries, immediately before that subscribe (§18)."""
METADATA = Extension(5, "metadata", frozenset(range(0x94, 0x98)), reserved=frozenset(range(0x95, 0x98)))
ERROR_CODE = 0x98
"""error-codes errorCode: subscriber varint + code varint, immediately before that onError (§19)."""
GOODBYE_CODE = 0x99
"""error-codes goodbyeCode: code varint, immediately before a goodbye (§19)."""
ERROR_CODES = Extension(6, "error-codes", frozenset(range(0x98, 0x9C)), reserved=frozenset({0x9A, 0x9B}))
MESSAGES = Extension(7, "messages", frozenset(range(0x9C, 0xA0)), reserved=frozenset({0x9E, 0x9F}))
"""Fire-and-forget messages to named handlers, bounded by message credit (§20; rstreams.wire._messages)."""
CHANNELS = Extension(8, "channels", frozenset(range(0xA0, 0xA6)) | {0xA7}, reserved=frozenset({0xA7}))
"""Subscriptions that carry an input stream to the publisher (§21; rstreams.wire._channels)."""
INPUT_PARTS = Extension(9, "input-parts", frozenset({0xA6}))
"""Channel input elements split into parts, as output elements are (§21.6): type 0xA6
inputNextPart, taken from channels' range, valid only while this extension is active."""

REGISTERED: tuple[Extension, ...] = (
    KEEPALIVE,
    AUTH,
    RESUME,
    CONTENT_TYPES,
    METADATA,
    ERROR_CODES,
    MESSAGES,
    CHANNELS,
    INPUT_PARTS,
)
BY_ID: dict[int, Extension] = {ext.id: ext for ext in REGISTERED}
BY_TYPE: dict[int, Extension] = {t: ext for ext in REGISTERED for t in ext.message_types}


def owner_of(message_type: int) -> Extension | None:
    """The registered extension that owns ``message_type``, or ``None``."""
    return BY_TYPE.get(message_type)
