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

from _netcommon import (
    HOST,
    RssSampler,
    add_common_args,
    announce_port,
    emit,
    install_loop,
    percentiles,
    pin_self,
    rss_kib,
    run_with_timeout,
    server_child,
    wait_for_stdin_eof,
)
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


class Handler(BaseRequestHandler):  # type: ignore[misc]
    async def request_response(self, payload: Payload) -> Any:
        return create_future(Payload(payload.data))

    async def request_stream(self, payload: Payload) -> Any:
        spec = json.loads(payload.data)
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

    server = await asyncio.start_server(session, HOST, 0, limit=READ_BUFFER * 4)
    announce_port(server.sockets[0].getsockname()[1])
    wait_for_stdin_eof()
    await asyncio.Event().wait()


# ------------------------------------------------------------------------------ client
class WindowSubscriber(Subscriber):  # type: ignore[misc]
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

    def on_error(self, exception: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exception)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class SlowSubscriber(Subscriber):  # type: ignore[misc]
    """Reads at ``rate`` elements/s (``0``: unthrottled): every 64 elements it sleeps until it is
    back on schedule, blocking the loop, so the socket is read no faster than that."""

    def __init__(self, rate: float, deadline: float, done: asyncio.Future[None]) -> None:
        self.rate = rate
        self.deadline = deadline
        self.done = done
        self.count = 0
        self.slept = 0.0
        self.mark = time.perf_counter()
        self.subscription: Any = None

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription
        self.mark = time.perf_counter()

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        self.count += 1
        if is_complete:
            self.on_complete()
            return
        if self.count % 64:
            return
        now = time.perf_counter()
        if now >= self.deadline:
            self.subscription.cancel()
            self.on_complete()
            return
        if self.rate > 0:
            pause = self.mark + self.count / self.rate - now
            if pause > 0:
                time.sleep(pause)
                self.slept += pause

    def on_error(self, exception: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exception)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _connect(port: int) -> Any:
    reader, writer = await asyncio.open_connection(HOST, port, limit=READ_BUFFER * 4)
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


async def mode_stream(port: int, args: argparse.Namespace) -> dict[str, Any]:
    client = await _connect(port)
    try:
        await _stream(client, max(1, args.count // 10), args.size, args.window)
        gc.collect()
        start = time.perf_counter()
        got = await _stream(client, args.count, args.size, args.window)
        seconds = time.perf_counter() - start
    finally:
        await client.close()
    if got.count != args.count:
        raise AssertionError(f"received {got.count} of {args.count}")
    return {"rate": args.count / seconds, "mbps": got.nbytes / seconds / 1e6, "seconds": seconds}


async def mode_rr(port: int, args: argparse.Namespace) -> dict[str, Any]:
    client = await _connect(port)
    try:
        body = b"12345678"
        for _ in range(min(200, args.count)):
            await client.request_response(Payload(body))
        gc.collect()
        times: list[float] = []
        clock = time.perf_counter
        start = clock()
        for _ in range(args.count):
            t0 = clock()
            answer = await client.request_response(Payload(body))
            times.append(clock() - t0)
        seconds = clock() - start
    finally:
        await client.close()
    if answer.data != body:
        raise AssertionError(f"echo answered {answer.data!r}")
    return {"rate": args.count / seconds, "seconds": seconds, **percentiles(times)}


async def mode_memory(port: int, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    client = await _connect(port)
    try:
        done: asyncio.Future[None] = loop.create_future()
        fast = SlowSubscriber(0, time.perf_counter() + min(5.0, args.duration), done)
        start = time.perf_counter()
        request = client.request_stream(_spec(min(args.count, 100_000), args.size, "gen"))
        request.initial_request_n(MAX_N).subscribe(fast)
        await asyncio.wait_for(done, args.timeout)
        fast_rate = fast.count / (time.perf_counter() - start)
        await asyncio.sleep(0.5)
        gc.collect()
        sampler = RssSampler(server_pid, args.sample_interval).start()
        await asyncio.sleep(0.3)
        baseline = rss_kib(server_pid)
        done = loop.create_future()
        slow = SlowSubscriber(fast_rate / args.slow_factor, time.perf_counter() + args.duration, done)
        start = time.perf_counter()
        client.request_stream(_spec(args.count, args.size, "gen")).initial_request_n(MAX_N).subscribe(slow)
        await asyncio.wait_for(done, args.duration + args.timeout)
        seconds = time.perf_counter() - start
        samples = sampler.stop()
    finally:
        await client.close()
    peak = max(kib for _, kib in samples)
    step = max(1, len(samples) // 300)
    return {
        "growth_mib": (peak - baseline) / 1024,
        "baseline_mib": baseline / 1024,
        "peak_mib": peak / 1024,
        "final_growth_mib": (samples[-1][1] - baseline) / 1024,
        "received": slow.count,
        "slow_rate": slow.count / seconds,
        "fast_rate": fast_rate,
        "slowdown": fast_rate / max(1e-9, slow.count / seconds),
        "slept_fraction": slow.slept / seconds,
        "series": [[t, kib / 1024] for t, kib in samples[::step]],
    }


async def mode_conns(port: int, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    """``fanout`` connections: server RSS per connection, then ``count`` elements shared among them."""
    k = args.fanout
    clients = [await _connect(port)]
    try:
        await _stream(clients[0], 2_000, 8, 256)  # warm-up
        gc.collect()
        await asyncio.sleep(0.2)
        srv0 = rss_kib(server_pid)
        while len(clients) < k:
            batch = min(50, k - len(clients))
            clients += await asyncio.gather(*(_connect(port) for _ in range(batch)))
        await asyncio.gather(*(c.request_response(Payload(b"x")) for c in clients))
        await asyncio.sleep(0.3)
        srv1 = rss_kib(server_pid)
        per = max(1, args.count // k)
        gc.collect()
        start = time.perf_counter()
        got = await asyncio.gather(*(_stream(c, per, 8, min(args.window, per)) for c in clients))
        rate = sum(s.count for s in got) / (time.perf_counter() - start)
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return {"rate": rate, "server_b_per_conn": (srv1 - srv0) * 1024 / max(1, k - 1) if k > 1 else 0.0}


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    if args.mode == "conns":
        return await mode_conns(port, args, server_pid)
    if args.mode == "stream":
        return await mode_stream(port, args)
    if args.mode == "rr":
        return await mode_rr(port, args)
    return await mode_memory(port, args, server_pid)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--mode", default="stream", choices=["stream", "rr", "memory", "conns"])
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--slow-factor", type=float, default=10.0)
    parser.add_argument("--sample-interval", type=float, default=0.25)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # rsocket-py logs every unknown-stream frame
    loop_name = install_loop(args.uvloop)
    if args.role == "server":
        pin_self(args.server_cpu)
        asyncio.run(serve_main())
        return
    pin_self(args.client_cpu)

    def run() -> None:
        with server_child(__file__, ["--uvloop"] if args.uvloop else [], args.server_cpu) as (port, pid):
            result = asyncio.run(client_main(args, port, pid))
        result.update(impl="rsocket-py", loop=loop_name, version=version("rsocket"))
        emit(result)

    run_with_timeout(run, args.timeout + args.duration + 60)


if __name__ == "__main__":
    main()
