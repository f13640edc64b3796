"""Session resumption (extension 3), sans I/O: positions, the replay buffer, the resume messages.

Theory of operation (specified in PROTOCOL.md §16).
A *session* is one RS.io conversation: one :class:`~rstreams.wire.Connection` core on each
side, which outlives the transports it runs over. Each direction of the session is one byte
stream, the bytes that core wrote, counted from 0 (its hello's first byte); a *position*
is an offset into that stream (RSocket's "implied position"). The sender keeps every byte
the receiver has not acknowledged in a :class:`ReplayBuffer`; the receiver counts what it
fed its core (:class:`ReceiveCounter`) and acknowledges it now and then with a
``resumeAck``, which lets the sender drop the bytes before it.

When a transport breaks, the client opens a new one and sends ``resume(token, position)``
as its first message; the server answers with its hello and ``resumed(position)`` (or
``resumeRefused(reason)``). Each side then writes, from the peer's position on, what its
buffer holds: the stream goes on exactly where the peer's core stopped reading, even
inside a frame, because the cores themselves never saw the transports change.

This module does the bookkeeping and the encoding; timers, sockets and reconnecting live
in :mod:`rstreams.net._resume`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rstreams.errors import RemoteProtocolError
from rstreams.wire._varint import MAX_U64, Incomplete, decode_varint, encode_varint
from rstreams.wire.frames import PROTOCOL_VERSION, FrameType

__all__ = [
    "MAX_TOKEN_SIZE",
    "RESUME",
    "RESUMED",
    "RESUME_ACK",
    "RESUME_REFUSED",
    "RESUME_TOKEN",
    "ReceiveCounter",
    "Refused",
    "ReplayBuffer",
    "ResumeError",
    "ResumeReplyParser",
    "ResumeRequest",
    "Resumed",
    "decode_position",
    "decode_resume",
    "decode_token",
    "encode_message",
    "encode_position",
    "encode_resume",
    "hello_end",
    "parse_resume_request",
]

RESUME_TOKEN = 0x88
"""server -> client, once, after the hellos: payload = the session's token (raw bytes)."""
RESUME = 0x89
"""client -> server, first message of a new transport: token (bytes) + position (varint)."""
RESUMED = 0x8A
"""server -> client, after its hello on that transport: position (varint)."""
RESUME_REFUSED = 0x8B
"""server -> client, after its hello on that transport: reason (UTF-8, the whole payload)."""
RESUME_ACK = 0x8C
"""either way, any time in the session: position (varint), everything before it was received."""

MAX_TOKEN_SIZE = 64
"""Longest token accepted (bytes). rstreams sends 16 random bytes; 64 leaves room for others'."""

MAX_RESUME_PAYLOAD = 256
"""Longest payload of a resume-exchange message read outside a core (before one is attached):
a token, a position and a short reason fit; a hostile length prefix is refused at once."""


class ResumeError(RemoteProtocolError):
    """The peer broke a rule of the resumption extension; ``section`` is its subsection of PROTOCOL.md §16."""

    def __init__(self, message: str, *, section: str) -> None:
        super().__init__(message)
        self.section = section

    @property
    def reason(self) -> str:
        """The text for the peer (goodbye, resumeRefused) and for the local error."""
        return f"{self} (PROTOCOL.md §16.{self.section})"


# -- payloads --------------------------------------------------------------------------------
def encode_message(message_type: int, payload: bytes) -> bytes:
    """An extension message on the wire: type byte, varint payload length, payload (§4.4)."""
    return bytes((message_type,)) + encode_varint(len(payload)) + payload


def encode_position(position: int) -> bytes:
    """Payload of ``resumed`` and ``resumeAck``."""
    _check_position(position)
    return encode_varint(position)


def decode_position(payload: bytes, what: str) -> int:
    """A position payload (``resumed``, ``resumeAck``); :class:`ResumeError` if malformed."""
    position, end = _varint(payload, 0, what)
    if end != len(payload):
        raise ResumeError(f"{what}: {len(payload) - end} byte(s) after the position", section="2")
    return position


def decode_token(payload: bytes) -> bytes:
    """Payload of ``resumeToken``: the token itself, 1 to :data:`MAX_TOKEN_SIZE` bytes."""
    if not 1 <= len(payload) <= MAX_TOKEN_SIZE:
        raise ResumeError(
            f"resumeToken of {len(payload)} bytes; a token is 1 to {MAX_TOKEN_SIZE} bytes",
            section="2",
        )
    return bytes(payload)


def encode_resume(token: bytes, position: int) -> bytes:
    """Payload of ``resume``: the token as ``bytes`` (varint length + bytes), then the position."""
    if not 1 <= len(token) <= MAX_TOKEN_SIZE:
        raise ValueError(f"a resume token is 1 to {MAX_TOKEN_SIZE} bytes, got {len(token)}")
    _check_position(position)
    return encode_varint(len(token)) + bytes(token) + encode_varint(position)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeRequest:
    """A decoded ``resume``: which session, and how much of the server's stream the client has."""

    token: bytes
    position: int


def decode_resume(payload: bytes) -> ResumeRequest:
    """Payload of ``resume``; :class:`ResumeError` if malformed."""
    size, pos = _varint(payload, 0, "resume token length")
    if not 1 <= size <= MAX_TOKEN_SIZE:
        raise ResumeError(f"resume token length {size} is not 1 to {MAX_TOKEN_SIZE} bytes", section="2")
    if pos + size > len(payload):
        raise ResumeError(f"resume token length {size} runs past the payload", section="2")
    token = bytes(payload[pos : pos + size])
    position, end = _varint(payload, pos + size, "resume position")
    if end != len(payload):
        raise ResumeError(f"resume: {len(payload) - end} byte(s) after the position", section="2")
    return ResumeRequest(token=token, position=position)


def _check_position(position: int) -> None:
    if type(position) is not int or not 0 <= position <= MAX_U64:
        raise ValueError(f"a position is an int in 0..2**64-1, got {position!r}")


def _try_varint(data: bytes, pos: int, what: str) -> tuple[int, int] | None:
    """One varint at ``pos``: (value, end), or None if the bytes run out first."""
    try:
        return decode_varint(data, pos, len(data))
    except Incomplete:
        return None
    except RemoteProtocolError as error:
        raise ResumeError(f"{what}: {error}", section="2") from error


def _varint(buf: bytes, pos: int, what: str) -> tuple[int, int]:
    """One varint of a complete payload: running out of bytes is malformed, not "wait"."""
    decoded = _try_varint(buf, pos, what)
    if decoded is None:
        raise ResumeError(f"{what}: the payload ends inside a varint", section="2")
    return decoded


def _read_message(buf: bytearray, pos: int) -> tuple[int, bytes, int] | None:
    """One extension-form message at ``pos``: (type, payload, end), or None until it is whole."""
    if pos >= len(buf):
        return None
    data = bytes(buf)
    decoded = _try_varint(data, pos + 1, f"message 0x{buf[pos]:02x}")
    if decoded is None:
        return None
    size, start = decoded
    if size > MAX_RESUME_PAYLOAD:
        raise ResumeError(
            f"message 0x{buf[pos]:02x} announces a {size}-byte payload; at most {MAX_RESUME_PAYLOAD} "
            f"in the resume exchange",
            section="7",
        )
    if start + size > len(buf):
        return None
    return buf[pos], data[start : start + size], start + size


# -- the exchange on a new transport (§16.3) ---------------------------------------------------
def parse_resume_request(buf: bytearray) -> tuple[ResumeRequest, int] | None:
    """The server's reading of a new transport that starts with ``resume`` (type byte 0x89).

    Returns the request and how many bytes it took, or ``None`` until it is whole.
    Raises :class:`ResumeError` if the bytes are not a well-formed ``resume``.
    """
    message = _read_message(buf, 0)
    if message is None:
        return None
    kind, payload, end = message
    if kind != RESUME:
        raise ResumeError(f"expected resume (0x{RESUME:02x}), got type 0x{kind:02x}", section="3")
    return decode_resume(payload), end


@dataclass(frozen=True, slots=True)
class Resumed:
    """The server accepted: it had received ``position`` bytes of the client's stream."""

    position: int


@dataclass(frozen=True, slots=True)
class Refused:
    """The server refused the resume (``resumeRefused`` or a goodbye); ``reason`` is its text."""

    reason: str


class ResumeReplyParser:
    """The client's reading of a new transport after sending ``resume``: serverHello, then the answer.

    :meth:`feed` returns ``None`` until the answer is whole, then :class:`Resumed` or
    :class:`Refused`; :attr:`rest` holds the bytes after it (the start of the server's
    replay, to be fed to the session's core). Anything else raises :class:`ResumeError`.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._hello_seen = False
        self.rest = b""

    def feed(self, data: bytes | bytearray | memoryview) -> Resumed | Refused | None:
        buf = self._buf
        buf += data
        if not self._hello_seen:
            end = hello_end(buf)
            if end is None:
                return None
            del buf[:end]
            self._hello_seen = True
        if buf and buf[0] == FrameType.GOODBYE:  # e.g. a server at its connection limit
            return self._goodbye(buf)
        message = _read_message(buf, 0)
        if message is None:
            return None
        kind, payload, end = message
        self.rest = bytes(buf[end:])
        buf.clear()
        if kind == RESUMED:
            return Resumed(decode_position(payload, "resumed"))
        if kind == RESUME_REFUSED:
            return Refused(payload.decode("utf-8", "replace"))
        raise ResumeError(f"expected resumed or resumeRefused, got type 0x{kind:02x}", section="3")

    def _goodbye(self, buf: bytearray) -> Refused | None:
        data = bytes(buf)
        decoded = _try_varint(data, 1, "goodbye")
        if decoded is None:
            return None
        size, start = decoded
        size = min(size, MAX_RESUME_PAYLOAD)  # the reason is only shown: a long one is cut
        if start + size > len(data):
            return None
        return Refused(data[start : start + size].decode("utf-8", "replace"))


def hello_end(buf: bytearray, hello_type: int = FrameType.SERVER_HELLO) -> int | None:
    """Where the hello (of ``hello_type``) at the start of ``buf`` ends (None: not whole yet).

    Raises :class:`ResumeError` when ``buf`` does not start with such a version-0 hello.
    """
    if not buf:
        return None
    if buf[0] != hello_type:
        raise ResumeError(
            f"expected a hello of type 0x{hello_type:02x}, got type 0x{buf[0]:02x}", section="3"
        )
    if len(buf) < 2:
        return None
    if buf[1] != PROTOCOL_VERSION:
        raise ResumeError(f"a hello with version {buf[1]} on a version-0 session", section="3")
    data = bytes(buf)
    decoded = _try_varint(data, 2, "serverHello")
    if decoded is None:
        return None
    count, pos = decoded
    if count > MAX_RESUME_PAYLOAD:
        raise ResumeError(f"serverHello lists {count} extensions", section="3")
    for _ in range(count):
        decoded = _try_varint(data, pos, "serverHello")
        if decoded is None:
            return None
        pos = decoded[1]
    return pos


# -- positions ---------------------------------------------------------------------------------
class ReplayBuffer:
    """The bytes we sent that the peer has not acknowledged, with their positions.

    ``start`` is the position of the first byte held (everything before it was acknowledged),
    ``end`` the position after the last byte written. :meth:`held` is what the bound
    (``buffer_bytes``) applies to; the driver stops producing while it is at the bound.
    """

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._skip = 0  # bytes of _chunks[0] already acknowledged
        self.start = 0
        self.end = 0

    @property
    def held(self) -> int:
        """Bytes held: sent, not yet acknowledged."""
        return self.end - self.start

    def append(self, chunk: bytes) -> None:
        """Record ``chunk`` as the next bytes of our stream (no copy)."""
        if chunk:
            self._chunks.append(chunk)
            self.end += len(chunk)

    def acknowledge(self, position: int) -> None:
        """The peer received everything before ``position``: drop it. Old positions are ignored.

        Raises:
            ResumeError: ``position`` is beyond what we sent (the peer counts wrong).
        """
        if position > self.end:
            raise ResumeError(
                f"acknowledged position {position} is beyond the {self.end} bytes sent", section="4"
            )
        if position <= self.start:
            return
        drop = position - self.start + self._skip
        chunks = self._chunks
        while chunks and len(chunks[0]) <= drop:
            drop -= len(chunks.popleft())
        self._skip = drop
        self.start = position

    def replay_from(self, position: int) -> list[bytes]:
        """What to write to a new transport when the peer has received ``position`` bytes.

        Also acknowledges ``position``. Raises :class:`ResumeError` when it is not in
        ``start..end``: the bytes the peer needs are gone, or it claims bytes never sent.
        """
        if not self.start <= position <= self.end:
            raise ResumeError(
                f"position {position} is outside the replay buffer ({self.start}..{self.end}): "
                f"the two sides disagree on what was received",
                section="3",
            )
        self.acknowledge(position)
        chunks = list(self._chunks)
        if chunks and self._skip:
            chunks[0] = chunks[0][self._skip :]
        return chunks


class ReceiveCounter:
    """How much of the peer's stream we fed our core, and when to acknowledge it (§16.4).

    An acknowledgement is due once ``ack_bytes`` arrived since the last one, or (the
    driver's timer) a short while after anything arrived. Bytes that were only the peer's
    own acknowledgements do not make one due, so two idle sides do not ping-pong.
    """

    def __init__(self, ack_bytes: int) -> None:
        if type(ack_bytes) is not int or ack_bytes < 1:
            raise ValueError(f"ack_bytes must be an int >= 1, got {ack_bytes!r}")
        self.ack_bytes = ack_bytes
        self.position = 0
        """Bytes of the peer's stream fed to our core."""
        self.acked = 0
        """The position our last resumeAck carried."""
        self._ack_only = 0  # bytes since that ack that were the peer's resumeAcks

    def received(self, n: int) -> None:
        self.position += n

    def saw_ack(self, payload_size: int) -> None:
        """The peer's resumeAck with a payload of ``payload_size`` bytes arrived."""
        self._ack_only += 1 + len(encode_varint(payload_size)) + payload_size

    @property
    def unacknowledged(self) -> int:
        """Bytes received since our last ack that were not just acks."""
        return self.position - self.acked - self._ack_only

    @property
    def ack_due_now(self) -> bool:
        return self.unacknowledged >= self.ack_bytes

    def take_ack(self) -> bytes:
        """Payload of the resumeAck to send now; records it as sent."""
        self.acked = self.position
        self._ack_only = 0
        return encode_position(self.position)
