"""The messages extension's payloads (PROTOCOL.md §20): one-way messages and message credit.

Sans-I/O: bytes in, values out, and back. A message names a handler on the receiving
endpoint and carries an opaque body; the receiver bounds how many it holds by granting
*message credit*, one credit per message, given back as its handlers finish::

    message (0x9C)        name: string, body: the rest of the payload (raw bytes)
    messageCredit (0x9D)  count: varint, 1 .. 2**63-1 (the whole payload)

The credit bookkeeping itself is :class:`Credit`, the same at both ends: the receiver's
copy says how many more messages the peer may send (it fails the connection on one beyond
it), the sender's how many it may still send.
"""

from __future__ import annotations

from rstreams.demand import UNBOUNDED
from rstreams.wire._errors import ExtensionError, FrameError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "MESSAGE",
    "MESSAGE_CREDIT",
    "Credit",
    "decode_credit",
    "decode_message",
    "encode_credit",
    "encode_message",
]

MESSAGE = 0x9C
"""message, either direction: name: string, body: the rest of the payload (§20.2)."""
MESSAGE_CREDIT = 0x9D
"""messageCredit, from the receiver of messages: count: varint >= 1 (§20.2)."""

_SECTION = "20.2"


def encode_message(name: str, body: bytes) -> bytes:
    """The payload of a message to handler ``name``."""
    raw = name.encode()
    return encode_varint(len(raw)) + raw + body


def decode_message(payload: bytes) -> tuple[str, bytes]:
    """``(name, body)`` from a message payload; ``ExtensionError`` (§20.2) if malformed."""
    try:
        length, pos = decode_varint(payload, 0, len(payload))
    except Incomplete:
        raise ExtensionError("message payload ends inside its name's length", section=_SECTION) from None
    except FrameError as error:  # a non-minimal or oversized varint
        raise ExtensionError(f"message name length: {error}", section=_SECTION) from None
    end = pos + length
    if end > len(payload):
        raise ExtensionError(
            f"message name of {length} bytes in a payload of {len(payload)}", section=_SECTION
        )
    try:
        name = payload[pos:end].decode()
    except UnicodeDecodeError:
        raise ExtensionError("message name is not valid UTF-8", section=_SECTION) from None
    return name, payload[end:]


def encode_credit(count: int) -> bytes:
    """The payload of a messageCredit granting ``count`` more messages."""
    return encode_varint(count)


def decode_credit(payload: bytes) -> int:
    """The count of a messageCredit payload; ``ExtensionError`` (§20.2) if malformed or 0."""
    try:
        count, pos = decode_varint(payload, 0, len(payload))
    except Incomplete:
        raise ExtensionError("messageCredit payload is not a whole varint", section=_SECTION) from None
    except FrameError as error:
        raise ExtensionError(f"messageCredit count: {error}", section=_SECTION) from None
    if pos != len(payload):
        extra = len(payload) - pos
        raise ExtensionError(f"messageCredit has {extra} byte(s) after its count", section=_SECTION)
    if not 1 <= count <= UNBOUNDED:
        raise ExtensionError(f"messageCredit count must be 1 .. 2**63-1, got {count}", section=_SECTION)
    return count


class Credit:
    """Messages one side may still send to the other; grants add up, saturating at 2**63-1."""

    __slots__ = ("available",)

    def __init__(self) -> None:
        self.available = 0

    def grant(self, count: int) -> None:
        self.available = min(self.available + count, UNBOUNDED)

    def take(self) -> bool:
        """Use one credit; ``False`` (and nothing changes) if there is none."""
        if self.available <= 0:
            return False
        self.available -= 1
        return True
