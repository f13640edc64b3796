"""A client facing a flooding server (issue 18): its memory stays bounded too.

The server here is a raw socket in this process. It accepts ``rstreams subscribe`` (a child
process), answers its hello and its subscribe, and then sends one kind of message as fast as
it can without ever reading again, so the client's answers can never drain: refusals of
subscribes for names the client does not serve (RS.io is bidirectional, §5.1), or pongs for
keepalive pings (§14.1). The client's own subscription keeps its demand outstanding; no
element ever comes. The client's RSS, read from /proc, must grow by at most 16 MiB.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator

import pytest

from rstreams.wire import ExtensionMessage, OnSubscribe, ServerHello, Subscribe, extensions
from testkit.hostile import (
    Flooder,
    MiB,
    Progress,
    RssWatch,
    child_env,
    frames,
    numbered,
    repeat_to,
    rss_kib,
    stop_process,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

BOUND = 16 * MiB

FLOODS: dict[str, tuple[Callable[[], bytes], int]] = {
    "subscribes": (lambda: numbered(8 * MiB, lambda i: Subscribe(publisher="nope", subscriber=i)), 8 * MiB),
    "pings": (
        lambda: repeat_to(frames(ExtensionMessage(type=extensions.PING, payload=bytes(8))), 64 * 1024),
        32 * MiB,
    ),
}
HELLO_AND_SUBSCRIBE = 17
"""Bytes ``rstreams subscribe URL counter --demand 4`` sends first: clientHello listing
keepalive, subscribe(counter, 1, 0) and request(1, 4)."""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    directory = tempfile.mkdtemp(prefix="rs-hostile-")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(f"{directory}/rsio.sock")
    sock.listen()
    sock.settimeout(30)
    yield sock
    sock.close()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("kind", sorted(FLOODS))
def test_client_facing_a_flooding_server(kind: str, listener: socket.socket) -> None:
    """The server floods and never reads: the client's memory stays within the bound."""
    make, budget = FLOODS[kind]
    block = make()
    url = "unix://" + listener.getsockname()
    command = [sys.executable, "-m", "rstreams.cli", "subscribe", url, "counter", "--demand", "4"]
    client = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        conn, _ = listener.accept()
        with conn:
            first = b""
            while len(first) < HELLO_AND_SUBSCRIBE:
                chunk = conn.recv(4096)
                assert chunk, f"the client closed before subscribing: {first!r}"
                first += chunk
            baseline = rss_kib(client.pid)
            prologue = frames(ServerHello(extensions=(extensions.KEEPALIVE.id,)), OnSubscribe(subscriber=1))
            stop = threading.Event()
            server = Flooder(conn.getsockname(), prologue, block, budget, 3.0, stop, Progress())
            with RssWatch(client.pid, baseline, limit_kib=BOUND // 1024, stop=stop) as watch:
                server.ended = server.pump(conn)
            growth = watch.growth_kib * 1024
    finally:
        stop_process(client)
    assert growth <= BOUND, (
        f"the client's RSS grew by {growth / MiB:.1f} MiB (bound {BOUND // MiB} MiB) while a server that "
        f"never reads sent {server.sent / MiB:.1f} MiB of {kind} ({server.ended})"
    )
    assert server.sent >= len(prologue) + 64 * 1024, f"the server could not flood: {server.ended}"
