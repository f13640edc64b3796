"""A flooding server against the Java and the JavaScript clients (real processes: fuzz/'s
``FuzzClientMain`` and ``polyglot_client.mjs``), as tests/net/test_hostile_client.py does against
ours: the server answers the client's hello, then sends subscribes for names the client does not
serve (each refused with onError, §5.1, §5.5) or keepalive pings (each answered with a pong,
§14.1) as fast as it can and never reads. The client must stop reading it (§6.3) long before
the flood's budget, keep its memory bounded (the Java one's heap is 64 MiB), and, once the server
closes, end its calls with a stream error and report, without logging anything."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from collections.abc import Callable
from types import ModuleType

import pytest

from rstreams.wire import ExtensionMessage, ServerHello, Subscribe, extensions
from testkit.bound import within
from testkit.hostile import Flooder, MiB, Progress, RssWatch, frames, numbered, repeat_to, rss_kib
from testkit.scripts import load_script

clients: ModuleType = load_script("fuzz/fuzz_polyglot_client.py")

pytestmark = pytest.mark.timeout(180)  # the Java client's first start waits for Maven

FLOODS: dict[str, Callable[[], bytes]] = {
    "subscribes": lambda: numbered(4 * MiB, lambda i: Subscribe(publisher="nope", subscriber=i)),
    "pings": lambda: repeat_to(frames(ExtensionMessage(type=extensions.PING, payload=bytes(8))), 64 * 1024),
}
BUDGET = 256 * MiB
"""What the server tries to write: far more than the socket buffers of both ends hold."""
STALL = 3.0
"""Seconds without a byte out after which the flood counts as stopped by the client."""
RSS_BOUND = 96 * MiB
"""Largest growth of a client's RSS during the flood (measured 2026-11-30 at load 25: 18-30 MiB for
the Java client, 44-51 MiB for the JavaScript one; each stopped reading after 4-7 MiB)."""
HEAP = "-Xmx64m"
"""The Java client's heap: RSS says little of a JVM, so what the flood makes it hold must fit in this."""


@pytest.mark.parametrize("kind", sorted(FLOODS))
@pytest.mark.parametrize("mode", ["java", "js"])
def test_a_client_facing_a_flooding_server_stops_reading_it(mode: str, kind: str) -> None:
    why = clients.unavailable(mode)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    command = clients.client_command(mode)
    if mode == "java":
        command.insert(1, HEAP)
    block = FLOODS[kind]()

    async def main() -> tuple[Flooder, int, dict[str, object], str]:
        target = clients.ClientTarget(mode, command)
        listener = socket.create_server(("127.0.0.1", 0))
        async with target.running():
            assert target.process.stdin is not None and target.process.stdout is not None
            target.process.stdin.write(f"tcp://127.0.0.1:{listener.getsockname()[1]}\n".encode())
            await target.process.stdin.drain()
            conn, _ = await asyncio.to_thread(listener.accept)
            with conn:
                conn.settimeout(30)
                conn.recv(4096)  # its hello and subscribes (the rest is never read)
                prologue = frames(ServerHello(extensions=(extensions.KEEPALIVE.id,)))
                stop = threading.Event()
                server = Flooder(("127.0.0.1", 0), prologue, block, BUDGET, STALL, stop, Progress())
                pid = target.process.pid
                with RssWatch(pid, rss_kib(pid), limit_kib=RSS_BOUND // 1024, stop=server.stop) as watch:
                    server.ended = await asyncio.to_thread(server.pump, conn)
            line = await within(target.process.stdout.readline(), clients.WAIT, children=[pid])
            listener.close()
            return server, watch.growth_kib * 1024, json.loads(line), target.logged()

    server, growth, report, logged = asyncio.run(main())
    assert growth <= RSS_BOUND, f"the {mode} client's RSS grew by {growth / MiB:.1f} MiB ({server.ended})"
    assert server.ended == "stalled", f"the {mode} client read {server.sent} bytes: {server.ended}"
    assert server.sent >= len(frames(ServerHello(extensions=()))) + 64 * 1024, server.ended
    calls = report["calls"]
    assert isinstance(calls, list) and calls, report
    assert all(clients.allowed(mode, c["name"], c["message"]) for c in calls), report
    assert not logged, logged
