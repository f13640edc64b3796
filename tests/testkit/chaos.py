"""A TCP proxy for tests that breaks the link on purpose: it cuts connections and stalls them.

``ChaosProxy(upstream_host, upstream_port)`` listens on a free loopback port (:attr:`url`)
and joins every accepted connection to a new one to the upstream server, forwarding bytes
both ways. Then a test can:

* :meth:`cut` every link now (both sockets aborted: the ends see a reset or an end of input),
  or only its client side (``half_open=True``: the server's socket stays open and hears
  nothing, like a link whose far end vanished);
* :meth:`cut_after` a number of forwarded bytes: the chunk that crosses the mark is forwarded
  only up to it, then the link is cut, so cuts land inside frames. ``seed`` makes
  :meth:`random_cut` reproducible;
* :meth:`stall` forwarding (nothing is read from either side, so TCP's own flow control
  pushes back on the senders) and :meth:`resume` it;
* :meth:`refuse` new connections (accepted and closed at once) to exhaust a client's attempts.

Counters (:attr:`forwarded`, :attr:`links_made`, :attr:`cuts`) and :meth:`wait_forwarded`
let tests wait on what happened instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from types import TracebackType
from typing import Self

__all__ = ["ChaosProxy"]

CHUNK = 64 * 1024


class _Link:
    """One proxied connection: the client's socket and the upstream one."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.tasks: list[asyncio.Task[None]] = []
        self.cut = False
        self.half_open = False  # cut on the client's side only: the upstream socket stays, silent

    def abort(self) -> None:
        self.cut = True
        for writer in (self.client,) if self.half_open else (self.client, self.upstream):
            transport = writer.transport
            if not transport.is_closing():
                transport.abort()

    def is_cut(self) -> bool:
        return self.cut

    def close_upstream(self) -> None:
        if not self.upstream.transport.is_closing():
            self.upstream.transport.abort()


class ChaosProxy:
    """See the module docstring. Use ``async with ChaosProxy(host, port) as proxy``."""

    def __init__(self, upstream_host: str, upstream_port: int, *, seed: int = 0) -> None:
        self._host = upstream_host
        self._port = upstream_port
        self._random = random.Random(seed)
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._changed = asyncio.Condition()
        self._cut_at: int | None = None  # cut once forwarded reaches this
        self._half_open: list[_Link] = []  # links cut on the client's side, upstream still open
        self.refusing = False
        self.forwarded = 0
        """Bytes forwarded, both directions, all links."""
        self.links_made = 0
        self.cuts = 0

    async def start(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    # -- chaos ---------------------------------------------------------------------------
    def cut(self, *, half_open: bool = False) -> None:
        """Abort every link now (``half_open``: only the client's socket)."""
        self._cut_at = None
        links = list(self._links)
        if links:
            self.cuts += 1
        for link in links:
            link.half_open = half_open
            link.abort()

    def cut_after(self, n: int) -> None:
        """Cut every link once ``n`` more bytes (either direction) have been forwarded."""
        self._cut_at = self.forwarded + n

    def random_cut(self, low: int, high: int) -> int:
        """:meth:`cut_after` a seeded random number of bytes in ``low..high``; returns it."""
        n = self._random.randint(low, high)
        self.cut_after(n)
        return n

    def stall(self) -> None:
        """Stop forwarding (reads stop, so the senders' socket buffers fill)."""
        self._flowing.clear()

    def resume(self) -> None:
        """Forward again after :meth:`stall`."""
        self._flowing.set()

    def refuse(self, refusing: bool = True) -> None:
        """Close new connections at once (``True``) or proxy them again (``False``)."""
        self.refusing = refusing

    async def wait_forwarded(self, n: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until :attr:`forwarded` reaches ``n``."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.forwarded >= n)

    async def wait_links(self, n: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until :attr:`links_made` reaches ``n``."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.links_made >= n)

    async def cut_repeatedly(self, times: int, low: int, high: int) -> None:
        """Once the first link is up, ``times`` times: :meth:`random_cut`, wait for the next link."""
        await self.wait_links(1)
        for _ in range(times):
            links = self.links_made
            self.random_cut(low, high)
            await self.wait_links(links + 1)

    # -- plumbing --------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self._host, self._port)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, up_writer)
        self._links.add(link)
        self.links_made += 1
        await self._notify()
        link.tasks = [
            asyncio.create_task(self._pump(link, reader, up_writer)),
            asyncio.create_task(self._pump(link, up_reader, writer)),
        ]
        await asyncio.gather(*link.tasks, return_exceptions=True)
        link.abort()
        self._links.discard(link)
        if link.half_open:
            self._half_open.append(link)

    async def _pump(self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not link.is_cut():
                await self._flowing.wait()
                data = await reader.read(CHUNK)
                if not data:
                    if not link.is_cut() and writer.can_write_eof() and not writer.transport.is_closing():
                        writer.write_eof()
                    return
                await self._flowing.wait()
                if link.is_cut():  # (cut while this read or the stall was awaited)
                    return
                cut_at = self._cut_at
                if cut_at is not None and self.forwarded + len(data) >= cut_at:
                    head = data[: cut_at - self.forwarded]
                    if head:
                        writer.write(head)
                        self.forwarded += len(head)
                    self.cut()
                    await self._notify()
                    return
                writer.write(data)
                self.forwarded += len(data)
                await self._notify()
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            link.abort()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        self._flowing.set()
        for link in self._half_open:
            link.close_upstream()
        for link in list(self._links):
            for task in link.tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*link.tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
