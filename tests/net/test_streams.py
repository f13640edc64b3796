"""RS.io end to end over loopback: streams, multiplexing, both directions, errors, demand."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED, InvalidDemandError
from rstreams.errors import ConnectionBrokenError, ResourceClosedError
from rstreams.net import (
    INT64,
    JSON,
    Connection,
    ElementSizeError,
    RemoteStreamError,
    Server,
    connect,
    connect_pipe,
    fixed_size,
    serve,
    with_codec,
)
from rstreams.net._consuming import SubscriptionTable
from rstreams.wire import OnNext, OnNextBatch, OnNextPacked
from testkit.bound import within
from testkit.net import WAIT, CountingSource, listen_url, pump_of
from testkit.recording import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def numbers(params: dict[str, str]) -> rstreams.Flow[bytes]:
    """``numbers?n=5``: 0..n-1 as 4-byte big-endian elements."""
    n = int(params.get("n", "100"))
    return rstreams.range(n).map(lambda i: i.to_bytes(4, "big"))


def decode_all(items: list[bytes]) -> list[int]:
    return [int.from_bytes(item, "big") for item in items]


OFFER: dict[str, Any] = {
    "numbers": numbers,
    "greeting": rstreams.just(b"hello"),
    "echo/{word}": lambda params: rstreams.just(params["word"].encode()),
    "fails": lambda params: rstreams.error(RuntimeError("boom")),
}


async def _served(url: str, *, ssl_server: ssl.SSLContext | None = None, **kwargs: Any) -> Server:
    return await serve(url, OFFER, ssl=ssl_server, **kwargs)


# -- each transport carries a stream end to end ---------------------------------------------


@pytest.mark.parametrize("scheme", ["tcp", "tls", "unix", "ws", "wss"])
async def test_stream_over_each_transport(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """10 000 elements arrive in order, then on_complete, over every socket transport."""
    url = listen_url(scheme, tmp_path)
    secure = scheme in ("tls", "wss")
    async with await _served(url, ssl_server=server_ssl if secure else None) as server:
        conn = await connect(server.url, ssl=client_ssl if secure else None)
        items = await within(conn.publisher("numbers?n=10000").collect())
        assert decode_all(items) == list(range(10000))
        await within(conn.aclose())
        assert conn.closed


async def test_stream_over_pipes() -> None:
    """Two os.pipe pairs carry a stream (the shape of a subprocess's stdin/stdout)."""
    c_read, s_write = os.pipe()
    s_read, c_write = os.pipe()
    server_conn = await connect_pipe(s_read, s_write, server=True, publishers=OFFER)
    client = await connect_pipe(c_read, c_write)
    items = await within(client.publisher("numbers?n=5000").collect())
    assert decode_all(items) == list(range(5000))
    await within(client.aclose())
    await within(server_conn.wait_closed())


CHILD = """
import asyncio, rstreams
from rstreams.net import connect_pipe

async def main():
    offer = {"squares": lambda p: rstreams.range(int(p["n"])).map(lambda i: str(i * i).encode())}
    conn = await connect_pipe(0, 1, server=True, publishers=offer)
    await conn.wait_closed()

asyncio.run(main())
"""


async def test_stream_from_a_subprocess_over_stdin_stdout() -> None:
    """A child process serves on its stdin/stdout; the parent subscribes through the pipes (made
    here: the event loop's own subprocess pipes are its transports, whatever the loop)."""
    child_stdin, stdin_fd = os.pipe()
    stdout_fd, child_stdout = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=asyncio.subprocess.PIPE,
        )
    except BaseException:
        os.close(stdin_fd)
        os.close(stdout_fd)
        raise
    finally:
        os.close(child_stdin)  # the child's ends: the child has them now
        os.close(child_stdout)
    try:
        child = [proc.pid]
        conn = await within(connect_pipe(stdout_fd, stdin_fd, handshake_timeout=None), WAIT, child)
        items = await within(conn.publisher("squares?n=100").collect(), WAIT, child)
        assert [int(x) for x in items] == [i * i for i in range(100)]
        await within(conn.aclose(), WAIT, child)  # (a child serves: its own time too)
        assert proc.stderr is not None
        errors = await within(proc.stderr.read(), WAIT, child)
        assert await within(proc.wait(), WAIT, child) == 0
        assert errors == b""  # the child closed its pipes cleanly: no tracebacks from asyncio
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# -- multiplexing, both directions, request/response -----------------------------------------


async def test_many_subscriptions_multiplexed_on_one_connection() -> None:
    """50 concurrent subscriptions with different names share one connection, none mixed up."""
    async with await _served("tcp://127.0.0.1:0") as server, await connect(server.url) as conn:

        async def one(n: int) -> list[int]:
            return decode_all([x async for x in conn.publisher(f"numbers?n={n}")])

        results = await within(asyncio.gather(*(one(n) for n in range(50))))
        assert results == [list(range(n)) for n in range(50)]
        assert len(server.connections) == 1
        stats = conn.statistics()
        assert (stats.subscribing, stats.publishing, stats.closed) == (0, 0, False)


async def test_bidirectional_server_subscribes_to_client() -> None:
    """The client offers a publisher; the server subscribes to it through on_connection."""
    received: asyncio.Future[list[bytes]] = asyncio.get_running_loop().create_future()

    def on_connection(conn: Connection) -> None:
        async def pull() -> None:
            received.set_result(await conn.publisher("client/data").collect())

        asyncio.get_running_loop().create_task(pull())

    async with await serve("tcp://127.0.0.1:0", OFFER, on_connection=on_connection) as server:
        offer = {"client/data": rstreams.just(b"a", b"b", b"c")}
        async with await connect(server.url, publishers=offer) as conn:
            assert await within(received) == [b"a", b"b", b"c"]
            # and the other direction at the same time
            assert await within(conn.request("greeting")) == b"hello"


async def test_request_response() -> None:
    """``conn.request`` = subscribe with demand 1, one onNext, onComplete; many in sequence."""
    async with await _served("tcp://127.0.0.1:0") as server, await connect(server.url) as conn:
        for word in ("alpha", "beta", "gamma"):
            assert await within(conn.request(f"echo/{word}")) == word.encode()


async def test_request_of_an_empty_publisher_is_no_such_element() -> None:
    """A request whose publisher completes without an element fails with NoSuchElementError (a
    LookupError), as ``first()`` of an empty Flow does; the connection stays up."""
    offer: dict[str, Any] = {"nothing": rstreams.empty()}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        with pytest.raises(rstreams.NoSuchElementError, match="'nothing' completed without an element"):
            await within(conn.request("nothing"))
        assert not conn.closed


async def test_codec_json_both_sides() -> None:
    """With a codec, Python objects travel: encode on the serving side, decode on the subscriber."""
    offer = {"objects": rstreams.just({"a": 1}, [1, 2], "text")}
    async with (
        await serve("tcp://127.0.0.1:0", offer, codec=JSON) as server,
        await connect(server.url) as conn,
    ):
        assert await within(conn.publisher("objects", codec=JSON).collect()) == [{"a": 1}, [1, 2], "text"]


async def test_publisher_signalling_from_another_thread() -> None:
    """A local Publisher that emits on a worker thread is handed over in order."""
    offer = {
        "threaded": lambda p: rstreams.range(2000).map(lambda i: i.to_bytes(4, "big")).observe_on(_EXECUTOR)
    }
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        items = await within(conn.publisher("threaded").collect())
        assert decode_all(items) == list(range(2000))


_EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=1)


# -- errors ------------------------------------------------------------------------------------


async def test_unknown_publisher_is_a_stream_error_and_the_connection_stays_up() -> None:
    """An unknown name fails that subscription only, with a message naming it."""
    async with await _served("tcp://127.0.0.1:0") as server, await connect(server.url) as conn:
        with pytest.raises(RemoteStreamError, match="nope"):
            await within(conn.request("nope"))
        assert not conn.closed
        assert await within(conn.request("greeting")) == b"hello"


async def test_publisher_error_reaches_the_subscriber() -> None:
    """A remote onError arrives as RemoteStreamError with the publisher's message."""
    async with await _served("tcp://127.0.0.1:0") as server, await connect(server.url) as conn:
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=10)
        conn.publisher("fails").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_done))
        assert isinstance(subscriber.error, RemoteStreamError)
        assert "boom" in str(subscriber.error)


async def test_bad_bytes_get_a_goodbye_and_the_server_keeps_serving() -> None:
    """A raw socket sending garbage gets a goodbye stating a reason and EOF; others are unaffected."""
    async with await _served("tcp://127.0.0.1:0") as server:
        good = await connect(server.url)
        host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"\x01\x00\x00" + b"\xee\xff\x00garbage")  # clientHello v0, then an unknown type
        data = await within(reader.read())  # until EOF: the server closed
        writer.close()
        assert data.startswith(b"\x02\x00\x07\x01\x04\x05\x06\x07\x08\x09")  # serverHello v0, ids 1, 4-9
        assert b"\x03" in data[10:11]  # then goodbye (no goodbyeCode: the clientHello lists no extension)
        assert b"0xee" in data.lower() or b"unknown" in data.lower()
        assert await within(good.request("greeting")) == b"hello"
        await within(good.aclose())


async def test_connect_refused_is_connection_broken() -> None:
    """Nobody listening: ConnectionBrokenError with the OSError as cause."""
    server = await serve("tcp://127.0.0.1:0", OFFER)
    url = server.url
    await server.aclose()
    with pytest.raises(ConnectionBrokenError) as caught:
        await connect(url)
    assert isinstance(caught.value.__cause__, OSError)


async def test_server_close_ends_client_streams() -> None:
    """The server's goodbye ends open streams with ConnectionBrokenError."""
    source = CountingSource()
    server = await serve("tcp://127.0.0.1:0", {"endless": source})
    conn = await connect(server.url)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=1)
    conn.publisher("endless").subscribe(subscriber)
    await within(source.subscribed.wait())
    await within(server.aclose())
    await within(asyncio.to_thread(subscriber.await_done))
    assert isinstance(subscriber.error, ConnectionBrokenError)
    await within(conn.wait_closed())


async def test_aclose_ends_local_streams_with_resource_closed() -> None:
    """Closing our side fails our open subscribers with ResourceClosedError; later ones too."""
    async with await serve("tcp://127.0.0.1:0", {"endless": CountingSource()}) as server:
        conn = await connect(server.url)
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=1)
        conn.publisher("endless").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_items, 1))
        await within(conn.aclose())
        assert isinstance(subscriber.error, ResourceClosedError)
        late: RecordingSubscriber[bytes] = RecordingSubscriber(initial=1)
        conn.publisher("endless").subscribe(late)
        assert isinstance(late.error, ResourceClosedError)


# -- demand ---------------------------------------------------------------------------------------


async def test_rule_3_9_is_checked_locally() -> None:
    """request(0) fails the subscriber with InvalidDemandError; no request frame reaches the peer."""
    source = CountingSource()
    async with (
        await serve("tcp://127.0.0.1:0", {"endless": source}) as server,
        await connect(server.url) as conn,
    ):
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
        conn.publisher("endless").subscribe(subscriber)
        subscriber.request(0)
        assert isinstance(subscriber.error, InvalidDemandError)
        await within(source.cancelled.wait())  # the remote side was released with a cancel
        assert source.requests == []  # never asked for anything, so nothing illegal either
        assert await within(conn.request("endless")) == (1).to_bytes(8, "big")
        assert not conn.closed


async def test_cancel_from_the_client_stops_the_servers_publisher() -> None:
    """Leaving ``async for`` cancels; the serving side cancels its local Publisher."""
    source = CountingSource()
    async with (
        await serve("tcp://127.0.0.1:0", {"endless": source}) as server,
        await connect(server.url) as conn,
    ):
        taken = 0
        async for _ in conn.publisher("endless"):
            taken += 1
            if taken == 100:
                break
        await within(source.cancelled.wait())


async def test_demand_is_respected_end_to_end() -> None:
    """The server sends exactly what the subscriber requested, no more."""
    source = CountingSource()
    async with (
        await serve("tcp://127.0.0.1:0", {"endless": source}) as server,
        await connect(server.url) as conn,
    ):
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
        conn.publisher("endless").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_subscribed))
        subscriber.request(3)
        await within(asyncio.to_thread(subscriber.await_items, 3))
        assert await within(conn.request("endless")) == (1).to_bytes(8, "big")  # a round trip later
        assert len(subscriber.items) == 3
        assert source.pulled == 3 + 1


async def test_unbounded_demand_from_a_non_reading_peer_keeps_memory_bounded() -> None:
    """The peer requests 2**63-1 and stops reading: production stalls near the high-water mark."""
    source = CountingSource(size=1024)
    connections: list[Connection] = []
    high = 64 * 1024
    async with await serve(
        "tcp://127.0.0.1:0",
        {"endless": source},
        on_connection=connections.append,
        high_water=high,
        low_water=high // 4,
    ) as server:
        conn = await connect(server.url)
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
        conn.publisher("endless").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_subscribed))
        transport = pump_of(conn).outbox.transport
        assert transport is not None
        transport.pause_reading()  # the client's application is stuck: its socket fills up
        subscriber.request(UNBOUNDED)
        served = connections[0]
        paused = asyncio.Event()
        pause_writing = pump_of(served).pause_writing

        def spy() -> None:  # the transport calls this when the unsent bytes pass the high mark
            pause_writing()
            paused.set()

        pump_of(served).pause_writing = spy  # type: ignore[method-assign]
        await within(paused.wait())
        assert not served.statistics().writable
        stalled_at = source.pulled
        for _ in range(200):  # many loop turns: nothing more may be produced while not writable
            await asyncio.sleep(0)
        assert source.pulled == stalled_at
        # bounded: the kernel's socket buffers + the high-water mark + one batch, far below "unbounded"
        assert stalled_at * 1024 < 64 * 1024 * 1024
        transport.resume_reading()
        await source.wait_pulled(stalled_at + 1000)
        await within(conn.aclose())


# -- packed and split elements ---------------------------------------------------------------------


async def test_fixed_size_codec_sends_packed_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """A codec with element_size sends onNextPacked batches; the subscriber still gets single ints."""
    batches: list[int] = []  # elements per frame, as the client receives them
    table = SubscriptionTable
    packed, one, run = table.on_next_packed, table.on_next, table.on_next_batch

    def spy_packed(self: SubscriptionTable, event: OnNextPacked) -> None:
        batches.append(event.count)
        packed(self, event)

    def spy_one(self: SubscriptionTable, event: OnNext) -> None:
        batches.append(1)
        one(self, event)

    def spy_run(self: SubscriptionTable, event: OnNextBatch) -> None:
        batches.extend([1] * len(event.elements))
        run(self, event)

    monkeypatch.setattr(table, "on_next_packed", spy_packed)
    monkeypatch.setattr(table, "on_next", spy_one)
    monkeypatch.setattr(table, "on_next_batch", spy_run)
    offer = {"ints": with_codec(lambda p: rstreams.range(-500, 50_000), INT64)}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        items = await within(conn.publisher("ints", codec=INT64).collect())
        assert items == list(range(-500, 50_000))
        assert sum(batches) == len(items)
        assert max(batches) > 100  # many elements per frame


async def test_fixed_size_respects_small_demand() -> None:
    """Packing never sends more than requested: request(3) gets exactly 3, then 2 more."""
    offer = {"raw": with_codec(CountingSource(size=4), fixed_size(4))}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=3)
        conn.publisher("raw").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_items, 3))
        subscriber.request(2)
        await within(asyncio.to_thread(subscriber.await_items, 5))
        assert decode_all(subscriber.items) == [1, 2, 3, 4, 5]
        assert subscriber.error is None


async def test_wrong_size_element_fails_the_stream() -> None:
    """An element that breaks the codec's element_size ends that stream with an ElementSizeError
    (a ValueError) naming PROTOCOL.md §7, nothing else; so does a batch that is not a whole
    number of elements."""
    offer = {
        "bad": with_codec(rstreams.just(b"1234", b"12345"), fixed_size(4)),
        "batches": with_codec(rstreams.just([b"1234"], [b"1234", b"123"]), fixed_size(4), batched=True),
        "greeting": rstreams.just(b"hi"),
    }
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=10)
        conn.publisher("bad").subscribe(subscriber)
        await within(asyncio.to_thread(subscriber.await_done))
        assert subscriber.items == [b"1234"]
        assert isinstance(subscriber.error, RemoteStreamError)
        assert subscriber.error.message == (
            "ElementSizeError: the codec promised 4-byte elements (its element_size; PROTOCOL.md §7: "
            "every element of the subscription is exactly that), got 5 bytes"
        )
        with pytest.raises(RemoteStreamError) as raised:
            await within(conn.publisher("batches").collect())
        assert raised.value.message.startswith("ElementSizeError: the codec promised 4-byte elements")
        assert raised.value.message.endswith("got a batch of 7 bytes, not a whole number of them")
        assert await within(conn.request("greeting")) == b"hi"
    assert issubclass(ElementSizeError, ValueError) and ElementSizeError(5, 4).element_size == 4


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/"])
async def test_large_elements_are_split_and_joined_while_other_streams_flow(url: str) -> None:
    """1 MiB elements travel as parts; a small stream on the same connection is not starved."""
    big = [bytes([i]) * (1024 * 1024) for i in range(8)]
    offer = {"big": rstreams.from_iterable(big), "numbers": numbers}
    async with await serve(url, offer) as server, await connect(server.url) as conn:
        large, small = await within(
            asyncio.gather(conn.publisher("big").collect(), conn.publisher("numbers?n=1000").collect())
        )
        assert large == big
        assert decode_all(small) == list(range(1000))


class _Flooding:
    """A broken Publisher: three elements right after on_subscribe, with nothing requested."""

    def subscribe(self, subscriber: Any) -> None:
        subscriber.on_subscribe(_NoSubscription())
        for item in (b"a", b"b", b"c"):
            subscriber.on_next(item)


class _NoSubscription:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


async def test_local_publisher_breaking_rule_1_1_fails_only_its_stream() -> None:
    """Elements nobody asked for are not sent: the remote subscriber gets an error naming rule 1.1."""
    async with (
        await serve("tcp://127.0.0.1:0", {"flood": _Flooding(), **OFFER}) as server,
        await connect(server.url) as conn,
    ):
        with pytest.raises(RemoteStreamError, match=r"failed: RuleViolationError: rule 1\.1"):
            await within(conn.publisher("flood").collect())
        assert await within(conn.request("greeting")) == b"hello"


async def test_unix_socket_file_is_removed_on_close(tmp_path: Path) -> None:
    """Closing a unix:// server removes its socket file."""
    path = tmp_path / "rs.sock"
    server = await serve(f"unix://{path}", OFFER)
    assert path.exists()
    await within(server.aclose())
    assert not path.exists()


async def test_request_on_a_longer_stream_takes_one_element_and_cancels_the_rest() -> None:
    """request() on a publisher with more elements returns the first and cancels the subscription."""
    source = CountingSource()
    async with (
        await serve("tcp://127.0.0.1:0", {"endless": source}) as server,
        await connect(server.url) as conn,
    ):
        assert await within(conn.request("endless")) == (1).to_bytes(8, "big")
        await within(source.cancelled.wait())
        assert source.pulled == 1


async def test_undecodable_element_fails_the_subscriber_not_the_connection() -> None:
    """A codec that cannot decode an element ends that stream with the decoder's error."""
    offer = {"text": rstreams.just(b"not json"), "greeting": rstreams.just(b"hello")}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        with pytest.raises(ValueError, match="Expecting value"):
            await within(conn.request("text", codec=JSON))
        assert await within(conn.request("greeting")) == b"hello"


async def test_many_connections_at_once() -> None:
    """20 clients, each with its own connection and streams, served concurrently."""
    async with await _served("tcp://127.0.0.1:0") as server:

        async def client(i: int) -> list[int]:
            async with await connect(server.url) as conn:
                return decode_all(await conn.publisher(f"numbers?n={i * 10}").collect())

        results = await within(asyncio.gather(*(client(i) for i in range(20))))
        assert results == [list(range(i * 10)) for i in range(20)]
