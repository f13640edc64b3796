"""The live page: an HTTP server for the page and an RS.io WebSocket server for its data.

``LivePage(offer, publisher="results").start()`` runs both on one event loop in a daemon
thread (like :class:`~rstreams.replay.ReplayServer`), on two ports of ``host``: the page
at :attr:`LivePage.url`, RS.io at :attr:`LivePage.ws_url` (``ws://host:port/rsio``). The
page reads ``/config.json`` to learn the WebSocket URL and the publisher to chart, so one
page works for any server; ``?url=...&publisher=...`` on the page's address overrides them.
The WebSocket server counts (``metrics=True``): beside its charts the page shows where the
server's streams wait, from ``rstreams/stats`` (docs/observability.md). The WebSocket server
accepts browser pages from the page's own origin (``http://host:port`` of :attr:`LivePage.url`,
by any loopback name for a loopback host) and from ``origins``; other pages get HTTP 403
(docs/security.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Self

from rstreams.errors import ReactiveStreamsError, report_unhandled
from rstreams.net import Server, serve
from rstreams.net._loop_thread import close_idle, loop_thread
from rstreams.net._origins import check_origins, own_origins
from rstreams.net._routes import Offer
from rstreams.observe import replay_metrics
from rstreams.replay import ReplayLog, replay_offer
from rstreams.web._http import HttpServer

__all__ = ["WS_PATH", "LivePage", "PageNotRunningError", "page_for_logs"]

WS_PATH = "/rsio"
"""Where the page's WebSocket server answers."""

START_TIMEOUT = 30.0


class PageNotRunningError(ReactiveStreamsError, RuntimeError):
    """A :class:`LivePage` was asked for an address (``url``, ``ws_url``) before its
    :meth:`~LivePage.start` or after its :meth:`~LivePage.stop`: its ports are known only while
    it runs. The message names the call and how to start the page."""

    def __init__(self, call: str) -> None:
        super().__init__(
            f"LivePage.{call}: the page is not running (not started yet, or stopped); start it "
            "first: page = LivePage(...).start(), or with LivePage(...) as page: ..."
        )


class LivePage:
    """Serve the live page for ``publisher`` (elements: JSON objects) from ``offer``'s publishers.

    Args:
        offer: what the WebSocket server offers (as for :func:`rstreams.net.serve`).
        publisher: the name the page subscribes to.
        host: the interface both servers listen on.
        port: the page's HTTP port (0: any free one); the WebSocket server takes any free port.
        title: the page's heading.
        window: the demand window the page keeps (elements requested and not yet drawn).
        origins: more origins whose pages may use the WebSocket server besides the page's own
            (as :func:`rstreams.net.serve` takes them; ``"*"``: every page).
    """

    def __init__(
        self,
        offer: Offer,
        *,
        publisher: str = "results",
        host: str = "127.0.0.1",
        port: int = 0,
        title: str = "rstreams live",
        window: int = 64,
        origins: Iterable[str] | None = None,
    ) -> None:
        if type(window) is not int or window < 1:
            raise ValueError(f"window must be an int >= 1, got {window!r}")
        more = check_origins(origins)
        self._origins = None if more is None else list(more)
        self._offer = offer
        self._host = host
        self._port = port
        self.publisher = publisher
        self.title = title
        self.window = window
        self._http = HttpServer(self.config)  # first: a broken install fails here, before a loop exists
        self.loop, self._thread = loop_thread(self, "rstreams-live-page")
        self._ws: Server | None = None
        self._http_port = 0
        self._logs: Mapping[str, ReplayLog] = {}  # replay logs whose numbers the page shows

    @property
    def url(self) -> str:
        """The page's address, e.g. ``http://127.0.0.1:8000/``; :class:`PageNotRunningError`
        before :meth:`start` or after :meth:`stop`."""
        if self._ws is None:
            raise PageNotRunningError("url")
        return f"http://{_host_in_url(self._host)}:{self._http_port}/"

    @property
    def ws_url(self) -> str:
        """Where RS.io is served over WebSocket; :class:`PageNotRunningError` before
        :meth:`start` or after :meth:`stop`."""
        if self._ws is None:
            raise PageNotRunningError("ws_url")
        return self._ws.url

    @property
    def connections(self) -> int:
        """RS.io connections open right now (one per open page)."""
        return 0 if self._ws is None else len(self._ws.connections)

    def config(self) -> dict[str, Any]:
        """What ``/config.json`` answers."""
        return {"url": self.ws_url, "publisher": self.publisher, "title": self.title, "window": self.window}

    def start(self) -> Self:
        """Start both servers; raises ``OSError`` (address in use, ...) after cleaning up."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        try:
            future.result(START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        return self

    async def _start(self) -> None:
        # The page first: its origin is one the WebSocket server accepts.
        self._http_port = await self._http.start(self._host, self._port)
        page = own_origins(self._host, self._http_port, secure=False)
        origins = ["*"] if self._origins is None else [*page, *self._origins]
        ws_url = f"ws://{_host_in_url(self._host)}:0{WS_PATH}"
        self._ws = await serve(ws_url, self._offer, metrics=True, origins=origins)
        if self._logs:  # the page shows the server's numbers (rstreams/stats), its logs' among them
            self._ws.add_metrics("replay", replay_metrics(self._logs))

    def stop(self) -> None:
        """Close both servers (every page's connection gets a goodbye) and the loop thread."""
        if self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
            try:
                future.result(10)
            except Exception as error:
                report_unhandled(error, "LivePage.stop")
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        close_idle(self.loop)  # also a page never started: its loop never ran

    async def _stop(self) -> None:
        await self._http.aclose()
        if self._ws is not None:
            ws, self._ws = self._ws, None
            await ws.aclose("the live page is closing")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def page_for_logs(
    address: str,
    logs: Mapping[str, ReplayLog],
    *,
    publisher: str,
    title: str = "rstreams live",
    origins: Iterable[str] | None = None,
) -> LivePage:
    """Start a :class:`LivePage` on ``HOST:PORT`` (port 0: any) serving ``logs`` read-only
    (``origins``: as :class:`LivePage` takes them).

    What ``rstreams serve --web`` and ``rstreams demo`` run: the page charts ``publisher``,
    one of the logs; a sink log is served for reading only (uploads go to the main server).
    """
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit():
        raise ValueError(f"the page's address is HOST:PORT, e.g. 127.0.0.1:8000, got {address!r}")
    if publisher not in logs:
        raise ValueError(f"the page charts one of the logs {sorted(logs)}, got {publisher!r}")
    page = LivePage(
        replay_offer(logs),
        publisher=publisher,
        host=host or "127.0.0.1",
        port=int(port),
        title=title,
        origins=origins,
    )
    page._logs = logs
    return page.start()


def _host_in_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host
