"""Hostile peers against the Java and the JavaScript servers (real processes: fuzz/fuzz_polyglot.py's
``FuzzServerMain`` and ``polyglot_server.mjs``, limits of 256 KiB elements and 64 subscriptions, a
handshake timeout of 5 s), as tests/conformance/test_hostile.py does against ours: huge declared
lengths, garbage, a flood after an error, a slow-loris handshake, a split element growing past
max_element_size, subscribes beyond the limit and a flood of replies never read. Each gets a
goodbye (or a refusal) naming what was wrong, the server stays up, writes nothing to stderr, and a
well-behaved Python client on another connection is served meanwhile."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from _netcommon import stop_child

import rstreams
from rstreams.wire import (
    Cancel,
    ClientHello,
    Frame,
    FrameParser,
    Goodbye,
    OnError,
    OnNext,
    OnNextPart,
    OnSubscribe,
    Subscribe,
    encode,
)
from testkit import patience
from testkit.bound import within
from testkit.hostile import Flood, MiB, RssWatch, frames, numbered, rss_kib
from testkit.scripts import load_script

polyglot: ModuleType = load_script("fuzz/fuzz_polyglot.py")

pytestmark = pytest.mark.timeout(120)  # the first test of each server waits for Maven or Node

HELLO = encode(ClientHello(extensions=(1,)))
WAIT = 15.0
"""Seconds a server has to answer one of these peers: a hang guard, not a speed check."""
NAMES = {"string": "max_string_length", "element": "max_element_size", "extensions": "max_extensions"}
LIMITS = {"java": NAMES, "js": NAMES}
"""How each server names its limits in a goodbye: as §11 and rstreams do, whatever its options' names."""
RSS_BOUND = 96 * MiB
"""Largest growth of a server's RSS while four peers flood it (measured 2026-11-30: about 60 MiB
for either, at load 20)."""
HEAP = "-Xmx64m"
"""The Java server's heap: RSS says little of a JVM (its heap grows lazily towards a quarter of
the machine's memory), so what a hostile peer makes it hold must fit in this."""


@dataclass
class Served:
    """A server process of ``mode`` listening on ``url``; what it writes to stderr goes to ``log``."""

    mode: str
    process: subprocess.Popen[str]
    url: str
    log: Path
    seen: int = 0

    @property
    def address(self) -> tuple[str, int]:
        host, _, port = self.url.removeprefix("tcp://").rpartition(":")
        return host, int(port)

    def logged(self) -> str:
        """What the server wrote to stderr since the last call."""
        text = self.log.read_bytes()[self.seen :]
        self.seen += len(text)
        return text.decode(errors="replace")


@pytest.fixture(scope="module", params=["java", "js"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server process of each kind for the module's tests."""
    mode = request.param
    why = polyglot.unavailable(mode)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    command = polyglot.server_command(mode)
    if mode == "java":  # a bounded heap: memory that grows without bound fails the server (OutOfMemoryError)
        command.insert(1, HEAP)
    log = tmp_path_factory.mktemp(f"hostile-{mode}") / "stderr.txt"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, cwd=polyglot.ROOT, text=True
        )
    try:
        try:
            line = patience.child_line(process, "'serving on URL'", polyglot.STARTUP).strip()
        except (RuntimeError, TimeoutError) as error:
            error.add_note(f"its stderr: {log.read_text(errors='replace')}")
            raise
        assert line.startswith("serving on "), (line, log.read_text(errors="replace"))
        served = Served(mode, process, line.split()[-1], log)
        served.logged()  # (what it wrote while starting is not a failure)
        yield served
    finally:
        stop_child(process, 10)


@pytest.fixture(autouse=True)
def still_serving(server: Served) -> Iterator[None]:
    """After each test: the server is alive, serves a well-behaved client and logged nothing."""
    yield
    assert server.process.poll() is None, f"the {server.mode} server exited with {server.process.returncode}"
    asyncio.run(well_behaved(server))
    logged = server.logged()
    assert not logged, f"the {server.mode} server logged: {logged[-2000:]}"


async def well_behaved(server: Served) -> None:
    """A normal client (rstreams.connect) makes a request/response. Its waits count the server's
    own time and ours, not the machine's load (testkit.bound): connect's own handshake timer is off."""
    children = [server.process.pid]
    conn = await within(rstreams.connect(server.url, handshake_timeout=None), WAIT, children)
    async with conn:
        assert await within(conn.request("numbers"), WAIT, children) == b"\x00"


class Peer:
    """A raw socket to the server: what it writes, parsed as RS.io, until it closes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pid: int) -> None:
        self.reader, self.writer = reader, writer
        self.children = [pid]  # (the server: its waits for a CPU are not counted)
        self.parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
        self.frames: list[object] = []

    @classmethod
    async def open(cls, server: Served) -> Peer:
        return cls(*await asyncio.open_connection(*server.address), server.process.pid)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await within(self.writer.drain(), WAIT, self.children)

    async def until(self, done: type[Frame] | Callable[[list[object]], bool] | None) -> list[object]:
        """Read until a frame of type ``done`` came, or ``done(frames)`` holds (None: until the
        server closes); the server closing first fails unless ``done`` is None."""
        if isinstance(done, type):
            kind = done
            done = lambda frames: any(isinstance(f, kind) for f in frames)  # noqa: E731
        while done is None or not done(self.frames):
            data = await within(self.reader.read(1 << 16), WAIT, self.children)
            assert data or done is None, f"the server closed: {self.frames[-3:]}"
            if not data:
                break
            self.frames += self.parser.feed(data)
        assert self.parser.error is None, f"the server wrote malformed bytes: {self.parser.error}"
        return self.frames

    async def goodbye(self) -> str:
        """The reason of the server's goodbye; then its output ends."""
        await self.until(Goodbye)
        [bye] = [f for f in self.frames if isinstance(f, Goodbye)]
        with_eof = await self.until(None)
        assert sum(isinstance(f, Goodbye) for f in with_eof) == 1
        return bye.reason

    def close(self) -> None:
        self.writer.close()


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        (HELLO + b"\x04\x86\x80\x80\x80\x80\x20", "string"),  # a publisher name of 2**40 bytes
        (HELLO + b"\x08\x01\x80\x80\x80\x80\x08", "element"),  # an onNext of 2 GiB
        (b"\x01\x00\x80\x80\x80\x80\x10", "extensions"),  # a hello listing 2**32 extension ids
    ],
    ids=["string", "element", "extensions"],
)
def test_a_huge_declared_length_is_refused_naming_the_limit(server: Served, data: bytes, limit: str) -> None:
    async def main() -> str:
        peer = await Peer.open(server)
        await peer.send(data)
        reason = await peer.goodbye()
        peer.close()
        return reason

    reason = asyncio.run(main())
    assert LIMITS[server.mode][limit] in reason and "(PROTOCOL.md §11)" in reason, reason


def test_garbage_gets_a_goodbye_naming_its_section(server: Served) -> None:
    rng = random.Random(6)
    garbage = bytes(rng.randrange(256) for _ in range(16384))

    async def main() -> str:
        peer = await Peer.open(server)
        await peer.send(HELLO + garbage)
        reason, _ = await asyncio.gather(peer.goodbye(), well_behaved(server))
        peer.close()
        return reason

    assert "(PROTOCOL.md §" in asyncio.run(main())


def test_a_peer_flooding_after_its_error_still_reads_the_goodbye(server: Served) -> None:
    """A bad type byte, then 1 MiB more: the goodbye naming §3 is not lost in a reset (§10)."""

    async def main() -> str:
        peer = await Peer.open(server)
        await peer.send(HELLO + b"\x0e" + bytes(MiB))
        reason = await peer.goodbye()
        peer.close()
        return reason

    assert "§3" in asyncio.run(main())


def test_a_peer_flooding_after_its_error_is_cut_off_past_the_linger_bytes(server: Served) -> None:
    """After its goodbye the server discards input while it lingers (§10), but no more than 4 MiB
    (rstreams' LINGER_BYTES): then it closes, and the flooding peer is reset. Both servers read
    and dropped about 200 MB in their 2 s linger before."""
    peers = Flood.of(server.address, HELLO + b"\x0e", bytes(MiB), count=1, budget=512 * MiB)
    peers.start()
    try:
        asyncio.run(peers.wait())
    finally:
        peers.close()
    [flooder] = peers.flooders
    assert flooder.ended.startswith("socket error"), flooder.ended
    assert flooder.sent < 64 * MiB, f"the {server.mode} server took {flooder.sent} bytes after its goodbye"


def test_a_slow_loris_handshake_is_said_goodbye_at_the_handshake_timeout(server: Served) -> None:
    """A clientHello listing 63 extension ids, trickled one id every 200 ms and never whole (62 ids
    come, over 12.4 s), is said goodbye at the handshake timeout (5 s) while ids are still coming
    (not for being idle), and the well-behaved client is served meanwhile; the Java server kept
    such a peer for good."""

    async def main() -> tuple[str, int, bool]:
        peer = await Peer.open(server)
        await peer.send(b"\x01\x00\x3f")  # a clientHello listing 63 ids, to come
        sent = 0

        async def trickle() -> None:
            nonlocal sent
            while sent < 62:
                await asyncio.sleep(0.2)
                await peer.send(b"\x01")
                sent += 1

        trickling = asyncio.create_task(trickle())
        await well_behaved(server)
        try:
            await peer.until(Goodbye)
            ids_then, still_trickling = sent, not trickling.done()
            reason = await peer.goodbye()
        finally:
            trickling.cancel()
            await asyncio.gather(trickling, return_exceptions=True)
        peer.close()
        return reason, ids_then, still_trickling

    reason, ids, still_trickling = asyncio.run(main())
    assert reason == "handshake timeout (no clientHello within 5 s)"
    assert ids < 62 and still_trickling, (ids, still_trickling)  # the goodbye came while ids were coming


def test_a_split_element_growing_past_max_element_size_cancels_that_subscription(server: Served) -> None:
    """Parts of one element on the server's subscription to our ``up`` growing past 256 KiB: the
    server cancels that subscription; the connection goes on (a subscribe on it is answered)."""

    async def main() -> list[object]:
        peer = await Peer.open(server)
        await peer.send(HELLO)
        await peer.until(Subscribe)  # the server's subscribe to our "up"
        [up] = [f.subscriber for f in peer.frames if isinstance(f, Subscribe)]
        part = encode(OnNextPart(subscriber=up, element_id=0, data=bytes(60_000)))
        await peer.send(encode(OnSubscribe(subscriber=up)) + part * 6)
        await peer.send(encode(Subscribe(publisher="numbers", subscriber=7, initial_demand=3)))
        await peer.until(OnNext)
        await peer.send(encode(Goodbye(reason="done")))
        await peer.until(None)
        peer.close()
        return peer.frames

    got = asyncio.run(main())
    assert any(isinstance(f, Cancel) and f.subscriber == 1 for f in got), got
    assert [f.element for f in got if isinstance(f, OnNext) and f.subscriber == 7] == [
        b"\x00",
        b"\x01",
        b"\x02",
    ]
    assert not [f for f in got if isinstance(f, Goodbye) and f.reason], got  # the answer to ours only


def test_subscribes_beyond_max_subscriptions_are_refused_naming_the_limit(server: Served) -> None:
    async def main() -> list[object]:
        peer = await Peer.open(server)
        subscribes = frames(
            *(Subscribe(publisher="numbers", subscriber=i, initial_demand=0) for i in range(1, 70))
        )
        await peer.send(HELLO + subscribes)
        await peer.until(lambda got: sum(isinstance(f, OnError | OnSubscribe) for f in got) >= 69)
        await peer.send(encode(Goodbye(reason="done")))
        await peer.until(None)
        peer.close()
        return peer.frames

    got = asyncio.run(main())
    refused = sorted(f.subscriber for f in got if isinstance(f, OnError))
    assert refused == list(range(65, 70))
    errors = {f.error for f in got if isinstance(f, OnError)}
    assert all("max_subscriptions" in e and "(PROTOCOL.md §11)" in e for e in errors), errors


def test_a_flood_of_replies_never_read_keeps_the_server_bounded(server: Served) -> None:
    """Four peers flood subscribes for a name nobody serves (each refused with onError, §5.5)
    and never read: the server stops reading them (§6.3) long before their budget, its memory
    stays bounded (the Java one's heap is 64 MiB), and the well-behaved client is served meanwhile."""
    block = numbered(MiB, lambda i: Subscribe(publisher="nope", subscriber=i))
    peers = Flood.of(server.address, HELLO, block, count=4, budget=64 * MiB, children=[server.process.pid])
    with RssWatch(
        server.process.pid, rss_kib(server.process.pid), limit_kib=RSS_BOUND // 1024, stop=peers.stop
    ) as watch:
        peers.start()
        try:
            asyncio.run(well_behaved(server))
            asyncio.run(peers.wait())
        finally:
            peers.close()
    assert watch.growth_kib * 1024 <= RSS_BOUND, (watch.growth_mib, peers.endings())
    assert "budget" not in peers.endings(), [f.sent for f in peers.flooders]
    assert min(f.sent for f in peers.flooders) >= 64 * 1024, peers.endings()
