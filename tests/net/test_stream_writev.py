"""StreamProtocol's writes on a real socket: several chunks go to it with one ``writev``, none
joined, and one chunk with one ``write``; what the socket does not take goes to asyncio (the
rest of a chunk) or waits here (the chunks after it), and everything arrives once, in order."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import pytest

from rstreams.net import _stream
from rstreams.net._stream import StreamProtocol
from testkit.bound import Bound, within
from testkit.net import RecordingHandler

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(not hasattr(os, "writev") or not hasattr(socket, "AF_UNIX"), reason="POSIX only"),
]


def _pair(family: int) -> tuple[socket.socket, socket.socket]:
    if family == socket.AF_UNIX:
        return socket.socketpair()
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    return client, accepted


async def _connect(
    family: int, *, sndbuf: int = 0, high: int = 1 << 30, low: int = 0
) -> tuple[StreamProtocol, RecordingHandler, socket.socket]:
    ours, peer = _pair(family)
    if sndbuf:  # (not much smaller: loopback TCP then stalls below one segment's window)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, sndbuf)
    peer.setblocking(False)
    handler = RecordingHandler()
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: StreamProtocol(handler, high=high, low=low), sock=ours)
    return protocol, handler, peer


async def _read_all(peer: socket.socket, n: int) -> bytes:
    loop = asyncio.get_running_loop()
    got = bytearray()
    async with Bound(10):
        while len(got) < n:
            chunk = await loop.sock_recv(peer, 1 << 16)
            if not chunk:
                break
            got += chunk
    return bytes(got)


def _count_writev(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the chunks of each ``os.writev`` call."""
    calls: list[int] = []
    real: Callable[[int, list[bytes]], int] = os.writev

    def counting(fd: int, buffers: list[bytes]) -> int:
        calls.append(len(buffers))
        return real(fd, buffers)

    monkeypatch.setattr(os, "writev", counting)
    return calls


def _frames(count: int, size: int) -> list[bytes]:
    """Heads and payloads, as the outbox hands them over (each payload its own chunk)."""
    chunks: list[bytes] = []
    for i in range(count):
        chunks += [b"<%d>" % i, bytes([i % 251]) * size]
    return chunks


@pytest.mark.parametrize("family", [socket.AF_UNIX, socket.AF_INET], ids=["unix", "tcp"])
async def test_chunks_go_to_the_socket_in_one_writev(monkeypatch: pytest.MonkeyPatch, family: int) -> None:
    calls = _count_writev(monkeypatch)
    protocol, handler, peer = await _connect(family)
    chunks = _frames(4, 1000)
    protocol.writelines(chunks)
    assert calls == [len(chunks)] and protocol.get_write_buffer_size() == 0
    assert await _read_all(peer, sum(map(len, chunks))) == b"".join(chunks)
    protocol.writelines([b"one chunk"])  # one chunk: a write of its own, no writev
    assert calls == [len(chunks)]
    assert await _read_all(peer, 9) == b"one chunk"
    protocol.close()
    peer.close()
    await handler.lost


@pytest.mark.parametrize("family", [socket.AF_UNIX, socket.AF_INET], ids=["unix", "tcp"])
async def test_what_the_socket_does_not_take_arrives_later_in_order(
    monkeypatch: pytest.MonkeyPatch, family: int
) -> None:
    calls = _count_writev(monkeypatch)
    protocol, handler, peer = await _connect(family, sndbuf=65536, high=256 * 1024, low=64 * 1024)
    first, second = _frames(32, 65536), _frames(3, 100)
    protocol.writelines(first)  # ~2 MiB: the socket takes part; asyncio the rest of one chunk
    assert handler.paused == 1 and protocol.get_write_buffer_size() > 0
    protocol.writelines(second)  # queued behind, by reference
    expected = b"".join(first + second)
    assert await _read_all(peer, len(expected)) == expected
    await handler.wait_for(lambda: handler.resumed == 1, "resume_writing")
    assert protocol.get_write_buffer_size() == 0 and len(calls) >= 2  # the queue went on with writev
    protocol.close()
    peer.close()
    await handler.lost


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the bytes of each one-chunk write to the socket."""
    calls: list[int] = []
    real: Callable[[int, bytes], int] = os.write

    def counting(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real(fd, data)

    monkeypatch.setattr(_stream, "_write", counting)
    return calls


@pytest.mark.parametrize("family", [socket.AF_UNIX, socket.AF_INET], ids=["unix", "tcp"])
async def test_one_chunk_goes_to_the_socket_itself(monkeypatch: pytest.MonkeyPatch, family: int) -> None:
    writes, vectors = _count_writes(monkeypatch), _count_writev(monkeypatch)
    protocol, handler, peer = await _connect(family)
    protocol.writelines([b"a frame"])
    protocol.writelines([b"and another"])
    assert writes == [7, 11] and vectors == [] and protocol.get_write_buffer_size() == 0
    assert await _read_all(peer, 18) == b"a frameand another"
    protocol.close()
    peer.close()
    await handler.lost


@pytest.mark.parametrize("family", [socket.AF_UNIX, socket.AF_INET], ids=["unix", "tcp"])
async def test_the_rest_of_one_chunk_goes_to_asyncio_in_order(
    monkeypatch: pytest.MonkeyPatch, family: int
) -> None:
    writes = _count_writes(monkeypatch)
    protocol, handler, peer = await _connect(family, sndbuf=65536, high=256 * 1024, low=64 * 1024)
    first = bytes(range(256)) * 8192  # 2 MiB: the socket takes part, asyncio the rest
    protocol.writelines([first])
    assert writes == [len(first)] and handler.paused == 1 and protocol.get_write_buffer_size() > 0
    protocol.writelines([b"behind it"])  # queued here, not written past asyncio's buffer
    assert writes == [len(first)]
    assert await _read_all(peer, len(first) + 9) == first + b"behind it"
    await handler.wait_for(lambda: handler.resumed == 1, "resume_writing")
    assert protocol.get_write_buffer_size() == 0
    protocol.close()
    peer.close()
    await handler.lost


async def test_more_chunks_than_one_writev_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_writev(monkeypatch)
    monkeypatch.setattr(_stream, "WRITEV_CHUNKS", 4)
    protocol, handler, peer = await _connect(socket.AF_UNIX)
    chunks = _frames(5, 10)
    protocol.writelines(chunks)
    assert calls == [4, 4, 2]
    assert await _read_all(peer, sum(map(len, chunks))) == b"".join(chunks)
    protocol.close()
    peer.close()
    await handler.lost


async def test_a_broken_socket_is_reported_by_asyncio_as_before() -> None:
    protocol, handler, peer = await _connect(socket.AF_UNIX)
    peer.close()
    protocol.writelines(_frames(2, 1000))  # writev fails (EPIPE): asyncio's own write meets it
    error = await within(handler.lost, 10)
    assert isinstance(error, OSError)


async def test_a_broken_socket_is_reported_by_asyncio_for_one_chunk_too() -> None:
    protocol, handler, peer = await _connect(socket.AF_UNIX)
    peer.close()
    protocol.writelines([b"x" * 1000])  # the write fails (EPIPE): asyncio's own write meets it
    error = await within(handler.lost, 10)
    assert isinstance(error, OSError)
