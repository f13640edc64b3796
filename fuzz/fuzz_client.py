"""Fuzz a real client: any bytes, in any reads, from a server to ``rstreams.net.connect``.

A raw server on a Unix socket writes the input's reads one loop turn apart (and reads and drops
whatever the client writes), then ends its output and closes. The client meanwhile makes a
request/response, streams a publisher and sends a message. Invariants: each of them ends,
within ``WAIT`` seconds of the server's close (of the loop's own time: ``testkit.bound.Bound``),
with its value or an rstreams error (:class:`~rstreams.errors.ReactiveStreamsError`, or
:class:`LookupError` for an answer without an element), never another exception; nothing
reaches the loop's exception handler or the unhandled-error hook; the connection ends and
leaves no task behind.

The input layout is the wire harness's (fuzz_connection.py); byte 0 bit 0 prepends a
serverHello listing every extension.

Run::

    .venv/bin/python fuzz/fuzz_client.py --pure N [SEED [SECONDS]]
    .venv/bin/python fuzz/fuzz_client.py --replay HEX
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_connection as wire_harness  # (this directory, put on the path above)
import fuzz_net

import rstreams
from rstreams.errors import ReactiveStreamsError, set_unhandled_error_hook
from rstreams.net import connect
from rstreams.wire import OnComplete, OnNext, OnSubscribe, ServerHello, encode
from testkit.bound import WAIT, Bound  # (tests/, put on the path by fuzz_net)

HELLO = encode(ServerHello(extensions=tuple(sorted(wire_harness.ALL_EXTENSIONS))))
ALLOWED = (ReactiveStreamsError, LookupError)
"""How a client's call may fail on bad input (LookupError: an answer without an element)."""


async def run(data: bytes) -> list[tuple[str, str]]:
    """One input: a fresh raw server, a client; the failures (none: every invariant held)."""
    failures: list[tuple[str, str]] = []

    def record(what: str, detail: object) -> None:
        failures.append((what, repr(detail)))

    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: record("loop exception", context))
    previous = set_unhandled_error_hook(lambda error, where: record(f"unhandled in {where}", error))
    head, _, chunks = wire_harness.parse_input(data) if data else (0, 0, [])
    if head & 1:
        chunks.insert(0, HELLO)
    baseline = fuzz_net._tasks()
    served = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dropping = asyncio.create_task(_drop(reader))
        try:
            for chunk in chunks:
                if chunk == wire_harness.EOF:
                    break
                if isinstance(chunk, bytes):
                    writer.write(chunk)
                    await writer.drain()
                await asyncio.sleep(0)  # a turn: the client reads this chunk as one read
            if writer.can_write_eof():
                writer.write_eof()
            await asyncio.sleep(0)
        except ConnectionError:
            pass
        finally:
            writer.close()
            dropping.cancel()
            served.set()

    try:
        with tempfile.TemporaryDirectory() as directory:
            path = f"{directory}/fuzz.sock"
            server = await asyncio.start_unix_server(serve, path)
            try:
                async with Bound(WAIT * 3):
                    await _client(f"unix://{path}", served, record)
            except TimeoutError:
                record("hang", "the client's calls took longer than their bound")
            finally:
                server.close()
                await fuzz_net.within(server.wait_closed(), "the raw server to close")
        for _ in range(20):
            if fuzz_net._tasks() <= baseline:
                break
            await asyncio.sleep(0)
        left = fuzz_net._tasks() - baseline
        if left:
            record("tasks left behind", left)
    finally:
        set_unhandled_error_hook(previous)
    return failures


async def _drop(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError):
        while await reader.read(1 << 16):
            pass


async def _client(url: str, served: asyncio.Event, record: Any) -> None:
    conn = await connect(url, publishers={"up": rstreams.just(b"up")}, keepalive=None)
    calls: list[Awaitable[Any]] = [
        conn.request("numbers"),
        conn.publisher("stream").collect(),
        conn.send("log", b"message", wait=True),
    ]
    tasks = [asyncio.ensure_future(call) for call in calls]
    await served.wait()
    bound = Bound()
    with contextlib.suppress(TimeoutError):
        async with bound:
            await asyncio.wait(tasks)
    for task in tasks:
        if not task.done():
            task.cancel()
            record("hang", f"a call still waits {bound.said()} after the server closed: {task!r}")
            continue
        error = task.exception()
        if error is not None and not isinstance(error, ALLOWED):
            record("crash", f"{type(error).__name__}: {error}")
    with contextlib.suppress(*ALLOWED):
        async with Bound():
            await conn.aclose()
    if not conn.closed:
        record("hang", "the connection did not close")


def _seeds() -> list[bytes]:
    """Answers to the client's request (id 1) and stream (id 2), large elements among them."""

    def chunked(*frames: bytes) -> bytes:
        return b"".join(bytes((len(f),)) + f + b"\x00" for f in frames)

    answer = chunked(
        encode(OnSubscribe(subscriber=1)),
        encode(OnNext(subscriber=1, element=b"\x00")),
        encode(OnComplete(subscriber=1)),
        encode(OnSubscribe(subscriber=2)),
    )
    large = bytes((wire_harness.LARGE_OP, 2, 1, 9, wire_harness.JOIN_OP, 1)) + chunked(
        encode(OnComplete(subscriber=2))
    )
    return [bytes((1, 0)) + answer + large, bytes((1, 0)) + answer, bytes((0, 0)) + answer]


async def campaign(runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
    """``runs`` inputs (or as many as ``seconds`` allow); how many ran and how many failed."""
    return await fuzz_net.pure_loop(runs, seed, seconds, _seeds(), run)


def main() -> None:
    """``--pure N [SEED [SECONDS]]``: a campaign; ``--replay HEX``: one input."""
    logging.getLogger("rstreams").setLevel(logging.CRITICAL)
    fuzz_net.command_line(campaign, run)


if __name__ == "__main__":
    main()
