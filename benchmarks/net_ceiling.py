"""The plain-asyncio ceiling: length-prefixed frames over loopback TCP, no protocol library.

Stdlib only (uvloop optional). What an RS.io-like library could reach in pure Python on
this machine, measured in the same run as rstreams. Frames are a 4-byte big-endian length
and a body; the receiver is an ``asyncio.BufferedProtocol`` (``recv_into`` a reused 1 MiB
buffer) that materialises every element as its own ``bytes`` (like an ``on_next``).

Modes (``--mode``):
  stream   ``count`` frames of ``size`` bytes under a credit window: the receiver grants
           ``window`` up front and ``window/2`` every ``window/2`` frames (the shape of
           rsocket-py's benchmark). ``--style perwrite``: one ``write()`` per frame (what
           rsocket-py does); ``--style batched``: each grant coalesced into one write
           (frames of 4 KiB or more are written one by one while the transport is writable).
  rr       ``count`` sequential 8-byte framed round trips (echo): rt/s and p50/p99.

Usage: python benchmarks/net_ceiling.py client --mode stream --style batched [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _netcommon import (
    HOST,
    add_common_args,
    announce_port,
    emit,
    install_loop,
    percentiles,
    pin_self,
    run_with_timeout,
    server_child,
    wait_for_stdin_eof,
)

HDR = struct.Struct(">I")
HELLO = struct.Struct(">BIII")  # mode, count, size, window
PERWRITE, BATCHED, ECHO = 1, 2, 3
BUFFER = 1 << 20


# ------------------------------------------------------------------------------ server
class Sender(asyncio.Protocol):
    def __init__(self) -> None:
        self.inbox = bytearray()
        self.mode = 0
        self.credit = 0
        self.remaining = 0
        self.frame = b""
        self.paused = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.pump()

    def data_received(self, data: bytes) -> None:
        inbox = self.inbox
        inbox += data
        pos, n = 0, len(inbox)
        while True:
            if self.mode == 0:
                if n - pos < HELLO.size:
                    break
                self.mode, self.remaining, size, _ = HELLO.unpack_from(inbox, pos)
                pos += HELLO.size
                self.frame = HDR.pack(size) + os.urandom(size)
            elif self.mode == ECHO:
                if n - pos < 4:
                    break
                end = pos + 4 + HDR.unpack_from(inbox, pos)[0]
                if end > n:
                    break
                self.transport.write(bytes(inbox[pos:end]))  # type: ignore[union-attr]
                pos = end
            else:  # a credit grant: b"C" + >I
                if n - pos < 5:
                    break
                self.credit += HDR.unpack_from(inbox, pos + 1)[0]
                pos += 5
                self.pump()
        del inbox[:pos]

    def pump(self) -> None:
        write = self.transport.write  # type: ignore[union-attr]
        frame = self.frame
        if self.mode == PERWRITE or (self.mode == BATCHED and len(frame) >= 4096):
            while self.credit > 0 and self.remaining > 0 and not self.paused:
                self.credit -= 1
                self.remaining -= 1
                write(frame)
        elif self.mode == BATCHED:
            k = min(self.credit, self.remaining)
            if k > 0:
                self.credit -= k
                self.remaining -= k
                write(frame * k)


async def serve_main() -> None:
    server = await asyncio.get_running_loop().create_server(Sender, HOST, 0)
    announce_port(server.sockets[0].getsockname()[1])
    wait_for_stdin_eof()
    await asyncio.Event().wait()


# ------------------------------------------------------------------------------ client
class Receiver(asyncio.BufferedProtocol):
    """Parses frames out of a reused buffer; every element becomes a ``bytes``; grants credit."""

    def __init__(self, expect: int, window: int, done: asyncio.Future[None]) -> None:
        self.buf = bytearray(BUFFER)
        self.view = memoryview(self.buf)
        self.start = 0
        self.end = 0
        self.expect = expect
        self.half = max(1, window // 2)
        self.since = 0
        self.count = 0
        self.nbytes = 0
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        if BUFFER - self.end < 65536 + 4:
            live = self.end - self.start
            self.buf[:live] = self.buf[self.start : self.end]
            self.start, self.end = 0, live
        return self.view[self.end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.end += nbytes
        buf, view, pos, end = self.buf, self.view, self.start, self.end
        unpack = HDR.unpack_from
        while end - pos >= 4:
            stop = pos + 4 + unpack(buf, pos)[0]
            if stop > end:
                break
            element = bytes(view[pos + 4 : stop])
            pos = stop
            self.on_next(element)
        self.start = pos
        if pos == end:
            self.start = self.end = 0

    def on_next(self, element: bytes) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            waiter.set_result(element)
            return
        self.count += 1
        self.nbytes += len(element)
        self.since += 1
        if self.since == self.half:
            self.since = 0
            if self.count < self.expect:
                self.transport.write(b"C" + HDR.pack(self.half))  # type: ignore[union-attr]
        if self.count >= self.expect and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            if self.expect:  # a stream awaits it
                self.done.set_exception(ConnectionError(f"lost: {exc}"))
            else:  # the echo awaits its waiters, never this (no "exception never retrieved")
                self.done.cancel()


async def _open(port: int, mode: int, count: int, size: int, window: int) -> Receiver:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    _, receiver = await loop.create_connection(lambda: Receiver(count, window, done), HOST, port)
    receiver.transport.write(HELLO.pack(mode, count, size, window))  # type: ignore[union-attr]
    return receiver


async def _stream(port: int, style: int, count: int, size: int, window: int) -> tuple[float, Receiver]:
    receiver = await _open(port, style, count, size, window)
    await asyncio.sleep(0.05)  # the hello arrived; the grant below starts the clock
    start = time.perf_counter()
    receiver.transport.write(b"C" + HDR.pack(window))  # type: ignore[union-attr]
    await asyncio.wait_for(receiver.done, 300)
    seconds = time.perf_counter() - start
    receiver.transport.close()  # type: ignore[union-attr]
    return seconds, receiver


def echo_once(receiver: Receiver) -> Callable[[], Awaitable[bytes]]:
    """``once()``: one round trip of the echo over ``receiver``'s connection (an 8-byte framed
    write, then the answer awaited); ``benchmarks/hotpath.py`` counts the same coroutine."""
    frame = HDR.pack(8) + b"12345678"
    write = receiver.transport.write  # type: ignore[union-attr]
    loop = asyncio.get_running_loop()

    async def once() -> bytes:
        receiver.waiter = loop.create_future()
        write(frame)
        return await receiver.waiter

    return once


async def client_main(args: argparse.Namespace, port: int) -> dict[str, Any]:
    if args.mode == "stream":
        style = PERWRITE if args.style == "perwrite" else BATCHED
        await _stream(port, style, max(1, args.count // 10), args.size, args.window)
        gc.collect()
        seconds, receiver = await _stream(port, style, args.count, args.size, args.window)
        if receiver.count != args.count:
            raise AssertionError(f"received {receiver.count} of {args.count}")
        return {"rate": args.count / seconds, "mbps": receiver.nbytes / seconds / 1e6, "seconds": seconds}
    receiver = await _open(port, ECHO, 0, 8, 0)
    once = echo_once(receiver)
    for _ in range(min(200, args.count)):
        await once()
    gc.collect()
    times: list[float] = []
    clock = time.perf_counter
    start = clock()
    for _ in range(args.count):
        t0 = clock()
        await once()
        times.append(clock() - t0)
    seconds = clock() - start
    receiver.transport.close()  # type: ignore[union-attr]
    return {"rate": args.count / seconds, "seconds": seconds, **percentiles(times)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--mode", default="stream", choices=["stream", "rr"])
    parser.add_argument("--style", default="batched", choices=["batched", "perwrite"])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    args = parser.parse_args(argv)
    loop_name = install_loop(args.uvloop)
    if args.role == "server":
        pin_self(args.server_cpu)
        asyncio.run(serve_main())
        return
    pin_self(args.client_cpu)

    def run() -> None:
        with server_child(__file__, ["--uvloop"] if args.uvloop else [], args.server_cpu) as (port, _):
            result = asyncio.run(client_main(args, port))
        result.update(impl="asyncio-ceiling", loop=loop_name, version=sys.version.split()[0])
        emit(result)

    run_with_timeout(run, args.timeout)


if __name__ == "__main__":
    main()
