"""Session resumption end to end, through a proxy that cuts and stalls the TCP link."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any, Self

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, connect, serve
from rstreams.net._resume import Resume, ResumeRegistry
from rstreams.net._resume_session import Link, Session
from rstreams.wire import ClientHello, FrameParser, Goodbye, encode
from rstreams.wire._resume import (
    RESUME,
    RESUME_REFUSED,
    Refused,
    ResumeReplyParser,
    encode_message,
    encode_resume,
)
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION
from testkit.bound import Bound, within
from testkit.chaos import ChaosProxy
from testkit.net import WAIT, CountingSource, MemoryTransport
from testkit.net import session_of as session_or_none
from testkit.resume import SIZE, Collector, read_resume_token

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


def counted(n: int) -> rstreams.Flow[bytes]:
    return rstreams.range(n).map(lambda i: i.to_bytes(8, "big") * (SIZE // 8))


def offer(n: int) -> dict[str, Any]:
    return {"count": lambda params: counted(int(params.get("n", n)))}


async def serves_a_resumable_client(url: str) -> None:
    """A well-behaved resumable client still reads ``count`` (offer(3)) from the server at url."""
    received = Collector()
    client = await connect(url, resume=FAST)
    client.publisher("count").subscribe(received)
    await received.finished()
    await client.aclose()
    assert received.items == [0, 1, 2]


def session_of(conn: Connection) -> Session:
    session = session_or_none(conn)
    assert session is not None
    return session


class Pair:
    """A resumable server, a proxy in front of it, and a client through the proxy, both ways."""

    def __init__(self, n: int, *, seed: int = 1, client_resume: Resume | None, server_resume: Resume | None):
        self.n = n
        self.seed = seed
        self.client_resume = client_resume
        self.server_resume = server_resume
        self.from_server = Collector()
        self.from_client = Collector()
        self.server_conns: list[Connection] = []

    async def __aenter__(self) -> Self:
        def on_connection(conn: Connection) -> None:
            self.server_conns.append(conn)
            conn.publisher(f"count?n={self.n}").subscribe(self.from_client)

        self.server = await serve(
            "tcp://127.0.0.1:0", offer(self.n), on_connection=on_connection, resume=self.server_resume
        )
        port = int(self.server.url.rsplit(":", 1)[1])
        self.proxy = await ChaosProxy("127.0.0.1", port, seed=self.seed).start()
        self.client = await connect(self.proxy.url, publishers=offer(self.n), resume=self.client_resume)
        self.client.publisher(f"count?n={self.n}").subscribe(self.from_server)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.client.aclose(timeout=1.0)
        await self.proxy.aclose()
        await self.server.aclose()


FAST = Resume(attempts=20, backoff=0.01, max_backoff=0.1, attempt_timeout=2.0, buffer_bytes=256 * 1024)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_streams_both_ways_survive_random_cuts(seed: int) -> None:
    """Five cuts at seeded random points: every element arrives exactly once, in order, both ways."""
    n = 30_000
    async with Pair(n, seed=seed, client_resume=FAST, server_resume=FAST) as pair:
        await pair.from_server.wait_items(1)
        await pair.from_client.wait_items(1)
        for cut in range(5):
            links = pair.proxy.links_made
            pair.proxy.random_cut(2_000, 200_000)
            await pair.proxy.wait_links(links + 1, timeout=WAIT)  # the client reconnected
            assert pair.proxy.cuts == cut + 1
        await pair.from_server.finished()
        await pair.from_client.finished()
        for collector in (pair.from_server, pair.from_client):
            assert collector.error is None
            assert collector.completed
            assert collector.items == list(range(n))
        assert session_of(pair.client).resumes == 5
        assert session_of(pair.server_conns[0]).resumes == 5
        assert len(pair.server_conns) == 1  # one session, not one per TCP connection


async def quiescent(*sources: CountingSource, until: Callable[[], bool], quiet: float = 0.3) -> None:
    """Wait until ``until()`` holds and no source was asked for elements for ``quiet`` s (bounded)."""
    for _ in range(100):
        for source in sources:
            source.progress.clear()
        waits = [asyncio.ensure_future(source.progress.wait()) for source in sources]
        done, pending = await asyncio.wait(waits, timeout=quiet)
        for waiting in pending:
            waiting.cancel()
        if not done and until():
            return
    pytest.fail("production never stopped while the link was stalled")


async def test_a_stalled_link_bounds_the_replay_buffers() -> None:
    """Stalled both ways, production stops at buffer_bytes on each side; afterwards nothing is lost."""
    resume = Resume(attempts=5, backoff=0.01, buffer_bytes=64 * 1024)
    server_source = CountingSource(size=SIZE)
    client_source = CountingSource(size=SIZE)
    from_server = Collector(batch=1 << 20, pattern=False)
    from_client = Collector(batch=1 << 20, pattern=False)

    def on_connection(conn: Connection) -> None:
        conn.publisher("endless").subscribe(from_client)

    server = await serve(
        "tcp://127.0.0.1:0", {"endless": server_source}, resume=resume, on_connection=on_connection
    )
    port = int(server.url.rsplit(":", 1)[1])
    async with server, ChaosProxy("127.0.0.1", port) as proxy:
        client = await connect(proxy.url, resume=resume, publishers={"endless": client_source})
        try:
            client.publisher("endless").subscribe(from_server)
            await from_server.wait_items(1000)
            await from_client.wait_items(1000)
            conns = list(server.connections)
            assert len(conns) == 1
            sessions = [session_of(conns[0]), session_of(client)]
            proxy.stall()
            await quiescent(
                server_source, client_source, until=lambda: all(s._driver_paused for s in sessions)
            )
            # The bound holds on both sides: at most the last batch's element beyond buffer_bytes.
            for session in sessions:
                assert session._driver_paused
                assert session.out.held <= resume.buffer_bytes + SIZE + 16, session.out.held
            proxy.resume()
            await from_server.wait_items(len(from_server.items) + 5000)
            await from_client.wait_items(len(from_client.items) + 5000)
        finally:
            await client.aclose(timeout=1.0)
    for received in (from_server, from_client):  # (their errors are the close's: the sources are endless)
        assert len(received.items) >= 6000
        assert received.items == list(range(1, len(received.items) + 1))


async def test_expired_session_fails_with_on_error_on_both_sides() -> None:
    """A resume after the server dropped the session is refused: every subscriber gets on_error.

    The client keeps trying until the proxy lets it through (after the session expired): its
    attempts (20 s of them) only bound a hang, so a slow expiry cannot exhaust them first."""
    client_resume = Resume(attempts=400, backoff=0.05, max_backoff=0.05)
    server_resume = Resume(session_timeout=0.2)
    async with Pair(10**9, client_resume=client_resume, server_resume=server_resume) as pair:
        await pair.from_server.wait_items(100)
        await pair.from_client.wait_items(100)
        pair.proxy.refuse()
        pair.proxy.cut()
        await pair.from_client.finished()  # the server's session expired
        assert isinstance(pair.from_client.error, ConnectionBrokenError)
        said = str(pair.from_client.error.__cause__)
        assert "the session was not resumed within 0.2 s (PROTOCOL.md §16.3)" in said, said
        pair.proxy.refuse(False)
        await pair.from_server.finished()
        error = pair.from_server.error
        assert isinstance(error, ConnectionBrokenError)
        assert "refused" in str(error.__cause__)
        assert "unknown or expired session" in str(error.__cause__)
        assert pair.client.closed


async def test_attempts_exhausted_fails_subscribers() -> None:
    """With every reconnection refused, the client gives up after `attempts` and fails its streams."""
    client_resume = Resume(attempts=3, backoff=0.01, max_backoff=0.02)
    async with Pair(10**9, client_resume=client_resume, server_resume=Resume(session_timeout=1.0)) as pair:
        await pair.from_server.wait_items(100)
        pair.proxy.refuse()
        links = pair.proxy.links_made
        pair.proxy.cut()
        await pair.from_server.finished()
        error = pair.from_server.error
        assert isinstance(error, ConnectionBrokenError)
        assert "3 attempt(s)" in str(error.__cause__)
        assert pair.proxy.links_made == links  # refused ones are not counted as links
        await pair.from_client.finished(timeout=5.0)  # the server's session expires in turn
        assert isinstance(pair.from_client.error, ConnectionBrokenError)


async def test_plain_client_on_a_resumable_server() -> None:
    """A client without resume= gets a normal connection; the server keeps no replay buffer."""
    async with Pair(5000, client_resume=None, server_resume=FAST) as pair:
        await pair.from_server.finished()
        await pair.from_client.finished()
        assert pair.from_server.items == list(range(5000))
        assert pair.from_client.items == list(range(5000))
        assert session_of(pair.server_conns[0]).out.held == 0
        assert session_or_none(pair.client) is None


async def test_resumable_client_on_a_plain_server_fails_on_a_cut() -> None:
    """Without the server's agreement a cut ends the streams at once, as without resumption."""
    async with Pair(10**9, client_resume=FAST, server_resume=None) as pair:
        await pair.from_server.wait_items(100)
        assert session_of(pair.client).out.held == 0
        links = pair.proxy.links_made
        pair.proxy.cut()
        await pair.from_server.finished()
        assert isinstance(pair.from_server.error, ConnectionBrokenError)
        assert pair.proxy.links_made == links


async def test_resume_settings_are_checked() -> None:
    """Bad Resume(...) values are refused when built."""
    with pytest.raises(ValueError, match="attempts"):
        Resume(attempts=-1)
    with pytest.raises(ValueError, match="buffer_bytes"):
        Resume(buffer_bytes=10)
    with pytest.raises(ValueError, match="stall_timeout"):
        Resume(stall_timeout=0)
    with pytest.raises(ValueError, match="backoff"):
        Resume(backoff=-1.0)
    assert [Resume(backoff=0.1, max_backoff=0.3).delay(i) for i in range(4)] == [0.1, 0.2, 0.3, 0.3]


async def test_a_half_open_link_is_replaced_by_the_resume() -> None:
    """The client's side breaks while the server's socket stays open: the resume takes over the session."""
    n = 20_000
    async with Pair(n, client_resume=FAST, server_resume=FAST) as pair:
        await pair.from_server.wait_items(1000)
        await pair.from_client.wait_items(1000)
        links = pair.proxy.links_made
        pair.proxy.cut(half_open=True)
        await pair.proxy.wait_links(links + 1)
        await pair.from_server.finished()
        await pair.from_client.finished()
        assert pair.from_server.items == list(range(n))
        assert pair.from_client.items == list(range(n))
        assert session_of(pair.server_conns[0]).resumes == 1


BIG = 150 * 1024
"""Larger than split_threshold (64 KiB): elements travel as parts, and cuts land inside them."""


def big_offer(n: int) -> dict[str, Any]:
    return {"big": lambda params: rstreams.range(n).map(lambda i: i.to_bytes(8, "big") * (BIG // 8))}


@pytest.mark.timeout(90)
async def test_split_elements_survive_cuts() -> None:
    """150 KiB elements (split into parts) arrive whole, once and in order across cuts."""
    n = 80
    got: list[int] = []
    done = asyncio.Event()
    errors: list[BaseException] = []

    class Big(Collector):
        def on_next(self, item: bytes) -> None:
            assert len(item) == BIG and item == item[:8] * (BIG // 8), "element corrupted"
            got.append(int.from_bytes(item[:8], "big"))
            self.progress.set()
            if self.subscription is not None:
                self.subscription.request(1)

        def on_error(self, error: BaseException) -> None:
            errors.append(error)
            done.set()

        def on_complete(self) -> None:
            done.set()

    server = await serve("tcp://127.0.0.1:0", big_offer(n), resume=FAST)
    port = int(server.url.rsplit(":", 1)[1])
    async with server, ChaosProxy("127.0.0.1", port, seed=7) as proxy:
        client = await connect(proxy.url, resume=FAST)
        try:
            client.publisher("big").subscribe(Big(batch=4))
            await proxy.cut_repeatedly(3, 100_000, 1_500_000)
            await within(done.wait(), WAIT * 3)
        finally:
            await client.aclose(timeout=1.0)
    assert not errors, errors
    assert got == list(range(n))


async def test_resume_over_tls(server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext) -> None:
    """Over TLS a cut costs a new TLS handshake, and the streams still arrive exactly once."""
    n = 20_000
    received = Collector()
    server = await serve("tls://127.0.0.1:0", offer(n), ssl=server_ssl, resume=FAST)
    port = int(server.url.rsplit(":", 1)[1])
    async with server, ChaosProxy("127.0.0.1", port, seed=3) as proxy:
        client = await connect(proxy.url.replace("tcp://", "tls://"), ssl=client_ssl, resume=FAST)
        try:
            client.publisher("count").subscribe(received)
            await proxy.cut_repeatedly(3, 5_000, 300_000)
            await received.finished()
        finally:
            await client.aclose(timeout=1.0)
    assert received.error is None
    assert received.items == list(range(n))


async def test_closing_during_an_outage_ends_cleanly() -> None:
    """aclose() while the client is reconnecting ends its streams and returns, without a hang."""
    client_resume = Resume(attempts=1000, backoff=0.01, max_backoff=0.01)
    async with Pair(10**9, client_resume=client_resume, server_resume=Resume(session_timeout=0.5)) as pair:
        await pair.from_server.wait_items(100)
        session = session_of(pair.client)
        pair.proxy.refuse()
        pair.proxy.cut()
        await within(pair.client.aclose(timeout=0.5))
        await pair.from_server.finished()
        assert pair.from_server.error is not None
        assert pair.client.closed
        assert session.link is None
        assert session._reconnect is None  # the reconnecting task was stopped


async def test_a_silent_link_is_replaced_after_stall_timeout() -> None:
    """A link that goes silent without a reset is dropped after stall_timeout and the session resumed."""
    resume = Resume(attempts=100, backoff=0.01, max_backoff=0.05, attempt_timeout=0.3, stall_timeout=0.3)
    n = 20_000
    async with Pair(n, client_resume=resume, server_resume=resume) as pair:
        await pair.from_server.wait_items(1000)
        await pair.from_client.wait_items(1000)
        links = pair.proxy.links_made
        pair.proxy.stall()
        await pair.proxy.wait_links(links + 1)  # the client gave up on the silent link
        pair.proxy.resume()
        await pair.from_server.finished()
        await pair.from_client.finished()
        assert pair.from_server.items == list(range(n))
        assert pair.from_client.items == list(range(n))
        assert session_of(pair.client).resumes >= 1


@pytest.mark.parametrize(
    "first",
    [b"\x89\xff\xff\xff\xff\x0f", b"\x89\x02\x00\x00", b"\x89\x03\x10\x00\x00", b"\x89\x01\x01\x00"],
    ids=["huge-length", "empty-token", "short-token", "trailing-bytes"],
)
async def test_malformed_resume_is_refused_and_the_server_goes_on(first: bytes) -> None:
    """A malformed resume gets serverHello + resumeRefused naming §16, then the close; others are served."""
    async with await serve("tcp://127.0.0.1:0", offer(3), resume=FAST) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(first)
        data = await within(reader.read())  # until the server closes
        writer.close()
        parser = ResumeReplyParser()
        outcome = parser.feed(data)
        assert isinstance(outcome, Refused), data
        assert "§16" in outcome.reason
        await serves_a_resumable_client(server.url)


async def test_a_long_refusal_is_cut_between_two_characters() -> None:
    """§16.2: resumeRefused's reason is UTF-8; cut to 200 bytes, it never ends inside a character."""
    link = Link()
    transport = MemoryTransport(link)
    link.transport = transport
    ResumeRegistry._refuse(link, "x" + "é" * 150)  # 301 bytes: the 200th is the first half of an é
    assert transport.buffer == [encode_message(RESUME_REFUSED, ("x" + "é" * 99).encode())]


async def test_resume_over_websocket() -> None:
    """Over ws:// the same: a cut costs a new WebSocket handshake, nothing is lost or repeated."""
    n = 20_000
    received = Collector()
    server = await serve("ws://127.0.0.1:0/rs", offer(n), resume=FAST)
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    async with server, ChaosProxy("127.0.0.1", port, seed=5) as proxy:
        client = await connect(proxy.url.replace("tcp://", "ws://") + "/rs", resume=FAST)
        try:
            client.publisher("count").subscribe(received)
            await received.wait_items(1)
            session = session_of(client)  # the WebSocket's transport is up once elements arrive
            await proxy.cut_repeatedly(3, 5_000, 300_000)
            await received.finished()
        finally:
            await client.aclose(timeout=1.0)
    assert received.error is None
    assert received.items == list(range(n))
    assert session.resumes == 3


async def test_error_goodbye_closes_promptly_on_a_resumable_server() -> None:
    """After an error goodbye the session half-closes like a plain connection: no 2 s linger."""
    async with await serve("tcp://127.0.0.1:0", offer(3), resume=FAST) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x01\x00\x00\x7f")  # clientHello, then a reserved type byte
        async with Bound() as bound:  # (its own time: what a loaded machine took is not counted)
            data = await reader.read()  # goodbye, then the server's end of input
            elapsed, _ = bound.spent()
        writer.close()
    assert b"0x7f" in data
    assert elapsed < 1.0, elapsed  # LINGER_SECONDS is 2


async def test_positions_count_every_byte_resume_acks_included() -> None:
    """§16.3: a position counts every byte of the stream, the resumeAcks too: once the two
    sides have acknowledged each other, each one's received position is the other's written
    end, and the two ends add up to every byte that crossed the link."""
    async with Pair(2000, client_resume=FAST, server_resume=FAST) as pair:
        await pair.from_server.finished()
        await pair.from_client.finished()
        client, server = session_of(pair.client), session_of(pair.server_conns[0])

        def settled() -> bool:
            return (
                client.counter.acked > 0
                and server.counter.acked > 0
                and client.counter.position == server.out.end
                and server.counter.position == client.out.end
            )

        for _ in range(int(WAIT / 0.01)):  # the acknowledgements go out on a 20 ms timer (§16.4)
            if settled():
                break
            await asyncio.sleep(0.01)
        assert settled(), (client.counter.position, server.out.end, server.counter.position, client.out.end)
        # one link, never cut: every byte on the wire, both ways, is in the two streams
        assert pair.proxy.links_made == 1
        assert pair.proxy.forwarded == client.out.end + server.out.end


async def test_a_session_whose_conversation_is_over_is_not_resumed() -> None:
    """A resume for a session that is ending (here: an error goodbye sent, the server waiting
    for the client's close) is refused as expired (PROTOCOL.md §16.3), and the session still
    ends once the old transport does. Resuming it put a closing session on a new transport
    that nothing closed: the server kept the connection for good (found by
    fuzz/fuzz_deployed.py resume)."""
    ended: list[Connection] = []
    async with await serve("tcp://127.0.0.1:0", offer(3), resume=FAST, on_connection=ended.append) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(encode(ClientHello(extensions=(RESUME_EXTENSION.id,))))
        token, received = await read_resume_token(reader)
        writer.write(b"\x7f")  # a reserved type byte: goodbye, and the session is over
        rest = await within(reader.read())  # the goodbye, then the server's end of input
        assert b"0x7f" in rest
        again_reader, again_writer = await asyncio.open_connection("127.0.0.1", port)
        again_writer.write(encode_message(RESUME, encode_resume(token, received + len(rest))))
        answer = await within(again_reader.read())  # until the server closes
        again_writer.close()
        outcome = ResumeReplyParser().feed(answer)
        assert outcome == Refused("unknown or expired session token (PROTOCOL.md §16.3)"), answer
        writer.close()
        await within(ended[0].wait_closed())
        assert not server.connections


@pytest.mark.parametrize(
    "first", [b"\x89\x12\x10\x00\x00", b"\x89", b""], ids=["cut-resume", "type-byte-only", "nothing"]
)
async def test_input_ending_before_the_first_bytes_decide_ends_the_connection_at_once(first: bytes) -> None:
    """The peer's end of input inside ``resume`` (or before any byte) ends the connection at
    once: resumeRefused naming §9.3's truncated message (or, for no byte at all, the goodbye of
    a server without resumption), then the close. The link kept waiting for the rest of the
    resume until the handshake timeout (found by fuzz/fuzz_deployed.py resume); without one,
    for good. No handshake timeout here, so only the end of input can end the connection."""
    async with await serve("tcp://127.0.0.1:0", offer(3), resume=FAST, handshake_timeout=None) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(first)
        writer.write_eof()
        data = await within(reader.read())  # until the server closes
        writer.close()
        if first:
            outcome = ResumeReplyParser().feed(data)
            assert outcome == Refused(
                f"input ended inside resume ({len(first)} bytes of an incomplete message) (PROTOCOL.md §9.3)"
            ), data
        else:
            parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
            goodbyes = [frame for frame in parser.feed(data) if isinstance(frame, Goodbye)]
            assert len(goodbyes) == 1 and "§9.3" in goodbyes[0].reason, data
        await serves_a_resumable_client(server.url)
