"""Hostile peers against the Java and the JavaScript servers of the interop matrix, as real
processes: ``InteropServerMain`` and ``tests/interop/server.mjs`` (``listen()``), each serving
``counter`` on ``tcp://`` and ``ws://`` and requiring a token (§15), with their default limits
and a bounded heap (a runtime that collects lazily would show its laziness in the RSS, not
what an attacker makes it hold). tests/conformance/test_hostile_polyglot.py attacks the same
bindings' fuzz servers (no auth, small limits) over TCP.

The attacks are those ``rstreams serve`` is proven against (tests/net/test_hostile_*.py,
docs/security.md): peers that flood and never read, garbage, handshakes never finished (an
RS.io hello, an authenticate, a WebSocket upgrade), oversized frames and messages, bytes that
are not WebSocket frames sent with the upgrade request, and connections opened and dropped in
a loop. After each test the server process is still up and
a well-behaved client (``rstreams.connect`` with the token) reads ``counter`` whole over both
transports; the tests that load the server also bound the growth of its RSS
(``/proc/PID/status``). An attacker gets the goodbye PROTOCOL.md names, citing its section,
or its transport closed.

Every wait is a hang guard counting the own time of this process and the server's
(:mod:`testkit.bound`), never a speed target.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import random
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import rstreams
from rstreams.net import INT64
from rstreams.wire import ClientHello, ExtensionMessage, FrameParser, Goodbye, Subscribe, encode, extensions
from testkit import patience
from testkit.bound import within
from testkit.hostile import RCVBUF, Flood, Flooder, MiB, RssWatch, numbered, rss_kib, varint
from testkit.rawws import masked

pytestmark = pytest.mark.timeout(180)  # the first test of each server waits for Maven and its start

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
JAVA = ROOT / "java"
TOKEN = "hostile-bindings-token"
WAIT = 30.0
"""Seconds of own time one answer may take: a hang guard."""
STARTUP = 60.0
"""Seconds a server has to start, or a flood to end: a hang guard."""
BUILD = 100.0
"""Seconds the Java build (when java/ is newer than it) may take: a hang guard."""
HANDSHAKE_TIMEOUT = 10
"""Both servers' default handshake timeout, in seconds (the Java binding's and listen()'s)."""
RSS_BOUND = 96 * MiB
"""Largest growth of a server's RSS under one attack (tests/conformance/test_hostile_polyglot.py
measured about 60 MiB for either server under four flooders of subscribes, a bounded heap each)."""
HEAP = "-Xmx64m"
"""The Java server's heap: a JVM's RSS grows lazily towards a quarter of the machine's memory,
so what an attacker makes it hold must fit in this."""
NODE_HEAP = "--max-old-space-size=64"
"""The JavaScript server's heap (MiB), for the same reason: V8 collects lazily below its limit."""

AUTH = extensions.AUTH.id
AUTHENTICATE = 0x84  # §15.1: kind 1 (token), then the token as a string
HELLO = encode(ClientHello(extensions=(AUTH,)))
SIGNED_IN = HELLO + encode(
    ExtensionMessage(type=AUTHENTICATE, payload=b"\x01" + varint(len(TOKEN)) + TOKEN.encode())
)
"""What a peer with the token sends first: a clientHello listing auth, and its authenticate."""


@dataclass
class Served:
    """A server process of ``kind`` and the URL it serves on for each transport."""

    kind: str
    process: subprocess.Popen[str]
    urls: dict[str, str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def address(self, transport: str = "tcp") -> tuple[str, int]:
        host, _, port = self.urls[transport].split("://", 1)[1].split("/", 1)[0].rpartition(":")
        return host, int(port)


def unavailable(what: str) -> None:
    """Skip (fail under CI=true, as the interop matrix does)."""
    if os.environ.get("CI") == "true":
        pytest.fail(what)
    pytest.skip(what)


def java_command() -> list[str]:
    """InteropServerMain's command, with java/ compiled first when its classes are older than
    its sources (or missing)."""
    if shutil.which("mvn") is None or shutil.which("java") is None:
        unavailable("no mvn/java (JDK 17+ and Maven): the Java server needs them")
    listing = JAVA / "target" / "interop-classpath.txt"
    built = listing.stat().st_mtime if listing.exists() else 0.0
    sources = [JAVA / "pom.xml", *(JAVA / "src").rglob("*.java")]
    if any(source.stat().st_mtime > built for source in sources):
        patience.run(
            [
                "mvn", "-B", "-ntp", "-q", "-f", str(JAVA / "pom.xml"), "test-compile",
                "dependency:build-classpath", f"-Dmdep.outputFile={listing}", "-Dmdep.includeScope=test",
            ],
            BUILD,
            check=True,
        )  # fmt: skip
        listing.touch()  # (Maven leaves an unchanged listing as it was)
    classpath = os.pathsep.join(
        [str(JAVA / "target" / "test-classes"), str(JAVA / "target" / "classes"), listing.read_text().strip()]
    )
    return ["java", HEAP, "-cp", classpath, "io.rstreams.conformance.InteropServerMain"]


def js_command() -> list[str]:
    if shutil.which("node") is None:
        unavailable("no node (Node.js 20+): the JavaScript server needs it")
    if not (ROOT / "js" / "node_modules" / "ws").is_dir():
        unavailable("js/node_modules is missing: run `npm ci` in js/")
    return ["node", NODE_HEAP, str(HERE / "server.mjs")]


@pytest.fixture(scope="module", params=["java", "js"])
def server(request: pytest.FixtureRequest) -> Iterator[Served]:
    """One server process of each kind for the module's tests, on tcp:// and ws://."""
    command = java_command() if request.param == "java" else js_command()
    process = subprocess.Popen(
        [*command, TOKEN, "tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        text=True,
    )
    try:
        urls = {}
        for transport in ("tcp", "ws"):
            line = patience.child_line(process, "'serving on URL'", STARTUP).strip()
            assert line.startswith(f"serving on {transport}://"), line
            urls[transport] = line.rsplit(" ", 1)[1]
        yield Served(request.param, process, urls)
    finally:
        patience.stop_child(process, 10)


@pytest.fixture(autouse=True)
def still_serving(server: Served) -> Iterator[None]:
    """After each test: the server is up and serves a well-behaved client over both transports."""
    yield
    assert server.process.poll() is None, f"the {server.kind} server exited with {server.process.returncode}"
    for transport in ("tcp", "ws"):
        asyncio.run(well_behaved(server, transport))


async def well_behaved(server: Served, transport: str = "tcp") -> None:
    """A client with the token reads ``counter?from=5&to=105``: 5..104, in order."""
    url = server.urls[transport]
    conn = await within(rstreams.connect(url, auth=TOKEN, handshake_timeout=None), WAIT, [server.pid])
    async with conn:

        async def read() -> list[int]:
            return [value async for value in conn.publisher("counter?from=5&to=105", codec=INT64)]

        got = await within(read(), WAIT, [server.pid])
    assert got == list(range(5, 105)), f"{server.kind} {transport}: {got[:3]}...{got[-3:]} ({len(got)})"


class Peer:
    """A raw TCP connection to the server: what it writes, parsed as RS.io, until it closes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int) -> None:
        self.reader, self.writer, self.pid = reader, writer, pid
        self.parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
        self.frames: list[object] = []

    @classmethod
    async def open(cls, server: Served) -> Peer:
        return cls(*await asyncio.open_connection(*server.address()), server.pid)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await within(self.writer.drain(), WAIT, [self.pid])

    async def ending(self) -> str:
        """Read until the server's output ends: the reason of its goodbye ("" if it sent none;
        a reset ends it as an end of input does)."""
        while True:
            try:
                data = await within(self.reader.read(1 << 16), WAIT, [self.pid])
            except ConnectionResetError:
                data = b""
            if not data:
                break
            self.frames += self.parser.feed(data)
        self.writer.close()
        goodbyes = [f.reason for f in self.frames if isinstance(f, Goodbye)]
        assert len(goodbyes) <= 1, goodbyes
        return goodbyes[0] if goodbyes else ""


async def goodbye_to(server: Served, data: bytes) -> str:
    """The reason of the goodbye a peer that sends ``data`` gets ("" for none)."""
    peer = await Peer.open(server)
    await peer.send(data)
    return await peer.ending()


def upgrade_request(host: str, port: int) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET /rsio HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsio.v0\r\n\r\n"
    ).encode()


class RawWebSocket:
    """A WebSocket client of the server's ws:// URL, made by hand (masked frames, key 0)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int) -> None:
        self.reader, self.writer, self.pid = reader, writer, pid

    @classmethod
    async def open(cls, server: Served, *, upgrade: bool = True) -> RawWebSocket:
        reader, writer = await asyncio.open_connection(*server.address("ws"))
        peer = cls(reader, writer, server.pid)
        if upgrade:
            writer.write(peer.request())
            head = await within(reader.readuntil(b"\r\n\r\n"), WAIT, [server.pid])
            assert head.startswith(b"HTTP/1.1 101"), head
        return peer

    def request(self) -> bytes:
        return upgrade_request(*self.writer.get_extra_info("peername")[:2])

    async def ending(self) -> tuple[str, int | None]:
        """Read until the server's output ends: the reason of the goodbye its binary messages
        carried ("" for none) and the status of its close frame (None for none)."""
        received = bytearray()
        while True:
            try:
                data = await within(self.reader.read(1 << 16), WAIT, [self.pid])
            except ConnectionResetError:
                data = b""
            if not data:
                break
            received += data
        self.writer.close()
        parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
        frames: list[object] = []
        status = None
        at = 0
        while at + 2 <= len(received):  # the server's frames, unmasked
            opcode, size = received[at] & 0x0F, received[at + 1] & 0x7F
            at += 2
            if size == 126:
                size, at = struct.unpack_from(">H", received, at)[0], at + 2
            elif size == 127:
                size, at = struct.unpack_from(">Q", received, at)[0], at + 8
            payload = bytes(received[at : at + size])
            at += size
            if opcode in (0x0, 0x2):
                frames += parser.feed(payload)
            elif opcode == 0x8:
                status = int(struct.unpack_from(">H", payload)[0]) if size >= 2 else None
                break
        goodbyes = [f.reason for f in frames if isinstance(f, Goodbye)]
        assert len(goodbyes) <= 1, goodbyes
        return (goodbyes[0] if goodbyes else ""), status


async def ws_ending(server: Served, *messages: bytes) -> tuple[str, int | None]:
    """The goodbye and the close status a WebSocket peer that sends ``messages`` (each whole,
    as it is: a frame of its own making) gets."""
    peer = await RawWebSocket.open(server)
    for message in messages:
        peer.writer.write(message)
    try:
        await within(peer.writer.drain(), WAIT, [server.pid])
    except ConnectionError:
        pass  # the server may close before it has read it all
    return await peer.ending()


# -- the attacks --------------------------------------------------------------------------------


FLOODERS = 2


@dataclass
class UpgradedFlooder(Flooder):
    """A :class:`Flooder` of a ws:// URL that makes its upgrade first and reads the answer (a
    client sends nothing more before it, RFC 6455 §4.1), then floods as a Flooder does."""

    def run(self) -> None:
        assert isinstance(self.address, tuple)
        try:
            self.sock = sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            sock.settimeout(WAIT)
            sock.connect(self.address)
            sock.sendall(upgrade_request(*self.address))
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += sock.recv(1) or b"\r\n\r\n"
        except OSError as error:
            self.ended = f"upgrade failed: {error}"
            return
        if not head.startswith(b"HTTP/1.1 101"):
            self.ended = f"upgrade refused: {head!r}"
            return
        self.ended = self.pump(sock)


def upgraded(flood: Flood) -> Flood:
    """``flood`` with its flooders making their upgrade first (:class:`UpgradedFlooder`)."""
    fields = [
        {f.name: getattr(flooder, f.name) for f in dataclasses.fields(flooder)} for flooder in flood.flooders
    ]
    return Flood([UpgradedFlooder(**each) for each in fields], flood.stop)


PING = bytes([0x89, 0x80 | 125]) + bytes(4) + bytes(125)
"""A WebSocket ping from a client, of the largest control payload (RFC 6455 §5.5)."""


@pytest.mark.parametrize("flood", ["tcp", "ws", "ws-pings"])
def test_a_flood_never_read_is_stopped_and_the_server_stays_bounded(server: Served, flood: str) -> None:
    """Two peers with the token flood subscribes for a name nobody serves (each refused with
    onError, §5.5), or WebSocket pings (each answered with a pong), and never read: the server
    stops reading them (§6.3) or closes them long before their budget, its RSS stays bounded,
    and the well-behaved client is served meanwhile. Over ws:// each block of subscribes is one
    message of 512 KiB; the peers read nothing but the upgrade's answer."""
    transport = flood.split("-")[0]
    address = server.address(transport)
    subscribes = numbered(
        MiB if transport == "tcp" else 512 * 1024, lambda i: Subscribe(publisher="nope", subscriber=i)
    )
    if transport == "tcp":
        prologue, block = SIGNED_IN, subscribes
    else:
        prologue = masked(SIGNED_IN)
        block = PING * 4096 if flood == "ws-pings" else masked(subscribes)
    peers = Flood.of(address, prologue, block, count=FLOODERS, budget=64 * MiB, children=[server.pid])
    if transport == "ws":
        peers = upgraded(peers)
    with RssWatch(server.pid, rss_kib(server.pid), limit_kib=RSS_BOUND // 1024, stop=peers.stop) as watch:
        peers.start()
        try:
            asyncio.run(well_behaved(server))
            asyncio.run(within(peers.wait(), STARTUP, [server.pid]))
        finally:
            peers.close()
    assert watch.growth_kib * 1024 <= RSS_BOUND, (watch.growth_mib, peers.endings())
    assert "budget" not in peers.endings(), [f.sent for f in peers.flooders]


@pytest.mark.parametrize("first", ["after-the-hello", "instead-of-the-hello"])
def test_garbage_gets_a_goodbye_naming_its_section_or_a_close(server: Served, first: str) -> None:
    rng = random.Random(19)
    garbage = bytes(rng.randrange(256) for _ in range(16384))
    data = SIGNED_IN + garbage if first == "after-the-hello" else b"\x7f" + garbage

    async def main() -> str:
        reason, _ = await asyncio.gather(goodbye_to(server, data), well_behaved(server))
        return reason

    reason = asyncio.run(main())
    assert reason == "" or "(PROTOCOL.md §" in reason, reason


def test_handshakes_never_finished_are_ended_at_the_handshake_timeout(server: Served) -> None:
    """Four peers that never finish: a clientHello cut short, a hello listing auth with no
    authenticate after it, a WebSocket upgrade request cut short and a WebSocket message cut
    short. The first two are said the goodbyes of §4.1 and §15.3 at the handshake timeout, the
    third is closed (HTTP 408 or no answer), the fourth said the first goodbye or closed; the
    well-behaved client is served meanwhile."""

    async def upgrade_cut_short() -> bytes:
        peer = await RawWebSocket.open(server, upgrade=False)
        peer.writer.write(peer.request()[:40])
        answer = await within(peer.reader.read(), WAIT + HANDSHAKE_TIMEOUT, [server.pid])
        peer.writer.close()
        return answer

    async def main() -> tuple[str, str, bytes, tuple[str, int | None]]:
        cut, unsigned, upgrade, ws_cut, _ = await asyncio.gather(
            goodbye_to(server, HELLO[:2]),
            goodbye_to(server, HELLO),
            upgrade_cut_short(),
            ws_ending(server, masked(HELLO)[:4]),  # a message cut short after the upgrade
            well_behaved(server),
        )
        return cut, unsigned, upgrade, ws_cut

    cut, unsigned, upgrade, ws_cut = asyncio.run(main())
    timed_out = f"handshake timeout (no clientHello within {HANDSHAKE_TIMEOUT} s)"
    assert cut == timed_out, cut
    assert ws_cut[0] in (timed_out, ""), ws_cut
    assert unsigned == (
        f"authentication timeout (not settled within {HANDSHAKE_TIMEOUT} s of the hello) (PROTOCOL.md §15.3)"
    ), unsigned
    assert upgrade == b"" or upgrade.startswith(b"HTTP/1.1 408"), upgrade


@pytest.mark.parametrize(
    ("frame", "limit"),
    [
        (b"\x04\x86\x80\x80\x80\x80\x20", "max_string_length=65536"),
        (b"\x08\x01\x80\x80\x80\x80\x08", "max_element_size=16777216"),
    ],
    ids=["a-name-of-2**40-bytes", "an-onNext-of-2-GiB"],
)
def test_an_oversized_frame_is_refused_naming_the_limit(server: Served, frame: bytes, limit: str) -> None:
    """Each server names the limit as §11 and rstreams do, whatever its own option is called."""
    reason = asyncio.run(goodbye_to(server, SIGNED_IN + frame))
    assert limit in reason and reason.endswith(" (PROTOCOL.md §11)"), reason


def test_a_websocket_message_above_1_mib_is_closed_with_1009(server: Served) -> None:
    """§1: a message above 1 MiB is refused with close status 1009 and no goodbye."""
    assert asyncio.run(ws_ending(server, masked(SIGNED_IN + bytes(2 * MiB)))) == ("", 1009)


def test_a_websocket_text_message_is_closed_with_1003(server: Served) -> None:
    """§1: a text message is not RS.io bytes: close status 1003 and no goodbye."""
    text = bytes([0x81, 0x80 | 5]) + bytes(4) + b"hello"
    assert asyncio.run(ws_ending(server, masked(SIGNED_IN), text)) == ("", 1003)


def test_websocket_garbage_gets_a_goodbye_naming_its_section_or_a_close(server: Served) -> None:
    rng = random.Random(19)
    garbage = bytes(rng.randrange(256) for _ in range(16384))
    reason, status = asyncio.run(ws_ending(server, masked(SIGNED_IN + garbage)))
    assert reason == "" or "(PROTOCOL.md §" in reason, (reason, status)


def test_connections_opened_and_dropped_in_a_loop_leave_the_server_bounded(server: Served) -> None:
    """Four threads open 100 connections each and drop them at once, in turn: to tcp:// with
    nothing sent, half a hello, a hello and its authenticate, or garbage; to ws:// with nothing
    sent, part of an upgrade, an upgrade, or an upgrade and a hello. Every other one is reset
    (SO_LINGER 0) rather than closed. The server's RSS stays bounded and it serves on."""
    tcp, ws = server.address(), server.address("ws")
    upgrade = upgrade_request(*ws)
    openings = [
        (tcp, b""), (tcp, HELLO[:1]), (tcp, SIGNED_IN), (tcp, b"\x7f" * 64),
        (ws, b""), (ws, upgrade[:30]), (ws, upgrade), (ws, upgrade + masked(SIGNED_IN)),
    ]  # fmt: skip
    failures: list[str] = []

    def churn(seed: int) -> None:
        for i in range(100):
            address, opening = openings[(i + seed) % len(openings)]
            try:
                with socket.create_connection(address, timeout=WAIT) as sock:
                    sock.sendall(opening)
                    if i % 2:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError as error:
                failures.append(f"{i}: {error}")

    with RssWatch(server.pid, rss_kib(server.pid)) as watch:
        threads = [threading.Thread(target=churn, args=(seed,), daemon=True) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            patience.join(thread, STARTUP)
        asyncio.run(well_behaved(server))
    assert not failures, failures[:5]
    assert watch.growth_kib * 1024 <= RSS_BOUND, watch.growth_mib


def test_bytes_behind_the_upgrade_request_are_read_as_websocket_frames(server: Served) -> None:
    """RS.io bytes sent unframed right behind the upgrade request, in the same write, are not
    WebSocket frames (RFC 6455 §5.2): the server must not serve them. Its first answer after
    the upgrade's is a close frame (1002, protocol error), or the connection ends."""

    async def main() -> tuple[bytes, str]:
        reader, writer = await asyncio.open_connection(*server.address("ws"))
        head = b""
        try:
            subscribe = encode(Subscribe(publisher="counter?from=0&to=3", subscriber=1, initial_demand=10))
            writer.write(upgrade_request(*server.address("ws")) + SIGNED_IN + subscribe)
            head = await within(reader.readuntil(b"\r\n\r\n"), WAIT, [server.pid])
            opcode = await within(reader.readexactly(1), WAIT, [server.pid])
            return head, {0x82: "a binary message: served", 0x88: "a close"}.get(opcode[0], opcode.hex())
        except asyncio.IncompleteReadError:
            return head, "the end"
        finally:
            writer.close()

    head, answer = asyncio.run(main())
    assert head.startswith(b"HTTP/1.1 101"), head
    assert answer in ("a close", "the end"), answer
