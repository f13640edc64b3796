"""Fuzz the sans-I/O core: any bytes, any chunking, a well-behaved local application.

Invariant (STYLE-DETAILS.md §6, PROTOCOL.md §10): feeding a :class:`rstreams.wire.Connection`
arbitrary input yields valid events, or our :class:`RemoteProtocolError` reported through
``ConnectionClosed``/``StreamError`` with a reason that names its PROTOCOL.md section;
nothing else raises, the connection ends in a sane state, what it writes back is itself
well-formed RS.io, and nothing hangs. And the ways a driver may feed it do not change what
it sees: every input also runs through a *reference* connection fed the same bytes as one
plain ``bytes`` per segment (the data between two local actions), without a limit, without
``batch_on_next``; both must report the same events (elements compared byte for byte once the
segment is over, so a view into a reused read buffer would show) and write the same bytes.

Input layout (so that the fuzzer reaches deep states):

* byte 0: bit 0 the side (server), bit 1 small limits, bit 2 a valid peer hello first,
  bit 3 (client) three subscribes of our own first, bits 5-7 their initial demand;
* byte 1: bit 0 every registered extension negotiated (metadata windows, error codes, content
  types, channels, messages, input parts: the hello we prepend lists them all), bit 1
  ``batch_on_next`` (as the asyncio driver makes it), bit 2 reads handed over as views of two
  :class:`~rstreams.wire._parser.ReadBuffer` taking turns (as the socket transport does, so
  the parser may keep a view of a large element's start), bits 3-7 a read limit of that many
  times 8 bytes (the rest of each read fed again, as the driver's fair parts are; 0: none);
* then a sequence of chunks, each a length byte and that many bytes. Length 0 means "let the
  local application act" (answer subscribes, send elements within credit, request more), 255
  means end of input, 254 is followed by three bytes ``sid, code, cuts`` and stands for one to
  four large onNext frames (16 KiB and more, the parser's large-element path) cut into reads at
  points ``cuts`` seeds (inside the 5-byte header too), 253 by two bytes ``sid, variant``: a
  subscribeMetadata (a traceparent that changes with ``variant``, other entries that do not)
  and its subscribe, the parser's remembered-window path; 252 by a byte ``r``: the next read's
  bytes ``1 + 16 r`` times over in that read (reads of many small messages, past the driver's
  READ_TURN: its fair parts and held rests), 251 by a byte ``n``: the next ``n`` reads join the
  one before (large frames and small ones in one read); neither makes a read above 256 KiB.

Run for a long time with atheris (libFuzzer options after the script)::

    .venv/bin/python fuzz/fuzz_connection.py -atheris_runs=1000000 -timeout=10 fuzz/corpus

or without atheris, a pure-Python random/mutation loop::

    .venv/bin/python fuzz/fuzz_connection.py --pure 100000
"""

from __future__ import annotations

import dataclasses
import random
import signal
import sys
import time
from collections.abc import Sequence

from rstreams.errors import RemoteProtocolError
from rstreams.wire import (
    Cancel,
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    FrameParser,
    Metadata,
    OnNext,
    OnNextBatch,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    StreamError,
    StreamState,
    Subscribe,
    encode,
)
from rstreams.wire import events as _events
from rstreams.wire._metadata import encode_entries, encode_metadata
from rstreams.wire._parser import ReadBuffer
from rstreams.wire.extensions import REGISTERED, SUBSCRIBE_METADATA
from rstreams.wire.frames import ExtensionMessage

ALL_EXTENSIONS = frozenset(ext.id for ext in REGISTERED)
SMALL = ConnectionConfig(
    split_threshold=16,
    max_element_size=4096,
    max_reassembly_bytes=8192,
    max_parts_in_flight=4,
    max_subscriptions=8,
    max_name_length=64,
    max_string_length=256,
    max_extensions=16,
    max_closed_streams=16,
    max_metadata_bytes=200,
    max_metadata_entries=4,
)
EVENT_TYPES = tuple(getattr(_events.Event, "__args__", ()))
LARGE = 16 * 1024
"""The smallest element the parser's large-element path takes (``_parser._PENDING_MIN``)."""
ACT, EOF, LARGE_OP, METADATA_OP, REPEAT_OP, JOIN_OP = 0, 255, 254, 253, 252, 251
MAX_READ = 256 * 1024
"""The longest read a repeat or a join makes."""


def _act(conn: Connection, step: int, sizes: dict[int, int]) -> None:
    """A well-behaved local application: everything it sends is legal, so nothing may raise.
    ``step`` varies what it does: the general ``send`` or the fast paths, answers in one go,
    completions, refusals, cancels, new subscribes (with metadata when that is active)."""
    if conn.state is not ConnectionState.OPEN:
        return
    way = step % 4
    for sid, state in list(conn.subscriptions(publishing=True).items()):
        if state is StreamState.SUBSCRIBED:
            sizes[sid] = (step % 3) * 4
            if way == 0 and not sizes[sid] and conn.send_answer(sid, 0, None, b"answer"):
                continue
            if way == 1:
                conn.send_on_subscribe(sid, sizes[sid], "text/plain")
            else:
                conn.send(OnSubscribe(subscriber=sid, element_size=sizes[sid]))
        elif state is StreamState.ACTIVE:
            size = sizes.get(sid, 0)
            count = min(conn.credit(sid), 3)
            elements = [bytes(size) if size else b"x" * ((step + i) * 7 % 40) for i in range(count)]
            if way == 1 and elements:
                conn.on_next_many(sid, elements)
            for element in elements if way != 1 else ():
                if way == 2:
                    conn.on_next(sid, element)
                else:
                    conn.send(OnNext(subscriber=sid, element=element))
            if step % 7 == 3:
                conn.send_on_complete(sid)
            elif step % 11 == 5:
                conn.send_error(sid, "fuzz refuses", 1 if step % 2 else None)
    for sid, state in list(conn.subscriptions(publishing=False).items()):
        if state is StreamState.ACTIVE and step % 13 == 6:
            conn.send(Cancel(subscriber=sid))
        elif state in (StreamState.SUBSCRIBED, StreamState.ACTIVE):
            if way == 2:
                conn.request(sid, 1 + step % 5)
            else:
                conn.send(Request(subscriber=sid, demand=1 + step % 5))
    sid = 10 + step % 5
    if step % 3 == 2 and conn.side is Side.CLIENT and not conn.id_in_use(sid):
        conn.send_subscribe(
            "fuzz", sid, step % 4, encode_entries({"traceparent": f"00-{step:032x}-{sid:016x}-01"})
        )


class _Output:
    """The peer's view of what we write: it must always parse (our own output is well-formed)."""

    def __init__(self) -> None:
        self.parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)
        self.written = bytearray()

    def check(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            assert type(chunk) is bytes, f"data_to_send gave {type(chunk).__name__}"
            self.written += chunk
            self.parser.feed(chunk)  # records elementSize from our onSubscribe itself
            assert self.parser.error is None, f"we wrote malformed bytes: {self.parser.error}"


# -- the input ---------------------------------------------------------------------------------
def _large(sid: int, code: int) -> bytes:
    """One to four large onNext frames for ``sid`` (equal ones: the remembered header)."""
    length = LARGE + (code & 0x3F) * 517
    frame = encode(OnNext(subscriber=sid, element=bytes([code]) * length))
    return frame * (1 + (code >> 6))


def _cuts(data: bytes, seed: int) -> list[bytes]:
    """``data`` cut into one to five reads, at points ``seed`` chooses (header bytes included)."""
    rng = random.Random(seed)
    points = sorted({rng.choice((1, 2, 3, 4, 5, 6)) if rng.random() < 0.3 else rng.randrange(1, len(data))
                     for _ in range(seed & 3)})  # fmt: skip
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def _metadata(sid: int, variant: int) -> bytes:
    """A subscribeMetadata whose traceparent changes with ``variant``, and its subscribe."""
    trace = f"00-{variant:032x}-{variant * 7:016x}-01"
    entries: dict[str, str] = {"traceparent": trace, "tenant": "fuzz"}
    if variant & 0x80:
        entries["x-extra"] = "e" * (variant & 0x0F)
    payload = encode_metadata(sid, entries)
    return encode(ExtensionMessage(type=SUBSCRIBE_METADATA, payload=payload)) + encode(
        Subscribe(publisher="fuzz", subscriber=sid, initial_demand=1 + (variant & 3))
    )


Chunk = bytes | int  # bytes: one read; ACT or EOF


def parse_input(data: bytes) -> tuple[int, int, list[Chunk]]:
    """``(head, mode, chunks)`` of an input (see the module docstring)."""
    head = data[0]
    mode = data[1] if len(data) > 1 else 0
    chunks: list[Chunk] = []
    repeat = 1  # how many times the next read's bytes come in it
    joining = 0  # how many more reads join the last one
    pos = 2
    while pos < len(data):
        length = data[pos]
        pos += 1
        reads: list[bytes] = []
        if length in (ACT, EOF):
            chunks.append(length)
            joining = 0
        elif length == LARGE_OP:
            sid, code, cuts = (data[pos : pos + 3] + b"\x01\x00\x00")[:3]
            pos += 3
            reads = _cuts(_large(sid & 0x7F or 1, code), cuts)
        elif length == METADATA_OP:
            sid, variant = (data[pos : pos + 2] + b"\x01\x00")[:2]
            pos += 2
            reads = [_metadata(sid & 0x7F, variant)]
        elif length in (REPEAT_OP, JOIN_OP):
            count = data[pos] if pos < len(data) else 1
            pos += 1
            if length == REPEAT_OP:
                repeat = 1 + count * 16
            else:
                joining = count
        elif pos < len(data):  # (a length byte last: no read)
            reads = [data[pos : pos + length]]
            pos += length
        for read in reads:
            if repeat > 1:
                read = read * min(repeat, MAX_READ // len(read))
                repeat = 1
            last = chunks[-1] if chunks else None
            if joining and isinstance(last, bytes) and len(last) + len(read) <= MAX_READ:
                chunks[-1] = last + read
                joining -= 1
            else:
                chunks.append(read)
    return head, mode, chunks


# -- one run -------------------------------------------------------------------------------------
class _Reads:
    """Reads handed to the core as a driver hands them: bytes, or views of two ReadBuffers
    taking turns (the socket transport's), with or without a limit (the rest fed again)."""

    def __init__(self, buffers: bool, limit: int) -> None:
        self.buffers = [ReadBuffer(256), ReadBuffer(256)] if buffers else None
        self.limit = limit

    def feed(self, conn: Connection, chunk: bytes) -> list[object]:
        """Feed one read; returns the events of the parts before the last (a limit cuts it)."""
        data: bytes | memoryview = chunk
        if self.buffers is not None:
            buffer = self.buffers[0]
            if buffer.lent:  # the parser keeps a view of it: the next read goes into the other
                buffer.lent = False
                self.buffers.reverse()
                buffer = self.buffers[0]
            if len(buffer) < len(chunk):
                buffer = self.buffers[0] = ReadBuffer(len(chunk))
            buffer[: len(chunk)] = chunk
            data = memoryview(buffer)[: len(chunk)]
        earlier: list[object] = []
        while True:
            taken = conn.receive_data(data, self.limit)
            if conn.state is ConnectionState.CLOSED:
                return earlier
            assert 0 < taken <= len(data), f"took {taken} of {len(data)} bytes"
            if taken == len(data):
                return earlier
            assert self.limit, f"took {taken} of {len(data)} bytes without a limit"
            earlier += conn.events_received()
            data = data[taken:]


class _Run:
    """One connection, fed and acting, with everything it reported and wrote."""

    def __init__(self, head: int, mode: int, *, reference: bool) -> None:
        self.side = Side.SERVER if head & 1 else Side.CLIENT
        config = SMALL if head & 2 else ConnectionConfig()
        if mode & 1:
            config = dataclasses.replace(config, extensions=ALL_EXTENSIONS)
        self.conn = Connection(self.side, config, batch_on_next=bool(mode & 2) and not reference)
        self.reads = _Reads(bool(mode & 4) and not reference, 0 if reference else (mode >> 3) * 8)
        self.out = _Output()
        self.out.check(self.conn.data_to_send())
        self.events: list[object] = []
        self.sizes: dict[int, int] = {}
        if self.side is Side.CLIENT and head & 8:
            for sid in (1, 2, 3):
                self.conn.send(Subscribe(publisher="fuzz", subscriber=sid, initial_demand=head >> 5))
            self.out.check(self.conn.data_to_send())

    def closed(self) -> bool:
        return self.conn.state is ConnectionState.CLOSED

    def step(self, chunk: Chunk, step: int) -> None:
        conn = self.conn
        earlier: list[object] = []
        if chunk == ACT:
            _act(conn, step, self.sizes)
        elif chunk == EOF:
            conn.receive_eof()
        else:
            assert isinstance(chunk, bytes)
            earlier = self.reads.feed(conn, chunk)
        self.out.check(conn.data_to_send())
        self._take(earlier + conn.events_received())

    def _take(self, events: Sequence[object]) -> None:
        for event in events:
            assert isinstance(event, EVENT_TYPES), f"unexpected event {event!r}"
            assert not self.events or not isinstance(self.events[-1], ConnectionClosed), (
                f"{event!r} after ConnectionClosed"
            )
            if isinstance(event, ConnectionClosed):
                assert event.error is None or isinstance(event.error, RemoteProtocolError), event
                assert event.error is None or "§" in _reason(event.error), f"no section in {event.error!r}"
                assert self.closed(), f"ConnectionClosed but state {self.conn.state}"
            elif isinstance(event, StreamError):
                assert isinstance(event.error, RemoteProtocolError), event
                assert "§" in _reason(event.error), f"no section in {event.error!r}"
            elif isinstance(event, OnNextBatch):
                assert event.elements, "an empty OnNextBatch"
                assert all(type(e) is bytes for e in event.elements), "an element that is not bytes"
            elif isinstance(event, OnNext):
                assert type(event.element) is bytes, f"an element of type {type(event.element).__name__}"
            self.events.append(event)

    def end(self) -> None:
        if not self.closed():
            self.conn.receive_eof()
            self.out.check(self.conn.data_to_send())
            events = self.conn.events_received()
            assert events and isinstance(events[-1], ConnectionClosed), (
                f"no ConnectionClosed at EOF: {events!r}"
            )
            self._take(events)
        assert self.closed()

    def seen(self) -> list[object]:
        """The events, comparable: batches as their elements, errors as their class and section."""
        seen: list[object] = []
        for event in self.events:
            if isinstance(event, OnNextBatch):
                seen += [("OnNext", event.subscriber, bytes(e)) for e in event.elements]
            elif isinstance(event, OnNext):
                seen.append(("OnNext", event.subscriber, bytes(event.element)))
            elif isinstance(event, ConnectionClosed | StreamError):
                error = event.error
                what = None if error is None else (type(error).__name__, getattr(error, "cited", None))
                seen.append((type(event).__name__, what, getattr(event, "subscriber", None)))
            elif isinstance(event, Metadata):
                seen.append(("Metadata", dict(event)))
            else:
                seen.append(repr(event))
        return seen


def _reason(error: RemoteProtocolError) -> str:
    return str(getattr(error, "reason", error))


def one_input(data: bytes) -> None:
    """Run one input; raises AssertionError (or anything unexpected) on a broken invariant."""
    if not data:
        return
    head, mode, chunks = parse_input(data)
    if head & 4:
        ids = tuple(sorted(ALL_EXTENSIONS)) if mode & 1 else ()
        side_hello = ClientHello(extensions=ids) if head & 1 else ServerHello(extensions=ids)
        chunks.insert(0, encode(side_hello))
    run = _Run(head, mode, reference=False)
    ref = _Run(head, mode, reference=True)
    segment: list[bytes] = []  # the reads since the last local action, fed to ``ref`` whole
    for step, chunk in enumerate(chunks):
        if run.closed():
            break
        if isinstance(chunk, bytes):
            run.step(chunk, step)
            segment.append(chunk)
            if run.closed():
                _compare(ref, segment, run)
            continue
        _compare(ref, segment, run)
        segment = []
        run.step(chunk, step)
        ref.step(chunk, step)
    if not run.closed():
        _compare(ref, segment, run)
    run.end()
    ref.end()
    assert ref.seen() == run.seen(), _differ(ref, run)
    assert ref.out.written == run.out.written, "the same input, other bytes written"


def _compare(ref: _Run, segment: list[bytes], run: _Run) -> None:
    """Feed ``ref`` the segment whole and compare what both saw so far."""
    if segment and not ref.closed():
        ref.step(b"".join(segment), -1)
    assert ref.seen() == run.seen(), _differ(ref, run)
    assert ref.closed() == run.closed(), f"closed: reference {ref.closed()}, fed in reads {run.closed()}"


def _differ(ref: _Run, run: _Run) -> str:
    a, b = ref.seen(), run.seen()
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"fed whole and fed in reads differ at event {at}: {a[at : at + 3]!r} vs {b[at : at + 3]!r}"


# -- drivers ---------------------------------------------------------------------------------------
MALFORMED_SEED = b"\x05\x00\x01\x0e"
"""A server's conversation that breaks at once (an unknown message type): a seed for the
mutations, beside the valid ones of :func:`_seeds`."""


def _seeds() -> list[bytes]:
    """Valid conversations to mutate: hellos, subscribes, demand, elements, parts, goodbye; with
    the extensions negotiated, metadata windows, error codes, content types, messages, channels
    and input parts; large elements cut across reads."""
    from rstreams.wire import Goodbye, OnComplete, OnError, OnNextLastPart, OnNextPart
    from rstreams.wire._channels import (
        CHANNEL,
        INPUT_NEXT,
        INPUT_NEXT_PART,
        INPUT_REQUEST,
        encode_channel_message,
    )
    from rstreams.wire._codes import encode_error_code, encode_goodbye_code
    from rstreams.wire._content import encode_content_type
    from rstreams.wire._messages import MESSAGE, encode_message
    from rstreams.wire.extensions import CONTENT_TYPE, ERROR_CODE, GOODBYE_CODE, PING

    def chunked(*frames: bytes) -> bytes:
        return b"".join(bytes((len(f),)) + f + b"\x00" for f in frames)

    def ext(kind: int, payload: bytes) -> bytes:
        return encode(ExtensionMessage(type=kind, payload=payload))

    server_in = [
        encode(Subscribe(publisher="a", subscriber=1, initial_demand=2)),
        encode(Request(subscriber=1, demand=3)),
        encode(Cancel(subscriber=1)),
        encode(Goodbye(reason="bye")),
    ]
    client_in = [
        encode(OnSubscribe(subscriber=1)),
        encode(OnSubscribe(subscriber=2)),
        encode(OnNext(subscriber=1, element=b"hi")),
        encode(OnNextPart(subscriber=2, element_id=1, data=b"ef")),
        encode(OnNextPart(subscriber=2, element_id=0, data=b"ab")),
        encode(OnNextLastPart(subscriber=2, element_id=0, data=b"cd")),
        encode(OnNextLastPart(subscriber=2, element_id=1, data=b"gh")),
        encode(OnComplete(subscriber=1)),
        encode(OnSubscribe(subscriber=3, element_size=4)),
        encode(OnNext(subscriber=3, element=b"wxyz"), element_size=4),
    ]
    server_ext = [
        ext(PING, bytes(8)),
        ext(
            SUBSCRIBE_METADATA, encode_metadata(1, {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
        ),
        encode(Subscribe(publisher="a", subscriber=1, initial_demand=2)),
        ext(MESSAGE, encode_message("log", b"body")),
        ext(CHANNEL, encode_channel_message(CHANNEL, 2)),
        encode(Subscribe(publisher="ch", subscriber=2, initial_demand=1)),
        ext(INPUT_NEXT_PART, encode_channel_message(INPUT_NEXT_PART, 2, b"part")),
        ext(INPUT_NEXT, encode_channel_message(INPUT_NEXT, 2, b"last")),
        ext(GOODBYE_CODE, encode_goodbye_code(0)),
        encode(Goodbye(reason="bye")),
    ]
    client_ext = [
        ext(CONTENT_TYPE, encode_content_type(1, "application/json")),
        encode(OnSubscribe(subscriber=1)),
        ext(INPUT_REQUEST, encode_channel_message(INPUT_REQUEST, 1, 2)),
        encode(OnNext(subscriber=1, element=b"{}")),
        ext(ERROR_CODE, encode_error_code(1, 3)),
        encode(OnError(subscriber=1, error="boom")),
    ]
    windows = b"".join(
        bytes((METADATA_OP, sid, variant)) + b"\x00" for sid, variant in ((1, 1), (2, 2), (3, 3))
    )
    accepted = encode(OnSubscribe(subscriber=1)) + encode(OnSubscribe(subscriber=2))
    large = bytes((len(accepted), *accepted, LARGE_OP, 1, 1, 7, ACT, LARGE_OP, 1, 0x41, 2, LARGE_OP, 2, 3, 3))
    return [
        bytes((0b111, 0)) + chunked(*server_in),
        bytes((0b1101110, 0)) + chunked(*client_in),
        bytes((0b101, 0b00011111)) + chunked(*server_ext),
        bytes((0b01101100, 0b00001111)) + chunked(*client_ext),
        bytes((0b101, 0b00000001)) + windows + chunked(server_ext[-1]),
        bytes((0b01101100, 0b00000110)) + large,
        bytes((0b01101100, 0b00100111)) + large + bytes((ACT, EOF)),
        bytes((0b01101100, 0b00011110)) + bytes((JOIN_OP, 3)) + large,
        bytes((0b111, 0b00100000)) + chunked(server_in[0]) + bytes((REPEAT_OP, 250)) + chunked(server_in[1]),
        bytes((0b101, 0b00111111)) + bytes((REPEAT_OP, 200)) + chunked(server_ext[0]),
    ]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(6)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[pos % len(buf)] = rng.randrange(256)
        elif op == 1:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 2 and buf:
            del buf[pos : pos + rng.randint(1, 8)]
        elif op == 3:
            buf[pos:pos] = rng.choice([b"\xff" * 10, b"\x80\x00", b"\x00", b"\xff", b"\x7f"])
        elif op == 4:
            buf[pos:pos] = rng.choice(
                [bytes((LARGE_OP, rng.randrange(4), rng.randrange(256), rng.randrange(256))),
                 bytes((METADATA_OP, rng.randrange(4), rng.randrange(256))),
                 bytes((REPEAT_OP, rng.randrange(256))),
                 bytes((JOIN_OP, rng.randrange(1, 8)))]
            )  # fmt: skip
        else:
            buf += rng.choice(_seeds())[2:]
    if len(buf) > 1 and rng.random() < 0.2:
        buf[1] = rng.randrange(256)  # another way of feeding the same conversation
    return bytes(buf[:4096])


HANG = 10
"""Seconds one input may take in the pure loop before it counts as a hang (atheris: -timeout)."""


def _hang(signum: int, frame: object) -> None:
    raise TimeoutError(f"one input ran for more than {HANG} s")


def pure(
    runs: int, seed: int = 0, *, keep_going: bool = False, seconds: float | None = None
) -> tuple[int, int]:
    """Random and mutated inputs without atheris, ``runs`` of them or as many as ``seconds``
    allow; returns how many ran and how many failed (crashes and hangs, each printed with its
    input in hex; the first one raises unless ``keep_going``)."""
    rng = random.Random(seed)
    corpus = [*_seeds(), MALFORMED_SEED]
    start = time.monotonic()
    failed = 0
    alarm = keep_going and hasattr(signal, "SIGALRM")
    if alarm:
        signal.signal(signal.SIGALRM, _hang)
    i = 0
    for i in range(runs):  # (how many ran, after the loop)
        if seconds is not None and time.monotonic() - start > seconds:
            break
        if rng.random() < 0.3:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        else:
            data = _mutate(rng, rng.choice(corpus))
            if len(corpus) < 2000 and rng.random() < 0.05:
                corpus.append(data)
        try:
            if alarm:
                signal.alarm(HANG)
            one_input(data)
        except Exception as error:
            failed += 1
            print(f"input {i} failed ({type(error).__name__}: {error}): {data.hex()}", flush=True)
            if not keep_going:
                raise
        finally:
            if alarm:
                signal.alarm(0)
        if i and i % 100_000 == 0:
            print(f"{i} inputs, {time.monotonic() - start:.0f} s, {failed} failed", flush=True)
    else:
        i = runs
    return i, failed


def main() -> None:
    """``--pure N [SEED [SECONDS]]``: the pure-Python loop (N inputs, or fewer if SECONDS pass
    first); ``--replay HEX``: one input; otherwise atheris with libFuzzer's arguments."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--pure":
        args = [*sys.argv[2:], "0", "0"]
        start = time.monotonic()
        ran, failed = pure(int(args[0]), int(args[1]), keep_going=True, seconds=float(args[2]) or None)
        print(f"done: {ran} inputs in {time.monotonic() - start:.0f} s, {failed} failed (crashes and hangs)")
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--replay":
        one_input(bytes.fromhex(sys.argv[2]))
        print("no failure")
        return
    import atheris

    atheris.instrument_all()  # coverage feedback from every loaded module (rstreams.wire included)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
