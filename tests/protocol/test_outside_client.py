"""A client written from PROTOCOL.md alone interoperates with a live rstreams server.

The first half of this module is that client: sockets, struct and json, nothing of rstreams
(a test checks that it refers to nothing the module imports for its tests). Its constants,
encodings and rules are the document's, each with its section: one subscription at a time,
the messages a client receives, and the extensions keepalive (§14), auth (§15), resume
(§16), content-types (§17), metadata (§18), error-codes (§19), channels and input-parts
(§21), over TCP or a WebSocket (§1). The second half starts ``rstreams serve`` in child
processes (testkit.hostile): over TCP with a ``--token`` every client authenticates with, and
serving tests/protocol/served.py, one publisher per content type of §17.3 with the element
the table shows, so the bytes the document prints are checked against what the server sends;
over WebSocket with its built-ins. Each test opens its own connection; every read has the
client's timeout (10 s).
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import socket
import struct
import sys
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from testkit.hostile import ServerProcess, server_process

# The two halves' headings, spelled so that these lines are not the headings themselves.
CLIENT_STARTS = "# -- the client, from PROTOCOL.md alone " + "-" * 10
TESTS_START = "# -- the tests: the client against a live server " + "-" * 10


# -- the client, from PROTOCOL.md alone ----------
# §3: core message types
CLIENT_HELLO, SERVER_HELLO, GOODBYE = 0x01, 0x02, 0x03
SUBSCRIBE, REQUEST, CANCEL = 0x04, 0x05, 0x06
ON_SUBSCRIBE, ON_NEXT, ON_NEXT_PACKED = 0x07, 0x08, 0x09
ON_NEXT_PART, ON_NEXT_LAST_PART, ON_COMPLETE, ON_ERROR = 0x0A, 0x0B, 0x0C, 0x0D
# §4.4: extension ids; §14 to §21: their message types
KEEPALIVE, AUTH, RESUME_ID, CONTENT_TYPES, METADATA, ERROR_CODES = 1, 2, 3, 4, 5, 6
CHANNELS, INPUT_PARTS = 8, 9
PING, PONG = 0x80, 0x81
AUTHENTICATE, AUTHENTICATED = 0x84, 0x85
RESUME_TOKEN, RESUME, RESUMED, RESUME_REFUSED, RESUME_ACK = 0x88, 0x89, 0x8A, 0x8B, 0x8C
CONTENT_TYPE = 0x90
SUBSCRIBE_METADATA = 0x94
ERROR_CODE, GOODBYE_CODE = 0x98, 0x99
CHANNEL, INPUT_REQUEST, INPUT_CANCEL, INPUT_NEXT, INPUT_COMPLETE = 0xA0, 0xA1, 0xA2, 0xA3, 0xA4
INPUT_NEXT_PART = 0xA6


class OutsideProtocolError(Exception):
    """The server sent something the document says it must not."""


def varint(value: int) -> bytes:
    """§2.1: unsigned base-128, least significant group first."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(text: str) -> bytes:
    """§2.2: varint byte length, then UTF-8."""
    data = text.encode()
    return varint(len(data)) + data


def blob(data: bytes) -> bytes:
    """§2.2: varint length, then the bytes."""
    return varint(len(data)) + data


def extension(kind: int, payload: bytes) -> bytes:
    """§4.4: type, varint payload length, payload."""
    return bytes([kind]) + varint(len(payload)) + payload


def client_hello(extensions: list[int]) -> bytes:
    """§3, §4.1: type, version 0 (u8), varint count, the ids."""
    return bytes([CLIENT_HELLO, 0]) + varint(len(extensions)) + b"".join(map(varint, extensions))


def subscribe(name: str, sid: int, demand: int) -> bytes:
    return bytes([SUBSCRIBE]) + string(name) + varint(sid) + varint(demand)


def request(sid: int, demand: int) -> bytes:
    return bytes([REQUEST]) + varint(sid) + varint(demand)


def goodbye(reason: str) -> bytes:
    return bytes([GOODBYE]) + string(reason)


def read_varint(data: bytes, at: int = 0) -> tuple[int, int]:
    """§2.1 with its strictness: at most 10 bytes, below 2**64, minimal. (value, next offset)."""
    value = 0
    for i in range(10):
        if at + i >= len(data):
            raise OutsideProtocolError("truncated varint (§2.1)")
        byte = data[at + i]
        if i == 9 and byte > 0x01:
            raise OutsideProtocolError("varint of 2**64 or more (§2.1)")
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if i and not byte:
                raise OutsideProtocolError("non-minimal varint (§2.1)")
            return value, at + i + 1
    raise OutsideProtocolError("varint over 10 bytes (§2.1)")


def decode(media_type: str | None, element: bytes) -> Any:
    """§17.3: an element by its announced type (none announced: opaque bytes)."""
    if media_type == "text/plain; charset=utf-8":
        return element.decode("utf-8")
    if media_type == "application/json":
        return json.loads(element)
    if media_type == "application/vnd.rsio.int64le":
        return struct.unpack("<q", element)[0]
    if media_type == "application/vnd.rsio.float64le":
        return struct.unpack("<d", element)[0]
    return element  # octet-stream, or a type this client leaves to the caller (msgpack, arrow)


class Transport:
    """One TCP connection; reads count the bytes of the server's stream (§16.3)."""

    def __init__(self, address: tuple[str, int], timeout: float) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.buffer = b""
        self.position = 0
        self.counting = True

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> bytes:
        """The next bytes of the server's stream (b"": its end)."""
        return self.sock.recv(1 << 16)

    def take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.receive()
            if not chunk:
                raise EOFError("input ended inside a message (§9.3)" if self.buffer else "input ended")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        if self.counting:
            self.position += n
        return data

    def varint(self) -> int:
        data = b""
        while not data or data[-1] & 0x80:
            data += self.take(1)
            if len(data) > 10:
                raise OutsideProtocolError("varint over 10 bytes (§2.1)")
        return read_varint(data)[0]

    def frame(self, sizes: dict[int, int]) -> tuple[Any, ...]:
        """One message by §3's table; ``sizes``: each subscription's elementSize (§7)."""
        kind = self.take(1)[0]
        if kind in (CLIENT_HELLO, SERVER_HELLO):
            version = self.take(1)[0]
            return (kind, version, [self.varint() for _ in range(self.varint())])
        if kind == GOODBYE:
            return (kind, self.take(self.varint()).decode("utf-8"))
        if kind == ON_SUBSCRIBE:
            return (kind, self.varint(), self.varint())
        if kind == ON_NEXT:
            sid = self.varint()
            size = sizes.get(sid, 0)
            return (kind, sid, self.take(size) if size else self.take(self.varint()))
        if kind == ON_NEXT_PACKED:
            sid, count = self.varint(), self.varint()
            size = sizes.get(sid, 0)
            if not size or not count:
                raise OutsideProtocolError("onNextPacked without elementSize, or count 0 (§7)")
            data = self.take(count * size)
            return (kind, sid, [data[i : i + size] for i in range(0, len(data), size)])
        if kind in (ON_NEXT_PART, ON_NEXT_LAST_PART):
            return (kind, self.varint(), self.varint(), self.take(self.varint()))
        if kind == ON_COMPLETE:
            return (kind, self.varint())
        if kind == ON_ERROR:
            return (kind, self.varint(), self.take(self.varint()).decode("utf-8"))
        if kind >= 0x80:
            return (kind, self.take(self.varint()))
        raise OutsideProtocolError(f"type 0x{kind:02x} is reserved (§3)")

    def close_after_goodbye(self) -> bytes:
        """§9.1's lingering close: shut our sending side, read to the server's end of input."""
        self.sock.shutdown(socket.SHUT_WR)
        rest = self.buffer
        while chunk := self.sock.recv(1 << 16):
            rest += chunk
        self.sock.close()
        return rest


def websocket_handshake(
    address: tuple[str, int], path: str, subprotocol: str | None, timeout: float
) -> tuple[socket.socket, str, bytes]:
    """RFC 6455's opening handshake at ``path`` (§1): the socket, the status line, the bytes after."""
    sock = socket.create_connection(address, timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {address[0]}:{address[1]}", "Upgrade: websocket"]
    lines += ["Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    lines += [f"Sec-WebSocket-Protocol: {subprotocol}"] if subprotocol else []
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head and (chunk := sock.recv(4096)):
        head += chunk
    response, _, rest = head.partition(b"\r\n\r\n")
    status, *headers = response.decode("latin-1").split("\r\n")
    if " 101 " in status and f"sec-websocket-protocol: {subprotocol}" not in (h.lower() for h in headers):
        raise OutsideProtocolError(f"the server did not select {subprotocol} (§1)")
    return sock, status, rest


class WebSocketTransport(Transport):
    """§1: RS.io bytes in binary WebSocket messages, frame boundaries free."""

    def __init__(self, address: tuple[str, int], timeout: float, path: str = "/") -> None:
        self.sock, status, self.raw = websocket_handshake(address, path, "rsio.v0", timeout)
        if " 101 " not in status:
            raise OutsideProtocolError(f"WebSocket handshake refused: {status}")
        self.buffer = b""
        self.position = 0
        self.counting = True
        self.close_status: int | None = None

    def write(self, data: bytes, opcode: int = 0x2) -> None:
        mask = os.urandom(4)
        size = len(data)
        if size < 126:  # RFC 6455 §5.2: the shortest length form
            length = bytes([0x80 | size])
        elif size < 1 << 16:
            length = bytes([0x80 | 126]) + struct.pack(">H", size)
        else:
            length = bytes([0x80 | 127]) + struct.pack(">Q", size)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(data))
        self.sock.sendall(bytes([0x80 | opcode]) + length + mask + masked)

    def _raw(self, n: int) -> bytes:
        while len(self.raw) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("the WebSocket ended without a close frame")
            self.raw += chunk
        data, self.raw = self.raw[:n], self.raw[n:]
        return data

    def receive(self) -> bytes:
        while self.close_status is None:
            first, second = self._raw(2)
            size = second & 0x7F
            if size >= 126:
                size = int.from_bytes(self._raw(2 if size == 126 else 8), "big")
            payload = self._raw(size)
            opcode = first & 0x0F
            if opcode in (0x0, 0x2):
                return payload
            if opcode == 0x8:
                self.close_status = int.from_bytes(payload[:2], "big") if payload else 1005
            elif opcode == 0x1:
                raise OutsideProtocolError("a text message: not RS.io bytes (§1)")
        return b""

    def close_after_goodbye(self) -> bytes:
        """§9.1: a WebSocket cannot half-close; read to the server's close, answer it, close."""
        rest = self.buffer
        while chunk := self.receive():
            rest += chunk
        self.write(struct.pack(">H", 1000), opcode=0x8)
        self.sock.close()
        return rest


@dataclass
class Signal:
    """A core signal as the client's application sees it."""

    kind: str  # onSubscribe, onNext, onComplete, onError, goodbye
    sid: int | None = None
    elements: list[Any] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)  # the elements' bytes, as received
    text: str = ""
    code: int | None = None
    media_type: str | None = None
    element_size: int = 0


class Client:
    """A session with one server: the hello, subscriptions, the extensions' messages."""

    def __init__(
        self,
        address: tuple[str, int],
        offered: list[int],
        timeout: float = 10.0,
        websocket: bool = False,
        token: str | None = None,
    ) -> None:
        """``token``: authenticate with it (§15; ``offered`` then lists auth, 2)."""
        self.address = address
        self.credentials = token
        self.authenticated = False
        self.timeout = timeout
        self.transport = WebSocketTransport(address, timeout) if websocket else Transport(address, timeout)
        self.offered = offered
        self.active: set[int] = set()
        self.server_extensions: list[int] = []
        self.token: bytes | None = None
        self.written = bytearray()  # our stream (§16.3), kept whole: this client never drops any
        self.sizes: dict[int, int] = {}
        self.types: dict[int, str | None] = {}
        self.parts: dict[tuple[int, int], bytes] = {}
        self.parts_received = 0
        self.content_type: tuple[int, str] | None = None
        self.code: tuple[int | None, int] | None = None
        self.pongs: list[bytes] = []
        self.acked = 0  # the last position of the server's stream we acknowledged (§16.4)
        self.input_demand: dict[int, int] = {}  # per channel: input elements we may send (§21.4)

    def send(self, data: bytes) -> None:
        self.written += data
        self.transport.write(data)

    def hello(self, *optimistic: bytes) -> None:
        """§4.1: our hello and anything optimistic (§4.3), then the server's hello."""
        self.send(client_hello(self.offered) + b"".join(optimistic))
        kind, version, extensions = self.transport.frame(self.sizes)
        if kind != SERVER_HELLO or version != 0:
            raise OutsideProtocolError(f"first message 0x{kind:02x} version {version} (§4.1, §4.2)")
        self.server_extensions = extensions
        self.active = set(self.offered) & set(extensions)  # §4.4
        if self.credentials is None:
            return
        if AUTH not in self.active:  # §15.2: no credentials to a server that does not offer auth
            self.send(goodbye("the server does not offer extension auth (id 2) (PROTOCOL.md §15.2)"))
            raise OutsideProtocolError("the server does not offer extension auth (§15.2)")
        self.send(extension(AUTHENTICATE, bytes([1]) + string(self.credentials)))  # §15.1: kind 1, token

    def subscribe(self, name: str, sid: int, demand: int, metadata: dict[str, bytes] | None = None) -> None:
        """§3 subscribe, after §18.1's subscribeMetadata when there are entries."""
        if metadata:
            assert METADATA in self.active, "metadata is never sent optimistically (§18.1)"
            entries = b"".join(string(key) + blob(value) for key, value in metadata.items())
            self.send(extension(SUBSCRIBE_METADATA, varint(sid) + varint(len(metadata)) + entries))
        self.send(subscribe(name, sid, demand))

    def open_channel(self, name: str, sid: int, demand: int) -> None:
        """§21.3: the channel mark, then the subscribe it qualifies (never optimistic, §21.1)."""
        assert CHANNELS in self.active
        self.send(extension(CHANNEL, varint(sid)) + subscribe(name, sid, demand))

    def wait_input_demand(self, sid: int) -> list[Signal]:
        """Read until the channel's input has demand (§21.4); the core signals read meanwhile."""
        signals = []
        while not self.input_demand.get(sid):
            if (signal := self._step()) is not None:
                signals.append(signal)
        return signals

    def send_input(self, sid: int, element: bytes, part_size: int) -> None:
        """One input element: in one inputNext, or, with input-parts, inputNextPart ... inputNext
        (§21.6); it uses one input demand."""
        assert self.input_demand.get(sid), "no input demand (§21.4)"
        self.input_demand[sid] -= 1
        if INPUT_PARTS in self.active:
            while len(element) > part_size:
                self.send(extension(INPUT_NEXT_PART, varint(sid) + element[:part_size]))
                element = element[part_size:]
        self.send(extension(INPUT_NEXT, varint(sid) + element))

    def ping(self, payload: bytes) -> None:
        self.send(extension(PING, payload))

    def next(self) -> Signal:
        """The next core signal, handling the extension messages before it; with resume
        active, what arrived is acknowledged (§16.4), except after the peer's goodbye (§9.1)."""
        signal = self._signal()
        if signal.kind != "goodbye" and RESUME_ID in self.active and self.transport.position > self.acked:
            self.acked = self.transport.position
            self.send(extension(RESUME_ACK, varint(self.acked)))
        return signal

    def _signal(self) -> Signal:
        while (signal := self._step()) is None:
            pass
        return signal

    def _step(self) -> Signal | None:
        """One message: a core signal, or None for one the client handled itself."""
        frame = self.transport.frame(self.sizes)
        kind = frame[0]
        if kind >= 0x80:
            self._extension(kind, frame[1])
            return None
        if kind == ON_SUBSCRIBE:
            sid, size = frame[1], frame[2]
            announced = None
            if self.content_type is not None:  # §17.1: a qualifier of this onSubscribe
                if self.content_type[0] != sid:
                    raise OutsideProtocolError("contentType for another id (§17.1)")
                announced, self.content_type = self.content_type[1], None
            self.sizes[sid], self.types[sid] = size, announced
            return Signal("onSubscribe", sid, media_type=announced, element_size=size)
        if kind == ON_NEXT:
            return self._elements(frame[1], [frame[2]])
        if kind == ON_NEXT_PACKED:
            return self._elements(frame[1], frame[2])
        if kind == ON_NEXT_PART:  # §8: keyed by (subscriber, element)
            key = (frame[1], frame[2])
            self.parts_received += 1
            self.parts[key] = self.parts.get(key, b"") + frame[3]
            return None
        if kind == ON_NEXT_LAST_PART:
            data = self.parts.pop((frame[1], frame[2]), b"") + frame[3]
            return self._elements(frame[1], [data])
        if kind == ON_COMPLETE:
            return Signal("onComplete", frame[1])
        if kind == ON_ERROR:
            return Signal("onError", frame[1], text=frame[2], code=self._code_for(frame[1]))
        if kind == GOODBYE:
            return Signal("goodbye", text=frame[1], code=self._code_for(None))
        raise OutsideProtocolError(f"a client receives no 0x{kind:02x} (§3)")

    def _elements(self, sid: int, raw: list[bytes]) -> Signal:
        media_type = self.types.get(sid)
        return Signal("onNext", sid, [decode(media_type, element) for element in raw], raw)

    def _code_for(self, sid: int | None) -> int | None:
        """§19.1: the code of the qualifier right before, if it was for this message."""
        if self.code is None:
            return None
        if self.code[0] != sid:
            raise OutsideProtocolError("errorCode/goodbyeCode for another message (§19.1)")
        code, self.code = self.code[1], None
        return code

    def _extension(self, kind: int, payload: bytes) -> None:
        owner = {PING: KEEPALIVE, PONG: KEEPALIVE, RESUME_TOKEN: RESUME_ID, RESUME_ACK: RESUME_ID}
        owner |= {CONTENT_TYPE: CONTENT_TYPES, ERROR_CODE: ERROR_CODES, GOODBYE_CODE: ERROR_CODES}
        owner |= {INPUT_REQUEST: CHANNELS, INPUT_CANCEL: CHANNELS, AUTHENTICATED: AUTH}
        if owner.get(kind) not in self.active:
            raise OutsideProtocolError(f"0x{kind:02x} of an extension that is not active (§4.4)")
        if kind in (PING, PONG) and len(payload) != 8:
            raise OutsideProtocolError("ping/pong payload not 8 bytes (§14.1)")
        if kind == PING:
            self.send(extension(PONG, payload))
        elif kind == PONG:
            self.pongs.append(payload)
        elif kind == AUTHENTICATED:
            if payload or self.credentials is None or self.authenticated:
                raise OutsideProtocolError("a bad or unasked-for authenticated (§15.1, §15.5)")
            self.authenticated = True
        elif kind == RESUME_TOKEN:
            if not 1 <= len(payload) <= 64 or self.token is not None:
                raise OutsideProtocolError("a bad or second resumeToken (§16.2)")
            self.token = payload
        elif kind == RESUME_ACK:
            position, end = read_varint(payload)
            if end != len(payload) or position > len(self.written):
                raise OutsideProtocolError("a bad resumeAck (§16.2, §16.4)")
        elif kind == INPUT_REQUEST:  # §21.4: demand for the channel's input
            sid, at = read_varint(payload)
            demand, end = read_varint(payload, at)
            if end != len(payload) or not 1 <= demand < 1 << 63:
                raise OutsideProtocolError("a bad inputRequest (§21.2)")
            self.input_demand[sid] = min(self.input_demand.get(sid, 0) + demand, (1 << 63) - 1)
        elif kind == INPUT_CANCEL:
            sid, end = read_varint(payload)
            if end != len(payload):
                raise OutsideProtocolError("a bad inputCancel (§21.2)")
            self.input_demand[sid] = 0
        elif kind == CONTENT_TYPE:
            sid, at = read_varint(payload)
            media_type = payload[at:].decode("ascii")
            if self.content_type is not None or "/" not in media_type:
                raise OutsideProtocolError("a bad or second contentType (§17.1)")
            self.content_type = (sid, media_type)
        else:
            target: int | None = None
            at = 0
            if kind == ERROR_CODE:
                target, at = read_varint(payload)
            code, end = read_varint(payload, at)
            if end != len(payload) or self.code is not None:
                raise OutsideProtocolError("a bad or second errorCode/goodbyeCode (§19.1)")
            self.code = (target, code)

    def stream(self, sid: int) -> tuple[Signal, Signal]:
        """Subscription ``sid``'s onSubscribe, and its terminal signal carrying every element
        received in between (decoded and raw)."""
        first = self.next()
        if first.kind != "onSubscribe":  # §5.2: a refusal is onError straight after subscribe
            return first, first
        elements: list[Any] = []
        raw: list[bytes] = []
        while (signal := self.next()).kind == "onNext":
            assert signal.sid == sid, signal
            elements += signal.elements
            raw += signal.raw
        assert signal.sid == sid, signal
        signal.elements, signal.raw = elements, raw
        return first, signal

    def close(self, reason: str = "bye") -> Signal:
        """§9.1 with §19.1: goodbyeCode 0 (normal), goodbye, the answer, the lingering close."""
        if ERROR_CODES in self.active:
            self.send(extension(GOODBYE_CODE, varint(0)))
        self.send(goodbye(reason))
        while (answer := self.next()).kind != "goodbye":
            pass  # after our goodbye, anything but the answer is discarded (§9.1)
        rest = self.transport.close_after_goodbye()
        if rest:
            raise OutsideProtocolError(f"{len(rest)} bytes after the answering goodbye (§9.1)")
        return answer

    def drop_transport(self) -> None:
        """Break the transport without a goodbye (§16.3: broken)."""
        self.transport.sock.close()

    def resume(self) -> int:
        """§16.3: a new transport, resume(token, position), the server's hello, resumed(p);
        then our stream from p. Returns p."""
        assert self.token is not None, "no token yet: this session cannot be resumed (§16.1)"
        old = self.transport
        new = Transport(self.address, self.timeout)
        new.counting = False  # the hellos and the exchange of a later transport: outside the stream
        new.sock.sendall(extension(RESUME, blob(self.token) + varint(old.position)))
        kind = new.frame(self.sizes)[0]
        if kind != SERVER_HELLO:
            raise OutsideProtocolError(f"0x{kind:02x} instead of the server's hello (§16.3)")
        kind, payload = new.frame(self.sizes)
        if kind == RESUME_REFUSED:
            raise OutsideProtocolError(f"resume refused: {payload.decode()}")
        if kind != RESUMED:
            raise OutsideProtocolError(f"0x{kind:02x} instead of resumed (§16.3)")
        position, end = read_varint(payload)
        if end != len(payload) or position > len(self.written):
            raise OutsideProtocolError("a bad resumed position (§16.2, §16.6)")
        new.counting, new.position = True, old.position
        self.transport = new
        new.sock.sendall(bytes(self.written[position:]))  # the replay (§16.3)
        return position


# -- the tests: the client against a live server ----------
pytestmark = pytest.mark.timeout(60)

HERE = Path(__file__).parent
UTF8_TEXT = "text/plain; charset=utf-8"
OFFERED = [KEEPALIVE, AUTH, RESUME_ID, CONTENT_TYPES, METADATA, ERROR_CODES]
TOKEN = "a-token-from-the-outside"
"""The TCP server's ``--token``: every client authenticates (§15)."""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_process(
        "tcp://127.0.0.1:0", "--publishers", f"{HERE / 'served.py'}:PUBLISHERS", "--resume", "--token", TOKEN
    ) as child:
        yield child


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    address = server.address
    assert isinstance(address, tuple)
    session = Client(address, OFFERED, token=TOKEN)
    yield session
    session.transport.sock.close()


def test_the_client_half_uses_nothing_but_the_standard_library() -> None:
    """The client half refers to no name that the module imports for its tests."""
    source = Path(__file__).read_text()
    client_half = source[source.index(CLIENT_STARTS) : source.index(TESTS_START)]
    names = {node.id for node in ast.walk(ast.parse(client_half)) if isinstance(node, ast.Name)}
    assert not names & {"pytest", "testkit", "server_process", "ServerProcess", "rstreams"}, names
    header = source[: source.index(CLIENT_STARTS)]
    modules = {
        alias.name.split(".")[0] if isinstance(node, ast.Import) else (node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(header))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert modules - {"pytest", "testkit"} <= sys.stdlib_module_names, modules


def test_the_hellos_activate_what_both_list_and_an_orderly_close_ends_the_session(client: Client) -> None:
    client.hello()
    assert set(OFFERED) <= set(client.server_extensions), client.server_extensions
    assert client.active == set(OFFERED)
    answer = client.close()
    assert answer.kind == "goodbye" and answer.text, answer


@pytest.mark.parametrize(
    ("offered", "token", "reason"),
    [
        ([ERROR_CODES], None, "authentication required: "),
        ([AUTH, ERROR_CODES], "not-the-token", "authentication failed (PROTOCOL.md §15.3)"),
    ],
    ids=["without auth", "a wrong token"],
)
def test_a_server_that_requires_authentication_says_goodbye_with_code_3(
    server: ServerProcess, offered: list[int], token: str | None, reason: str
) -> None:
    address = server.address
    assert isinstance(address, tuple)
    client = Client(address, offered, token=token)
    client.hello(subscribe("counter?to=5", 1, 2))  # held, then ended unanswered (§15.3)
    farewell = client.next()
    assert (farewell.kind, farewell.code) == ("goodbye", 3), farewell  # §19.2: unauthenticated
    assert farewell.text.startswith(reason), farewell
    assert TOKEN not in farewell.text and (token is None or token not in farewell.text)  # §15.5
    client.send(goodbye(""))
    assert client.transport.close_after_goodbye() == b""


def test_an_optimistic_subscribe_streams_and_completes(client: Client) -> None:
    client.hello(subscribe("counter?to=5", 1, 2))  # sent with the hello (§4.3), held until auth (§15.3)
    first = client.next()
    assert client.authenticated  # authenticated comes before any answer to a held subscribe
    assert (first.kind, first.media_type, first.element_size) == ("onSubscribe", UTF8_TEXT, 0)
    got = client.next().elements + client.next().elements
    client.send(request(1, 10))  # spare demand: the end is known with the last element (§6.1)
    while (signal := client.next()).kind == "onNext":
        got += signal.elements
    assert got == ["0", "1", "2", "3", "4"]
    assert (signal.kind, signal.sid) == ("onComplete", 1)
    client.close()


PUBLISHER_OF = {
    # a media type of §17.3's table -> the publisher of served.py with the table's example element
    "application/octet-stream": "typed/octets",
    "text/plain; charset=utf-8": "typed/utf8",
    "application/json": "typed/json",
    "application/msgpack": "typed/msgpack",
    "application/vnd.rsio.int64le": "typed/int64",
    "application/vnd.rsio.float64le": "typed/float64",
}
DECODED: dict[str, list[Any]] = {
    "text/plain; charset=utf-8": ["hé"],
    "application/json": [{"a": [1, "é"]}],
    "application/vnd.rsio.int64le": [1, -2],
    "application/vnd.rsio.float64le": [1.5],
}
"""What this client's decoder makes of the table's examples (the other types stay bytes)."""


def _table_examples() -> list[tuple[str, str, list[bytes]]]:
    """§17.3's rows with example bytes: (media type, elementSize cell, the examples)."""
    section = (HERE.parents[1] / "PROTOCOL.md").read_text().split("### 17.3")[1].split("\n### ")[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        hexes = re.findall(r"`((?:[0-9a-f]{2} )*[0-9a-f]{2})`", cells[3])
        if hexes:
            rows.append((cells[0].strip("`"), cells[2], [bytes.fromhex(h) for h in hexes]))
    return rows


EXAMPLES = _table_examples()


def test_the_table_has_an_example_for_each_type_served() -> None:
    assert {media_type for media_type, _, _ in EXAMPLES} == set(PUBLISHER_OF)


@pytest.mark.parametrize(("media_type", "size", "wire"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_each_content_type_is_announced_and_its_elements_are_the_table_s_bytes(
    client: Client, media_type: str, size: str, wire: list[bytes]
) -> None:
    if media_type == "application/msgpack":
        pytest.importorskip("msgpack")  # the server's MSGPACK codec needs it
    client.hello()
    client.subscribe(PUBLISHER_OF[media_type], 3, 10)
    first, end = client.stream(3)
    assert first.media_type == media_type, first
    assert first.element_size == (int(size) if size.isdigit() else len(wire[0])), (first, size)
    assert (end.kind, end.raw) == ("onComplete", wire), end
    assert end.elements == DECODED.get(media_type, wire)
    client.close()


def test_the_vectors_content_types_are_the_table_s_and_decode_to_their_values() -> None:
    """docs/protocol-vectors.json's ``content_types`` (what other languages' suites read) are
    examples of §17.3's table, and this client's decoder makes of each its ``value_json``."""
    vectors = json.loads((HERE.parents[1] / "docs" / "protocol-vectors.json").read_text())["content_types"]
    table = {media_type: wire for media_type, _, wire in EXAMPLES}
    for vector in vectors:
        data = bytes.fromhex(vector["hex"])
        assert data in table[vector["media_type"]], vector
        value = data if vector["value_json"] is None else json.loads(vector["value_json"])
        assert decode(vector["media_type"], data) == value, vector
    assert {vector["media_type"] for vector in vectors} == set(table) - {"application/msgpack"}


def test_raw_bytes_come_with_no_type(client: Client) -> None:
    client.hello()
    client.subscribe("raw", 1, 10)
    first, end = client.stream(1)
    assert (first.media_type, first.element_size) == (None, 0), first  # §17.1: opaque bytes
    assert (end.kind, end.elements) == ("onComplete", [b"\x00\xff"]), end
    client.close()


def test_an_arrow_element_is_one_ipc_stream(client: Client) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    client.hello()
    client.subscribe("typed/arrow", 1, 10)
    first, end = client.stream(1)
    assert first.media_type == "application/vnd.apache.arrow.stream" and end.kind == "onComplete"
    [element] = end.elements
    assert element.endswith(bytes.fromhex("ff ff ff ff 00 00 00 00"))  # §17.3: end-of-stream marker
    assert pyarrow.ipc.open_stream(element).read_all().to_pydict() == {"n": [7]}
    client.close()


def test_metadata_qualifies_a_subscribe_and_a_large_element_arrives_in_parts(client: Client) -> None:
    client.hello()
    traceparent = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    client.subscribe("big", 2, 2, metadata={"traceparent": traceparent, "x-tenant": b"acme"})
    _, end = client.stream(2)
    assert end.elements == [bytes(range(256)) * 400] and end.kind == "onComplete"
    assert client.parts_received >= 1 and not client.parts  # onNextPart ... onNextLastPart (§8)
    client.close()


def test_refusals_carry_their_codes_and_a_ping_is_answered(client: Client) -> None:
    client.hello()
    client.ping(b"12345678")
    client.subscribe("nope", 1, 1)
    refused = client.next()
    assert (refused.kind, refused.code) == ("onError", 2), refused  # §19.2: unknown publisher
    assert "nope" in refused.text
    client.subscribe("counter?to=3", 1, 0)
    client.send(request(1, 0))  # rule 3.9 (§6.2)
    _, invalid = client.stream(1)
    assert (invalid.kind, invalid.code) == ("onError", 5) and "§6.2" in invalid.text, invalid
    assert client.pongs == [b"12345678"]
    client.close()


def test_a_bad_frame_ends_the_connection_with_a_coded_goodbye(client: Client) -> None:
    client.hello()
    client.send(b"\x0e")  # a reserved core type (§3)
    farewell = client.next()
    assert (farewell.kind, farewell.code) == ("goodbye", 6), farewell  # §19.2: protocol violation
    assert "§3" in farewell.text
    client.send(goodbye(""))  # the answer (§9.1); a sender with no code sends none (§19.1)
    assert client.transport.close_after_goodbye() == b""


def test_a_broken_transport_is_resumed_where_each_side_stopped(client: Client) -> None:
    client.hello()
    client.subscribe("counter?to=8", 1, 3)
    first, got = client.next(), list[Any]()
    while len(got) < 3:
        got += client.next().elements
    assert first.kind == "onSubscribe" and client.token is not None
    client.send(request(1, 10))  # the rest may be in flight when the transport breaks
    client.drop_transport()
    assert 0 < client.resume() <= len(client.written)  # what the server had; the rest is replayed
    while (signal := client.next()).kind == "onNext":
        got += signal.elements
    assert got == [str(n) for n in range(8)] and signal.kind == "onComplete"
    client.close()


@pytest.fixture(scope="module")
def ws_address() -> Iterator[tuple[str, int]]:
    """``rstreams serve ws://...`` with its built-ins: ``counter`` and the channel ``upper``."""
    pytest.importorskip("websockets")  # the server's WebSocket transport
    with server_process("ws://127.0.0.1:0") as child:
        url = urllib.parse.urlsplit(child.url)
        assert url.hostname is not None and url.port is not None and url.path == "/", child.url
        yield url.hostname, url.port


def test_over_websocket_binary_messages_carry_the_same_bytes(ws_address: tuple[str, int]) -> None:
    client = Client(ws_address, [CONTENT_TYPES, ERROR_CODES], websocket=True)
    client.hello(subscribe("counter?to=3", 1, 5))
    first, end = client.stream(1)
    assert (first.media_type, end.kind, end.elements) == (UTF8_TEXT, "onComplete", ["0", "1", "2"])
    assert client.close().kind == "goodbye"
    transport = client.transport
    assert isinstance(transport, WebSocketTransport) and transport.close_status == 1000


def test_a_websocket_handshake_needs_the_path_and_the_subprotocol(ws_address: tuple[str, int]) -> None:
    for path, subprotocol, refused in [("/other", "rsio.v0", " 404 "), ("/", None, " 400 ")]:
        sock, status, _ = websocket_handshake(ws_address, path, subprotocol, 10.0)
        sock.close()
        assert refused in status, (path, subprotocol, status)


def test_a_text_message_ends_the_websocket_with_1003_and_no_goodbye(ws_address: tuple[str, int]) -> None:
    transport = WebSocketTransport(ws_address, 10.0)
    transport.write(client_hello([ERROR_CODES]))
    transport.write(b"hello", opcode=0x1)
    assert transport.frame({})[0] == SERVER_HELLO
    with pytest.raises(EOFError):
        transport.frame({})  # no goodbye: the close frame ends the stream
    assert transport.close_status == 1003
    transport.sock.close()


def test_a_channel_takes_split_input_and_answers_a_split_element(ws_address: tuple[str, int]) -> None:
    """The built-in channel ``upper`` (§21): the mark, input demand, an input element of 104 KB
    in inputNextPart ... inputNext (§21.6), inputComplete; the answer arrives split (§8)."""
    client = Client(ws_address, [ERROR_CODES, CHANNELS, INPUT_PARTS], websocket=True)
    client.hello()
    client.open_channel("upper", 1, 2)
    seen = client.wait_input_demand(1)
    element = bytes(range(97, 123)) * 4000
    client.send_input(1, element, 40_000)
    client.send(extension(INPUT_COMPLETE, varint(1)))
    if not seen:
        seen.append(client.next())
    assert seen[0].kind == "onSubscribe", seen
    got = [signal for signal in seen[1:] if signal.kind == "onNext"]
    while (signal := client.next()).kind == "onNext":
        got.append(signal)
    assert [e for s in got for e in s.elements] == [element.upper()]
    assert signal.kind == "onComplete" and client.parts_received >= 1, signal
    client.close()
