"""rsocket-py 0.4.20 over loopback TCP: the peer in every network scenario (peers' venv only).

Same shapes as ``net_rstreams.py`` and as /work/shared/notes/python-peers.md:

  stream   request-stream of ``count`` x ``size`` bytes; the client calls
           ``initial_request_n(window)`` and ``request(window/2)`` every ``window/2``
           elements. Server publisher: a minimal hand-written Publisher that emits inside
           ``request(n)`` (rsocket-py's best case; "sync" in the notes). ``read_buffer_size``
           256 KiB on both ends ("tuned" in the notes; the library default is 1 KiB).
  rr       ``count`` sequential request-response echoes of 8 bytes: rt/s, p50/p99.
  memory   the client requests 2**31-1 (rsocket-py's largest: 2**63-1 crashes its sender,
           see the notes) and reads 10x slower than it could; the server streams with the
           library's ``StreamFromGenerator``; its RSS is sampled from /proc. "10x slower":
           a tenth of the rate an unthrottled run (up to 5 s) measured just before.
  subs     ``fanout`` idle request-streams on one connection: each asks for 1 element
           (rsocket-py's REQUEST_STREAM carries initial demand, at least 1) of a server
           Publisher that never emits, so nothing flows. Server and client RSS per
           subscription, a ``count`` x 8 B stream beside them, then ``fanout`` streams at
           once sharing ``count`` elements (as ``net_rstreams.py --mode subs``).
  conns    ``fanout`` connections (server RSS per connection), then ``count`` elements
           shared among one stream per connection, all at once.

Usage: benchmarks/.peers-venv/bin/python benchmarks/net_rsocket.py client --mode stream
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import socket
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _netcommon as common
from reactivestreams.publisher import Publisher
from reactivestreams.subscriber import Subscriber
from reactivestreams.subscription import Subscription
from rsocket.helpers import create_future, single_transport_provider
from rsocket.payload import Payload
from rsocket.request_handler import BaseRequestHandler
from rsocket.rsocket_client import RSocketClient
from rsocket.rsocket_server import RSocketServer
from rsocket.streams.stream_from_generator import StreamFromGenerator
from rsocket.transports.tcp import TransportTCP

READ_BUFFER = 256 * 1024
MAX_N = 2**31 - 1


# ------------------------------------------------------------------------------ server
class CountingPublisher(Publisher, Subscription):  # type: ignore[misc]
    """Emits ``count`` copies of ``payload`` inside ``request(n)``, never more than requested."""

    def __init__(self, count: int, payload: Payload) -> None:
        self.remaining = count
        self.payload = payload
        self.demand = 0
        self.emitting = False
        self.finished = False
        self.subscriber: Any = None

    def subscribe(self, subscriber: Any) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        if self.finished:
            return
        self.demand += n
        if self.emitting:
            return
        self.emitting = True
        try:
            while self.demand > 0 and self.remaining > 0:
                self.demand -= 1
                self.remaining -= 1
                last = self.remaining == 0
                self.subscriber.on_next(self.payload, is_complete=last)  # rsocket-py folds completion in
                if last:
                    self.finished = True
        finally:
            self.emitting = False

    def cancel(self) -> None:
        self.finished = True


class IdlePublisher(Publisher, Subscription):  # type: ignore[misc]
    """Takes a subscriber and its demand, and never emits: an idle subscription."""

    def subscribe(self, subscriber: Any) -> None:
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class Handler(BaseRequestHandler):  # type: ignore[misc]
    async def request_response(self, payload: Payload) -> Any:
        return create_future(Payload(payload.data))

    async def request_stream(self, payload: Payload) -> Any:
        spec = json.loads(payload.data)
        if spec.get("publisher") == "idle":
            return IdlePublisher()
        body = os.urandom(spec["size"])
        count = spec["count"]
        if spec.get("publisher") == "gen":

            def generate() -> Any:
                for i in range(count):
                    yield Payload(body), i == count - 1

            return StreamFromGenerator(generate)
        return CountingPublisher(count, Payload(body))


async def serve_main() -> None:
    def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        RSocketServer(TransportTCP(reader, writer, read_buffer_size=READ_BUFFER), handler_factory=Handler)

    server = await asyncio.start_server(session, common.HOST, 0, limit=READ_BUFFER * 4)
    await common.serve_until_stdin_closes(server.sockets[0].getsockname()[1])


# ------------------------------------------------------------------------------ client
class WindowSubscriber(common.Settles, Subscriber):  # type: ignore[misc]
    def __init__(self, window: int, done: asyncio.Future[None]) -> None:
        self.half = max(1, window // 2)
        self.since = 0
        self.count = 0
        self.nbytes = 0
        self.done = done
        self.subscription: Any = None

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription  # the initial demand travels in REQUEST_STREAM

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        self.count += 1
        self.nbytes += len(value.data)
        if is_complete:
            self.on_complete()
            return
        self.since += 1
        if self.since == self.half:
            self.since = 0
            self.subscription.request(self.half)


class SlowSubscriber(common.SlowReader, Subscriber):  # type: ignore[misc]
    """Reads at ``rate`` elements/s (``0``: unthrottled) what it asked for up front."""

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription
        self.mark = time.perf_counter()

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        if is_complete:
            self.count += 1
            self.on_complete()
        elif self.tick():
            self.subscription.cancel()
            self.on_complete()


class IdleSubscriber(Subscriber):  # type: ignore[misc]
    """Keeps its subscription and nothing else: nothing is sent to it."""

    def __init__(self) -> None:
        self.subscription: Any = None

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        pass

    def on_error(self, exception: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


async def _connect(port: int) -> Any:
    reader, writer = await asyncio.open_connection(common.HOST, port, limit=READ_BUFFER * 4)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = RSocketClient(
        single_transport_provider(TransportTCP(reader, writer, read_buffer_size=READ_BUFFER))
    )
    await client.connect()
    return client


def _spec(count: int, size: int, publisher: str = "sync") -> Payload:
    return Payload(json.dumps({"count": count, "size": size, "publisher": publisher}).encode())


async def _stream(client: Any, count: int, size: int, window: int) -> WindowSubscriber:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    subscriber = WindowSubscriber(window, done)
    client.request_stream(_spec(count, size)).initial_request_n(window).subscribe(subscriber)
    await asyncio.wait_for(done, 600)
    return subscriber


async def mode_stream(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    await _stream(client, max(1, args.count // 10), args.size, args.window)
    gc.collect()
    start = time.perf_counter()
    got = await _stream(client, args.count, args.size, args.window)
    seconds = time.perf_counter() - start
    if got.count != args.count:
        raise AssertionError(f"received {got.count} of {args.count}")
    return {"rate": args.count / seconds, "mbps": got.nbytes / seconds / 1e6, "seconds": seconds}


async def mode_rr(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    body = b"12345678"

    async def echo() -> bytes:
        answer = await client.request_response(Payload(body))
        return answer.data  # type: ignore[no-any-return]

    return await common.round_trips(echo, body, args.count)


async def mode_memory(client: Any, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    def subscribe(reader: common.SlowReader, count: int) -> None:
        client.request_stream(_spec(count, args.size, "gen")).initial_request_n(MAX_N).subscribe(reader)

    warm = min(args.count, 100_000)
    return await common.slow_consumer_memory(SlowSubscriber, subscribe, warm, server_pid, args)


def _streams(port: int) -> common.Streams[Any]:
    async def stream(client: Any, count: int, window: int) -> int:
        return (await _stream(client, count, 8, window)).count

    return common.Streams(
        connect=lambda: _connect(port),
        stream=stream,
        barrier=lambda client: client.request_response(Payload(b"x")),
        close=lambda client: client.close(),
        warm_count=2_000,
    )


async def mode_subs(client: Any, port: int, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    def open_idle(client: Any) -> IdleSubscriber:
        subscriber = IdleSubscriber()
        client.request_stream(_spec(1, 8, "idle")).initial_request_n(1).subscribe(subscriber)
        return subscriber

    def cancel(subscriber: IdleSubscriber) -> None:
        subscriber.subscription.cancel()

    return await common.idle_subscriptions(_streams(port), client, open_idle, cancel, server_pid, args)


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    if args.mode == "conns":
        return await common.connections_memory(_streams(port), server_pid, args)
    client = await _connect(port)
    try:
        if args.mode == "stream":
            return await mode_stream(client, args)
        if args.mode == "rr":
            return await mode_rr(client, args)
        if args.mode == "subs":
            return await mode_subs(client, port, args, server_pid)
        return await mode_memory(client, args, server_pid)
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> None:
    parser = common.make_parser(__doc__, ["stream", "rr", "memory", "subs", "conns"])
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # rsocket-py logs every unknown-stream frame
    common.run_roles(args, __file__, serve_main, client_main, impl="rsocket-py", version=version("rsocket"))


if __name__ == "__main__":
    main()
