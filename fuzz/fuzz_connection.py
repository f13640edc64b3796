"""Fuzz the sans-I/O core: any bytes, any chunking, a well-behaved local application.

Invariant (STYLE-DETAILS.md §6, PROTOCOL.md §10): feeding a :class:`rstreams.wire.Connection`
arbitrary input yields valid events, or our :class:`RemoteProtocolError` reported through
``ConnectionClosed``/``StreamError``; nothing else raises, the connection ends in a sane
state, what it writes back is itself well-formed RS.io, and nothing hangs.

Input layout (so that the fuzzer reaches deep states): byte 0 chooses the side, small or
default limits, and whether a valid peer hello is prepended; then a sequence of chunks,
each a length byte and that many bytes. Length 0 means "let the local application act"
(answer subscribes, send elements within credit, request more), 255 means end of input.

Run for a long time with atheris (libFuzzer options after the script)::

    .venv/bin/python fuzz/fuzz_connection.py -atheris_runs=1000000 -timeout=10 fuzz/corpus

or without atheris, a pure-Python random/mutation loop::

    .venv/bin/python fuzz/fuzz_connection.py --pure 100000
"""

from __future__ import annotations

import random
import sys
import time

from rstreams.errors import RemoteProtocolError
from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    FrameParser,
    OnNext,
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

SMALL = ConnectionConfig(
    split_threshold=16,
    max_element_size=4096,
    max_reassembly_bytes=8192,
    max_parts_in_flight=4,
    max_subscriptions=8,
    max_name_length=64,
    max_string_length=256,
    max_extensions=8,
    max_closed_streams=16,
)
EVENT_TYPES = tuple(getattr(_events.Event, "__args__", ()))


def _act(conn: Connection, step: int, sizes: dict[int, int]) -> None:
    """A well-behaved local application: everything it sends is legal, so nothing may raise."""
    if conn.state is not ConnectionState.OPEN:
        return
    for sid, state in list(conn.subscriptions(publishing=True).items()):
        if state is StreamState.SUBSCRIBED:
            sizes[sid] = (step % 3) * 4
            conn.send(OnSubscribe(subscriber=sid, element_size=sizes[sid]))
        elif state is StreamState.ACTIVE:
            size = sizes[sid]
            for _ in range(min(conn.credit(sid), 3)):
                conn.send(OnNext(subscriber=sid, element=bytes(size) if size else b"x" * (step * 7 % 40)))
    for sid, state in list(conn.subscriptions(publishing=False).items()):
        if state in (StreamState.SUBSCRIBED, StreamState.ACTIVE):
            conn.send(Request(subscriber=sid, demand=1 + step % 5))


class _Output:
    """The peer's view of what we write: it must always parse (our own output is well-formed)."""

    def __init__(self) -> None:
        self.parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 20, max_extensions=1 << 10)

    def check(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            assert type(chunk) is bytes, f"data_to_send gave {type(chunk).__name__}"
            self.parser.feed(chunk)  # records elementSize from our onSubscribe itself
            assert self.parser.error is None, f"we wrote malformed bytes: {self.parser.error}"


def one_input(data: bytes) -> None:
    """Run one input; raises AssertionError (or anything unexpected) on a broken invariant."""
    if not data:
        return
    head = data[0]
    side = Side.SERVER if head & 1 else Side.CLIENT
    conn = Connection(side, SMALL if head & 2 else None)
    out = _Output()
    out.check(conn.data_to_send())
    chunks: list[bytes | None] = []
    if head & 4:
        chunks.append(encode(ClientHello() if side is Side.SERVER else ServerHello()))
    if side is Side.CLIENT and head & 8:
        for sid in (1, 2, 3):
            conn.send(Subscribe(publisher="fuzz", subscriber=sid, initial_demand=head >> 5))
    pos = 1
    while pos < len(data):
        length = data[pos]
        pos += 1
        if length == 0:
            chunks.append(None)
        elif length == 255:
            chunks.append(b"")
        else:
            chunks.append(data[pos : pos + length])
            pos += length
    closed = 0
    sizes: dict[int, int] = {}
    for step, chunk in enumerate(chunks):
        if _closed(conn):
            break
        if chunk is None:
            _act(conn, step, sizes)
        elif chunk == b"":
            conn.receive_eof()
        else:
            conn.receive_data(chunk)
        out.check(conn.data_to_send())
        for event in conn.events_received():
            assert isinstance(event, EVENT_TYPES), f"unexpected event {event!r}"
            assert closed == 0, f"{event!r} after ConnectionClosed"
            if isinstance(event, ConnectionClosed):
                closed += 1
                assert event.error is None or isinstance(event.error, RemoteProtocolError), event
            elif isinstance(event, StreamError):
                assert isinstance(event.error, RemoteProtocolError), event
        if closed:
            assert _closed(conn), f"ConnectionClosed but state {conn.state}"
    if not _closed(conn):
        conn.receive_eof()
        out.check(conn.data_to_send())
        events = conn.events_received()
        assert events and isinstance(events[-1], ConnectionClosed), f"no ConnectionClosed at EOF: {events!r}"
        assert _closed(conn)


def _closed(conn: Connection) -> bool:
    return conn.state is ConnectionState.CLOSED


# -- drivers ---------------------------------------------------------------------------------------
def _seeds() -> list[bytes]:
    """Valid conversations to mutate: hellos, subscribes, demand, elements, parts, goodbye."""
    from rstreams.wire import Cancel, Goodbye, OnComplete, OnNextLastPart, OnNextPart

    def chunked(*frames: bytes) -> bytes:
        return b"".join(bytes((len(f),)) + f + b"\x00" for f in frames)

    server_in = [
        encode(Subscribe(publisher="a", subscriber=1, initial_demand=2)),
        encode(Request(subscriber=1, demand=3)),
        encode(Cancel(subscriber=1)),
        encode(Goodbye(reason="bye")),
    ]
    client_in = [
        encode(OnSubscribe(subscriber=1)),
        encode(OnNext(subscriber=1, element=b"hi")),
        encode(OnNextPart(subscriber=2, element_id=0, data=b"ab")),
        encode(OnNextLastPart(subscriber=2, element_id=0, data=b"cd")),
        encode(OnComplete(subscriber=1)),
    ]
    return [bytes((0b111,)) + chunked(*server_in), bytes((0b1101110,)) + chunked(*client_in), b"\x05\x01\x0e"]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(5)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[pos % len(buf)] = rng.randrange(256)
        elif op == 1:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 2 and buf:
            del buf[pos : pos + rng.randint(1, 8)]
        elif op == 3:
            buf[pos:pos] = rng.choice([b"\xff" * 10, b"\x80\x00", b"\x00", b"\xff", b"\x7f"])
        else:
            buf += rng.choice(_seeds())[1:]
    return bytes(buf[:4096])


def pure(runs: int, seed: int = 0) -> int:
    """Random and mutated inputs without atheris; returns how many ran."""
    rng = random.Random(seed)
    corpus = _seeds()
    start = time.monotonic()
    for i in range(runs):
        if rng.random() < 0.3:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
        else:
            data = _mutate(rng, rng.choice(corpus))
            if len(corpus) < 2000 and rng.random() < 0.05:
                corpus.append(data)
        one_input(data)
        if i and i % 100_000 == 0:
            print(f"{i} inputs, {time.monotonic() - start:.0f} s, 0 crashes", flush=True)
    return runs


def main() -> None:
    """``--pure N``: the pure-Python loop; otherwise atheris with libFuzzer's arguments."""
    if len(sys.argv) >= 3 and sys.argv[1] == "--pure":
        runs = pure(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
        print(f"done: {runs} inputs, 0 crashes, 0 hangs")
        return
    import atheris  # type: ignore[import-untyped,unused-ignore]

    atheris.instrument_all()  # coverage feedback from every loaded module (rstreams.wire included)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
