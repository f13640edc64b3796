"""The `rstreams` command where a new user's walkthrough found it misleading: a server's
rstreams/health that is not the health object, a URL of the wrong scheme, a server without
rstreams/publishers, and the smaller texts."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rstreams import just
from rstreams.cli import main
from rstreams.net import serve
from testkit import patience


@contextlib.contextmanager
def served(offer: Any, url: str = "tcp://127.0.0.1:0", **options: Any) -> Iterator[str]:
    """``rstreams.serve(url, offer)`` on a loop in a thread (``main()`` runs its own); yields the
    URL served."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    urls: list[str] = []
    stop: list[asyncio.Event] = []

    async def run() -> None:
        server = await serve(url, offer, **options)
        stop.append(asyncio.Event())
        urls.append(server.url)
        ready.set()
        await stop[0].wait()
        await server.aclose()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),))
    thread.start()
    try:
        assert patience.wait(ready, 10), "the test server did not start"
        yield urls[0]
    finally:
        if stop:
            loop.call_soon_threadsafe(stop[0].set)
        patience.join(thread, 10)
        loop.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"mine", "rstreams/health answered b'mine', not JSON"),
        (b"[1,2]", "rstreams/health answered a JSON list, not an object"),
        (b'{"x": 1}', 'rstreams/health answered an object without the boolean field "ok"'),
    ],
    ids=["not-json", "not-an-object", "no-ok"],
)
def test_ping_and_top_name_a_health_answer_that_is_not_the_servers(
    capsys: pytest.CaptureFixture[str], answer: bytes, said: str
) -> None:
    """--publishers replaced rstreams/health: ping ended in a traceback (JSONDecodeError,
    AttributeError) and top in 'connection ended: Expecting value', exit 2. One line, exit 1."""
    with served({"rstreams/health": just(answer)}) as url:
        for command in ("ping", "top"):
            assert main([command, url, "--timeout", "5"]) == 1
            assert capsys.readouterr().err == (
                f"rstreams {command}: {url}: {said} (a publisher of the user's replaced the "
                "server's own, as serve --publishers can)\n"
            )
