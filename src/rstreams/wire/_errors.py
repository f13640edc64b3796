"""The wire core's remote-violation errors, each tied to the PROTOCOL.md section it breaks.

::

    RemoteProtocolError (rstreams.errors)      the peer broke the protocol
    ├── FrameError                             malformed bytes: unknown type, bad varint, truncation
    ├── HandshakeError                         hello missing, duplicated or from the wrong side
    │   └── UnsupportedVersionError            a hello with a version other than 0
    ├── StreamStateError                       a signal for an unknown id or in the wrong state
    │   └── DemandExceededError                elements beyond the demand we granted
    ├── RemoteInvalidDemandError                     request(n) with n == 0 or n >= 2**63 (rule 3.9)
    ├── LimitExceededError                     a configured limit (sizes, parts in flight) exceeded
    ├── ExtensionError                         an extension message that is not allowed (§4.4, §14, §15)
    └── AbruptCloseError                       end of input without a goodbye

Every class names the PROTOCOL.md section (``section``) that the goodbye reason cites by
default; an error raised for a rule defined elsewhere names that section (``section=``
when it is made, kept in ``cited``), so that every reason cites the section that states
the rule (tests/wire/test_protocol_doc.py checks them).
Local misuse raises :class:`rstreams.errors.LocalProtocolError` (or ``ValueError``/
``TypeError`` for bad arguments) and is not listed here.
"""

from __future__ import annotations

from typing import ClassVar

from rstreams.errors import RemoteProtocolError

__all__ = [
    "TLS_RECORD_TYPES",
    "AbruptCloseError",
    "DemandExceededError",
    "ExtensionError",
    "FrameError",
    "HandshakeError",
    "LimitExceededError",
    "RemoteInvalidDemandError",
    "StreamStateError",
    "TLSRecordError",
    "UnsupportedVersionError",
    "tls_record_type",
]


class _WireError(RemoteProtocolError):
    section: ClassVar[str] = "10"

    def __init__(self, message: str, *, subscriber: int | None = None, section: str | None = None) -> None:
        super().__init__(message, subscriber=subscriber)
        self.cited = section or self.section
        """The section the reason cites: the class's, or the one that states this rule."""

    @property
    def reason(self) -> str:
        """The goodbye/onError text for the peer: what failed and which section it breaks."""
        return f"{self} (PROTOCOL.md §{self.cited})"


class FrameError(_WireError):
    """The bytes do not form a valid frame (§2, §3, §7, §9.3); always ends the connection."""

    section = "3"


class HandshakeError(_WireError):
    """The first frame was not the peer's hello, or a hello came twice (§4.1)."""

    section = "4.1"


class UnsupportedVersionError(HandshakeError):
    """The peer's hello names a protocol version this endpoint does not speak (§4.2)."""

    section = "4.2"

    def __init__(self, version: int) -> None:
        super().__init__(f"unsupported protocol version {version}; this endpoint speaks version 0")
        self.version = version


TLS_RECORD_TYPES = frozenset({0x15, 0x16})
"""The first byte of the TLS records a TLS server sends a client that does not speak TLS, or a
TLS client sends first: an alert (content type 21) or a handshake record (22); their second
byte is ``0x03``, the major version of every TLS version. No RS.io message type is either
(§3). The one definition: the wire core tells a peer's first bytes by it, and the net layer a
``ws://`` server's answer (the wire core imports nothing of the net layer)."""


def tls_record_type(head: bytes) -> int | None:
    """The record type (:data:`TLS_RECORD_TYPES`) when ``head``, a peer's first bytes, begins
    with a TLS record; ``None`` otherwise."""
    if len(head) >= 2 and head[0] in TLS_RECORD_TYPES and head[1] == 0x03:
        return head[0]
    return None


class TLSRecordError(HandshakeError):
    """The peer's first bytes are a TLS record, not an RS.io hello (§4.1): an alert (0x15) or a
    handshake record (0x16), then ``0x03``, the major version of every TLS version; no RS.io
    message type is either (§3). The peer speaks TLS at this address. ``record_type``: the
    first byte. (Not exported: the net layer tells a client's error by it.)"""

    def __init__(self, record_type: int) -> None:
        super().__init__(
            f"the peer's first bytes are not an RS.io hello (they look like a TLS record, "
            f"0x{record_type:02x} 0x03: the peer speaks TLS at this address)"
        )
        self.record_type = record_type


class StreamStateError(_WireError):
    """A signal for an unknown subscriber id, or not allowed in the subscription's state (§5)."""

    section = "5.2"


class DemandExceededError(StreamStateError):
    """The publisher sent more elements than the subscriber requested (§6.3)."""

    section = "6.3"


class RemoteInvalidDemandError(_WireError):
    """``request(n)`` with ``n == 0`` or ``n >= 2**63`` (§6.2, rule 3.9); ends that stream only."""

    section = "6.2"


class LimitExceededError(_WireError):
    """A size or count above the receiver's configured limit (§11); ``limit`` names it."""

    section = "11"

    def __init__(self, message: str, *, limit: str, subscriber: int | None = None) -> None:
        super().__init__(message, subscriber=subscriber)
        self.limit = limit


class ExtensionError(_WireError):
    """An extension message of an inactive or unknown extension, or one its extension forbids.

    ``section`` defaults to §4.4 (negotiation); an extension's own rules cite its section.
    """

    section = "4.4"


class AbruptCloseError(_WireError):
    """The input ended without a goodbye (§9.3)."""

    section = "9.3"
