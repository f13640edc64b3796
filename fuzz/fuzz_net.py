"""Fuzz a real server: any bytes, in any reads, into one connection of ``rstreams.net.serve``.

The server listens on a Unix socket with publishers, message handlers and channels (so every
extension it offers is active when the client's hello lists them), and subscribes to a
publisher of each client's (so it receives elements too: the large-element read path). For
each input a raw client connects, writes the input's reads one loop turn apart (the server
reads each as it comes, through its real transport: read buffers, the inline 64 KiB path,
parts held for later turns), reads everything the server writes with a client core, and ends
its output (EOF). Invariants:

* nothing escapes into the event loop: its exception handler and rstreams' unhandled-error
  hook record every call, and a run with one fails; so does a RuntimeWarning (a coroutine
  never awaited);
* the server writes well-formed RS.io, and a goodbye for a protocol error names its
  PROTOCOL.md section;
* the connection ends (a goodbye and a close, or a close after our EOF) within ``WAIT`` seconds
  of the loop's own time (wall time less what the machine's load kept it waiting for a CPU: see
  :class:`Bound`), and then no task is left behind and the server no longer counts it;
* what the server holds for the connection while it reads stays bounded: the parser's
  incomplete frame, split elements and split channel input, the rest of a read it holds for a
  later turn, the output not yet written (checked once the connection has its hello: before it,
  ``_pending.HELLO_BYTES`` bounds what is kept);
* a second, well-behaved client on the same server keeps working: after every input it makes
  a request/response, and every few inputs sends a message and runs a channel (its input in
  parts).

The input layout is the wire harness's (fuzz_connection.py: chunks, large onNext frames cut
across reads, subscribeMetadata windows, repeated and joined reads): byte 0 bit 0 prepends a
clientHello listing every extension, bit 1 makes a lazy peer, which reads nothing until it has
written its input (its replies back up: the server, with water marks of 64 and 16 KiB, stops
reading it and says goodbye after an ``unread_timeout`` of 1 s); byte 1 is ignored.

Run::

    .venv/bin/python fuzz/fuzz_net.py --pure 100000 [SEED [SECONDS]]
    .venv/bin/python fuzz/fuzz_net.py --replay HEX
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))

import fuzz_connection as wire_harness  # (this directory, put on the path above)

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import set_unhandled_error_hook
from rstreams.net import Connection, connect, serve
from rstreams.net._intake import MAX_UNSENT
from rstreams.net._transport import SOCKET_READ_SIZE
from rstreams.wire import ClientHello, ConnectionConfig, FrameParser, Goodbye, encode
from testkit.bound import WAIT, Bound  # (the tests' bound of a wait: tests/, put on the path above)

CONFIG = ConnectionConfig(
    max_element_size=256 * 1024,
    max_reassembly_bytes=512 * 1024,
    max_parts_in_flight=8,
    max_subscriptions=64,
    max_string_length=64 * 1024,
)
"""The server's limits: large elements are possible (the large path starts at 16 KiB) and
the bounds the checks below hold it to stay small."""
SLACK = 64 * 1024
"""What the parser may hold beyond one element: the frames after it in the same read."""
NOT_VIOLATIONS = ("goodbye acknowledged", "handshake timeout", "idle timeout", "peer not reading")
"""How the server's goodbyes that answer no violation begin; every other one cites its section."""
HELLO = encode(ClientHello(extensions=tuple(sorted(wire_harness.ALL_EXTENSIONS))))
_Failure = tuple[str, str]
T = TypeVar("T")


class Drain(Subscriber[Any]):
    """The server's subscriber to each client's ``up``: takes elements one at a time, forever."""

    received = 0
    """Elements all of them received (a campaign's reach)."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(4)

    def on_next(self, element: Any) -> None:
        Drain.received += 1
        self.subscription.request(1)

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


def _echo(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(bytes.upper)


class Target:
    """The server under fuzz, a well-behaved client of it, and what the checks record."""

    settle = WAIT
    """Seconds (of the loop's own time, :class:`Bound`) after which a closed connection's tasks
    and count still there fail the input: a hang guard, not a time to meet (the check waits on
    their end, whatever the load)."""
    act_pause = 0.0
    """Seconds the raw client waits at an input's local action (one loop turn: the server is here)."""

    def __init__(self) -> None:
        self.failures: list[_Failure] = []
        self.connections: list[Connection] = []
        """The server's side of the fuzzed connections (those that sent a hello)."""
        self.legit_server: Connection | None = None
        """The server's side of the well-behaved client's connection."""
        self._next_is_legit = False
        self.messages = 0

    def _record(self, what: str, detail: object) -> None:
        self.failures.append((what, repr(detail)))

    # -- what a mode (fuzz_deployed.py) changes -------------------------------------------
    def address(self, directory: str) -> str:
        """The URL the server listens at."""
        return f"unix://{directory}/fuzz.sock"

    def serve_options(self, directory: str) -> dict[str, Any]:
        """``serve()``'s keyword arguments beyond the ones every mode shares."""
        return {"admission_share": None}

    def awaited(self) -> tuple[int, ...]:
        """The processes whose work the checks' waits await besides this loop (a server or client
        in another process): the time their threads waited for a CPU is not counted either."""
        return ()

    def legit_options(self) -> dict[str, Any]:
        """``connect()``'s keyword arguments for the well-behaved client."""
        return {}

    def prepare(self, head: int, chunks: list[wire_harness.Chunk]) -> list[wire_harness.Chunk]:
        """The reads the raw client writes: byte 0 bit 0 prepends a clientHello."""
        if head & 1:
            chunks.insert(0, HELLO)
        return chunks

    async def open_peer(self, head: int) -> tuple[Reader, Writer]:
        """A raw client's connection to the server."""
        return await asyncio.open_unix_connection(self.url[len("unix://") :])

    def parses_output(self, head: int) -> bool:
        """Whether what the server writes to this input's raw client is RS.io to check."""
        return True

    def expected(self, context: dict[str, Any]) -> bool:
        """Whether a report to the loop's exception handler is the mode's due (not a failure)."""
        return False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Target]:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(
            lambda _, context: None if self.expected(context) else self._record("loop exception", context)
        )
        previous = set_unhandled_error_hook(lambda error, where: self._record(f"unhandled in {where}", error))
        with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
            warnings.simplefilter("always", RuntimeWarning)  # (e.g. a coroutine never awaited)
            shown = warnings.showwarning
            warnings.showwarning = lambda message, category, *rest: (
                self._record("warning", f"{category.__name__}: {message}")
                if issubclass(category, RuntimeWarning)
                else shown(message, category, *rest)
            )
            options: dict[str, Any] = {
                "config": CONFIG,
                "handlers": {"log": self._message},
                "channels": {"echo": _echo},
                "on_connection": self._connected,
                "handshake_timeout": WAIT / 2,
                "high_water": 64 * 1024,
                "low_water": 16 * 1024,
                "unread_timeout": 1.0,
            }
            self.server = await serve(
                self.address(directory),
                {
                    "numbers": rstreams.range(3).map(lambda n: bytes([n])),
                    "big": rstreams.just(bytes(100_000)),
                },
                **(options | self.serve_options(directory)),
            )
            try:
                self.url = self.server.url
                self.legit = await self.connect_legit()
                yield self
            finally:
                with contextlib.suppress(Exception):
                    await within(self.legit.aclose(), "the well-behaved client to close")
                await within(self.server.aclose(), "the server to close")
                set_unhandled_error_hook(previous)

    async def connect_legit(self) -> Connection:
        """A new well-behaved client (the server's side of it is :attr:`legit_server`)."""
        self._next_is_legit = True
        conn = await within(connect(self.url, **self.legit_options()), "the well-behaved client to connect")
        await within(conn.request("numbers"), "its first request")  # (the server has made its side)
        return conn

    def _message(self, message: Any) -> None:
        self.messages += 1

    def _connected(self, conn: Connection) -> None:
        if self._next_is_legit:
            self._next_is_legit = False
            self.legit_server = conn
            return
        self.connections.append(conn)
        conn.publisher("up").subscribe(Drain())

    async def run(self, data: bytes) -> list[_Failure]:
        """One input against the running server; the failures it caused (none: all held)."""
        self.failures = []
        try:
            async with Bound(WAIT * 3, self.awaited()):
                await self._run(data)
        except TimeoutError:
            self._record("hang", "the input's run took longer than its bound")
        except AssertionError as error:
            self._record("invariant", error)
        return self.failures

    async def _run(self, data: bytes) -> None:
        head, self.byte1, chunks = wire_harness.parse_input(data) if data else (0, 0, [])
        known = len(self.connections)
        self.baseline = _tasks()  # (the legit client's, the caller's)
        await self.converse(head, self.prepare(head, chunks), known)
        for conn in self.connections[known:]:
            await within(conn.wait_closed(), "the server's side of the connection to close")
        del self.connections[known:]
        await self._check_left_nothing()
        await self._check_legit(len(data))

    async def converse(self, head: int, chunks: list[wire_harness.Chunk], known: int) -> None:
        """One raw client writes ``chunks`` and ends its output; the server must end the
        connection (a close, or a goodbye that waits for ours) and write well-formed RS.io."""
        reader, writer = await within(self.open_peer(head), "the raw client to connect", WAIT, self.awaited())
        self.peer = peer = _Peer(reader, self.parses_output(head))
        await self.write(peer, writer, chunks, known, lazy=bool(head & 2))
        peer.check()

    async def write(
        self, peer: _Peer, writer: Writer, chunks: list[wire_harness.Chunk], known: int, *, lazy: bool
    ) -> None:
        """Write ``chunks`` (one loop turn apart), end, wait for the server's end, close.
        ``lazy``: read nothing until the input is written (the server's replies back up)."""
        peer.answering = peer.answering or _says_goodbye(chunks)
        reading = asyncio.create_task(peer.read_all())
        if not lazy:
            peer.go.set()
        try:
            for chunk in chunks:
                if reading.done() or peer.said_goodbye.is_set():  # the server is done with us
                    break
                if chunk == wire_harness.ACT:
                    await asyncio.sleep(self.act_pause)
                    continue
                if chunk == wire_harness.EOF:
                    break
                assert isinstance(chunk, bytes)
                writer.write(chunk)
                await within(writer.drain(), "the server to read the input", WAIT, self.awaited())
                await asyncio.sleep(0)  # a turn: the server reads this chunk as one read
                self._check_holding(known)
            peer.go.set()
            if not reading.done() and not writer.can_write_eof():  # (TLS, WebSocket) we close
                peer.cut = True  # (and read no more)
            else:
                if not reading.done():
                    writer.write_eof()
                # The server closes, or says goodbye and waits for ours (or our close, §9.2): close.
                said = asyncio.create_task(peer.said_goodbye.wait())
                with contextlib.suppress(TimeoutError):
                    async with Bound(WAIT, self.awaited()):
                        await asyncio.wait({reading, said}, return_when=asyncio.FIRST_COMPLETED)
                said.cancel()
                ended = reading.done() or peer.said_goodbye.is_set()
                assert ended, "the server neither closed nor said goodbye"
        except OSError:  # (ConnectionError; TLS errors; a shutdown of a reset socket)
            pass  # the server closed first
        finally:
            peer.go.set()
            writer.close()
        awaited = self.awaited()
        await within(asyncio.shield(reading), "the server's output to end after our close", WAIT, awaited)
        with contextlib.suppress(Exception):
            await within(writer.wait_closed(), "the raw client's close", WAIT, awaited)

    def _check_holding(self, known: int) -> None:
        """What the server holds for the fuzzed connection stays within its limits."""
        for conn in self.connections[known:]:
            pump = conn._pump
            core = pump.outbox.core
            parser = core._parser
            assert parser.buffered <= CONFIG.max_element_size + SLACK, f"parser holds {parser.buffered} bytes"
            split = core._assembler.held[1]
            assert split <= CONFIG.max_reassembly_bytes, f"{split} bytes of split elements held"
            inputs = sum(map(len, core.input_parts._inputs.values()))
            assert inputs <= CONFIG.max_reassembly_bytes, f"{inputs} bytes of split channel input held"
            held = pump._held
            assert held is None or len(held) <= SOCKET_READ_SIZE, f"a held read of {len(held)} bytes"
            transport = pump.outbox.transport
            unsent = transport.get_write_buffer_size() if transport is not None else 0
            assert unsent <= MAX_UNSENT + SOCKET_READ_SIZE, f"{unsent} bytes unsent to the peer"

    async def _check_left_nothing(self) -> None:
        """Nothing of the fuzzed connection stays: its tasks end and the server stops counting
        it. The check waits on those very events (each task's end, each connection's close
        callbacks, which run after the server's own), never for a fixed time; only a hang
        reaches :attr:`settle`."""
        loop = asyncio.get_running_loop()

        async def settled() -> None:
            while True:
                left = _tasks() - self.baseline
                others = self.server.connections - {self.legit_server}
                if not left and not others:
                    return
                closed: asyncio.Future[None] = loop.create_future()
                for conn in others:
                    conn.add_close_callback(_resolver(closed))
                await asyncio.wait([*left, closed], return_when=asyncio.FIRST_COMPLETED)
                closed.cancel()

        bound = Bound(self.settle)
        try:
            async with bound:
                await settled()
        except TimeoutError:
            left = _tasks() - self.baseline
            assert not left, f"tasks left behind (after {bound.said()}): {left}"
            others = self.server.connections - {self.legit_server}
            assert not others, (
                f"the server still counts {len(others)} fuzzed connections (after {bound.said()})"
            )

    async def _check_legit(self, salt: int) -> None:
        legit = self.legit
        assert not legit.closed, "the well-behaved client's connection closed"
        got = await within(legit.request("numbers"), "the well-behaved client's request/response")
        assert got == b"\x00", f"request/response answered {got!r}"
        if salt % 8 == 0:
            before = self.messages
            await within(legit.send("log", b"still here"), "the well-behaved client's message")
            parts = [bytes(40_000), b"x"]  # larger than the split threshold: sent in parts
            channel = legit.channel("echo", rstreams.from_iterable(parts))
            out = await within(channel.collect(), "the well-behaved client's channel")
            assert out == [bytes(40_000), b"X"], "the channel's output"
            for _ in range(20):
                if self.messages > before:
                    break
                await asyncio.sleep(0)
            assert self.messages > before, "the message did not reach its handler"


class Reader(Protocol):
    """A raw client's reading side (an asyncio StreamReader, or a WebSocket's messages)."""

    async def read(self, n: int) -> bytes: ...


class Writer(Protocol):
    """A raw client's writing side (an asyncio StreamWriter, or a WebSocket's messages)."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def can_write_eof(self) -> bool: ...
    def write_eof(self) -> None: ...
    def close(self) -> None: ...
    async def wait_closed(self) -> None: ...


class _Peer:
    """The raw client's reading side: everything the server writes is parsed as RS.io (unless
    ``parses``: then it is only read, e.g. a WebSocket's frames or a failed TLS handshake's)."""

    def __init__(self, reader: Reader, parses: bool = True) -> None:
        self.reader = reader
        self.parses = parses
        self.received = 0
        """Bytes the server wrote (a resumed session's position)."""
        self.cut = False
        """Whether the output may end inside a frame (we closed first, a link broke, or the server
        reset the transport: a bounded wait of its own ended with its output unread, §9.1)."""
        self.answering = False
        """Whether our input holds a goodbye: the server's may be its answer, with any reason (§9.1)."""
        self.parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
        self.goodbyes: list[Goodbye] = []
        self.said_goodbye = asyncio.Event()
        self.go = asyncio.Event()
        """Set when reading starts (at once, or once a lazy peer has written its input)."""

    async def read_all(self) -> None:
        await self.go.wait()
        try:
            while data := await self.reader.read(1 << 16):
                self.received += len(data)
                if self.parses:
                    self.feed(data)
        except ConnectionResetError:
            # A lazy peer slowed by a loaded machine can leave the server's output unread past the
            # server's linger (2 s of wall time): the server then resets (as rstreams and the Java
            # binding abort), or its kernel does for our writes after its close. Only a clean end
            # of input inside a frame breaks the protocol (§9.3).
            self.cut = True
        except (ConnectionError, ssl.SSLError):
            pass

    def feed(self, data: bytes) -> None:
        """Parse what the server wrote."""
        for frame in self.parser.feed(data):
            self.frame(frame)

    def frame(self, frame: object) -> None:
        """One frame the server wrote."""
        if isinstance(frame, Goodbye):
            self.goodbyes.append(frame)
            self.said_goodbye.set()

    def check(self) -> None:
        """The server wrote well-formed RS.io, and a goodbye of its own says why."""
        assert self.parser.error is None, f"the server wrote malformed bytes: {self.parser.error}"
        assert self.cut or self.parser.eof() is None, "the server's output ends inside a frame"
        for goodbye in self.goodbyes:
            reason = goodbye.reason
            answer = self.answering and not reason  # (as the Java and JavaScript servers answer)
            assert answer or "§" in reason or reason.startswith(NOT_VIOLATIONS), (
                f"goodbye {reason!r} names no section"
            )
        assert len(self.goodbyes) <= 1, f"{len(self.goodbyes)} goodbyes"


def _says_goodbye(chunks: list[wire_harness.Chunk]) -> bool:
    """Whether the reads before the input's end hold a goodbye (among well-formed frames)."""
    end = chunks.index(wire_harness.EOF) if wire_harness.EOF in chunks else len(chunks)
    written = b"".join(chunk for chunk in chunks[:end] if isinstance(chunk, bytes))
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
    return any(isinstance(frame, Goodbye) for frame in parser.feed(written))


async def within(awaitable: Awaitable[T], what: str, limit: float = WAIT, children: Iterable[int] = ()) -> T:
    """``awaitable``'s result; a failed invariant naming ``what`` if it takes longer than
    ``limit`` (:class:`Bound`, over ``children`` too: a server or client in another process)."""
    bound = Bound(limit, children)
    try:
        async with bound:
            return await awaitable
    except TimeoutError:
        raise AssertionError(f"hang: waited {bound.said()} for {what}") from None


def _resolver(future: asyncio.Future[None]) -> Callable[[Connection], None]:
    """A close callback that resolves ``future`` (once, whichever connection closes first)."""

    def resolve(_: Connection) -> None:
        if not future.done():
            future.set_result(None)

    return resolve


def _tasks() -> set[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not current and not task.done()}


# -- drivers ---------------------------------------------------------------------------------------
def _seeds() -> list[bytes]:
    """Conversations to mutate: subscribes and demand, metadata windows, messages, channels with
    split input, the server's own subscription answered with large elements, goodbyes."""
    from rstreams.wire import OnNext, OnSubscribe, Request, Subscribe
    from rstreams.wire._channels import (
        CHANNEL,
        INPUT_COMPLETE,
        INPUT_NEXT,
        INPUT_NEXT_PART,
        encode_channel_message,
    )
    from rstreams.wire._messages import MESSAGE, encode_message
    from rstreams.wire.extensions import PING
    from rstreams.wire.frames import ExtensionMessage

    def chunked(*frames: bytes) -> bytes:
        return b"".join(bytes((len(f),)) + f + b"\x00" for f in frames)

    def ext(kind: int, payload: bytes) -> bytes:
        return encode(ExtensionMessage(type=kind, payload=payload))

    m, a, L = wire_harness.METADATA_OP, wire_harness.ACT, wire_harness.LARGE_OP
    serving = chunked(
        encode(Subscribe(publisher="numbers", subscriber=1, initial_demand=2)),
        encode(Request(subscriber=1, demand=5)),
        encode(Subscribe(publisher="big", subscriber=2, initial_demand=1)),
        encode(Goodbye(reason="bye")),
    )
    extensions = chunked(
        ext(MESSAGE, encode_message("log", b"hello")),
        ext(CHANNEL, encode_channel_message(CHANNEL, 3)),
        encode(Subscribe(publisher="echo", subscriber=3, initial_demand=4)),
        ext(INPUT_NEXT_PART, encode_channel_message(INPUT_NEXT_PART, 3, b"par")),
        ext(INPUT_NEXT, encode_channel_message(INPUT_NEXT, 3, b"t")),
        ext(INPUT_COMPLETE, encode_channel_message(INPUT_COMPLETE, 3)),
    )
    windows = bytes((m, 4, 1, a, m, 5, 2, a, m, 6, 3, a, m, 7, 0x84, a))
    accepted = encode(OnSubscribe(subscriber=1)) + encode(OnNext(subscriber=1, element=b"up"))
    large = bytes((len(accepted), *accepted, L, 1, 1, 5, a, L, 1, 0x41, 2, a))
    pings = bytes((wire_harness.REPEAT_OP, 255)) + chunked(ext(PING, bytes(8)))
    return [
        bytes((1, 0)) + serving,
        bytes((1, 0)) + extensions + bytes((a, a)),
        bytes((1, 0)) + windows,
        bytes((1, 0)) + large,
        bytes((1, 0)) + large + extensions + windows + serving,
        bytes((0, 0, 5)) + HELLO,  # the hello as data: cut by mutations
        bytes((1, 0)) + pings,  # a read of 4 081 pings
        bytes((1, 0, wire_harness.JOIN_OP, 4)) + large + serving,  # large and small frames in one read
        bytes((3, 0)) + pings * 8,  # a lazy peer: its pongs back up, the server stops reading it
    ]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    mutated: bytes = wire_harness._mutate(rng, data)
    return mutated


async def pure_loop(
    runs: int,
    seed: int,
    seconds: float | None,
    corpus: list[bytes],
    run_one: Callable[[bytes], Awaitable[list[Any]]],
    after_failure: Callable[[], Awaitable[None]] | None = None,
) -> tuple[int, int]:
    """The pure campaign both net drivers run: ``runs`` inputs (or as many as ``seconds``
    allow), each random bytes (one in five) or a mutation of the growing ``corpus``, handed to
    ``run_one``; returns how many ran and how many failed (each printed with its input in hex).
    ``after_failure`` runs after each failed input."""
    rng = random.Random(seed)
    failed = ran = 0
    start = time.monotonic()
    for ran in range(runs):  # (how many ran, after the loop)
        if seconds is not None and time.monotonic() - start > seconds:
            break
        if rng.random() < 0.2:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        else:
            data = _mutate(rng, rng.choice(corpus))
            if len(corpus) < 500 and rng.random() < 0.05:
                corpus.append(data)
        failures = await run_one(data)
        if failures:
            failed += 1
            print(f"input {ran} failed: {failures}: {data.hex()}", flush=True)
            if after_failure is not None:
                await after_failure()
        if ran and ran % 1000 == 0:
            print(f"{ran} inputs, {time.monotonic() - start:.0f} s, {failed} failed", flush=True)
    else:
        ran = runs
    return ran, failed


def command_line(
    campaign: Callable[[int, int, float | None], Coroutine[Any, Any, tuple[int, int]]],
    replay: Callable[[bytes], Coroutine[Any, Any, list[Any]]],
) -> None:
    """Both net drivers' command line: ``--pure N [SEED [SECONDS]]`` runs a campaign,
    ``--replay HEX`` one input."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--pure":
        args = [*sys.argv[2:], "0", "0"]
        start = time.monotonic()
        ran, failed = asyncio.run(campaign(int(args[0]), int(args[1]), float(args[2]) or None))
        print(f"done: {ran} inputs in {time.monotonic() - start:.0f} s, {failed} failed (crashes and hangs)")
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--replay":
        print(asyncio.run(replay(bytes.fromhex(sys.argv[2]))) or "no failure")
        return
    sys.exit(command_line.__doc__)


async def campaign(runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
    """``runs`` inputs (or as many as ``seconds`` allow) against one server; returns how many ran
    and how many failed (each printed with its input in hex)."""
    async with Target().running() as target:

        async def reconnect() -> None:
            if target.legit.closed:  # go on with a new well-behaved client
                target.legit = await target.connect_legit()

        return await pure_loop(runs, seed, seconds, _seeds(), target.run, reconnect)


async def replay(data: bytes) -> list[_Failure]:
    """One input against a fresh server: its failures."""
    async with Target().running() as target:
        return await target.run(data)


def main() -> None:
    """``--pure N [SEED [SECONDS]]``: a campaign; ``--replay HEX``: one input."""
    logging.getLogger("rstreams").setLevel(logging.ERROR)  # not "message dropped" for every mutated name
    command_line(campaign, replay)


if __name__ == "__main__":
    main()
