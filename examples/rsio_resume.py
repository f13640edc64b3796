"""Session resumption (PROTOCOL.md §16): a stream that outlives its TCP connection.

Run it with ``python examples/rsio_resume.py``; it exits 0 when every check holds.

* ``serve(..., resume=True)`` and ``connect(..., resume=True)`` turn it on (``Resume(...)``
  instead of ``True`` changes its settings: the replay buffer, the client's attempts and
  backoff, how long the server keeps a session). Both sides must ask for it; with a peer
  that does not, the connection runs as without it.
* Between the two runs a small proxy that cuts the client's link twice in the middle of the
  stream, inside a message and without a goodbye, as a dropped network would. The client
  connects again to the same URL and sends ``resume(token, position)``; each side then
  writes its stream on from the position the other reported. The subscriber sees a pause,
  not an error: every element once, in order.
* The server counts the sessions it resumed (``metrics=True``: ``server.metrics()``).

Everything stays on 127.0.0.1 over ``tcp://``; ``tls://``, ``unix://`` and ``ws://`` resume
the same way.
"""

from __future__ import annotations

import asyncio
import contextlib

import rstreams
from rstreams.net import Resume, connect, serve

COUNT = 20_000
"""Elements of the stream: about 160 KB on the wire."""

CUT_AFTER = 40_000
"""Bytes from the server a link carries before the proxy cuts it."""

CUTS = 2
"""Links the proxy cuts; the ones after are left alone."""


class CuttingProxy:
    """Forwards TCP connections to ``port``, and cuts each of the first :data:`CUTS` once it has
    carried :data:`CUT_AFTER` bytes from the server (both sockets aborted: no goodbye)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cut = 0
        self.links = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> asyncio.Server:
        return await asyncio.start_server(self._link, "127.0.0.1", 0)

    def _link(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._forward(client_r, client_w))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forward(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.links += 1
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.port)
        limit = CUT_AFTER if self.cut < CUTS else None

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int | None) -> None:
            carried = 0
            while data := await reader.read(4096):
                if limit is not None and carried + len(data) > limit:
                    writer.write(data[: limit - carried])  # the link ends inside a message
                    self.cut += 1
                    return
                carried += len(data)
                writer.write(data)
                await writer.drain()

        up = asyncio.create_task(pipe(client_r, server_w, None))
        down = asyncio.create_task(pipe(server_r, client_w, limit))
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        for task in (up, down):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await task
        for writer in (client_w, server_w):
            writer.transport.abort()


def numbers(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.from_iterable(range(int(params["n"]))).map(lambda i: str(i).encode())


async def main() -> None:
    async with await serve("tcp://127.0.0.1:0", {"numbers": numbers}, resume=True, metrics=True) as server:
        proxy = CuttingProxy(int(server.url.rsplit(":", 1)[1]))
        async with await proxy.start() as listening:
            port = listening.sockets[0].getsockname()[1]
            print("serving on", server.url, "- the client goes through a proxy on port", port)
            async with await connect(f"tcp://127.0.0.1:{port}", resume=Resume(backoff=0.01)) as conn:
                received = [int(element) for element in await conn.publisher(f"numbers?n={COUNT}").collect()]
        resumed = server.metrics()["resumptions"]
    print(f"{len(received)} elements over {proxy.links} links ({proxy.cut} cut), {resumed} resumption(s)")
    assert received == list(range(COUNT)), "an element was lost, repeated or out of order"
    assert proxy.cut == CUTS and resumed == CUTS
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
