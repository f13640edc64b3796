"""rstreams' client adapter for the client conformance suite (:mod:`rstreams.conformance.clients`).

::

    python -m rstreams.conformance.adapter URL PUBLISHER SCRIPT

An *adapter* is the small program through which the client suite drives an RS.io client
implementation: it connects to ``URL``, subscribes to ``PUBLISHER`` and follows ``SCRIPT``,
printing what its subscriber sees, one JSON object per line, on standard output. Every
implementation writes its own adapter (docs/conformance.md gives the contract); this one
drives :func:`rstreams.connect`.

``SCRIPT`` is a space-separated list of steps, run in order:

========  ===================================================================================
``rN``    request ``N`` more elements
``wN``    wait until ``N`` elements have arrived in all (stops early at a terminal signal)
``c``     cancel the subscription
``t``     wait for the terminal signal (complete, error, or the connection's end)
``q``     close the connection in order (goodbye) and exit
========  ===================================================================================

Output lines: ``{"event": "next", "hex": "..."}``, ``{"event": "complete"}``,
``{"event": "error", "message": "..."}`` (the publisher's onError),
``{"event": "closed", "message": "..."}`` (the connection failed or was closed by the
server) and, last, ``{"event": "exit"}``. The adapter exits with status 0 once the script
ran, whatever the server did; status 2 means the adapter itself could not run the script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Sequence

from rstreams.api import Subscription
from rstreams.errors import ConnectionBrokenError, ReactiveStreamsError
from rstreams.net import RemoteStreamError, connect

__all__ = ["main", "parse_script"]


def parse_script(script: str) -> list[tuple[str, int]]:
    """``"r3 w3 c q"`` as ``[("r", 3), ("w", 3), ("c", 0), ("q", 0)]``; ValueError names a bad step."""
    steps: list[tuple[str, int]] = []
    for step in script.split():
        kind, count = step[0], step[1:]
        if kind in "rw" and count.isdigit() and int(count) > 0:
            steps.append((kind, int(count)))
        elif kind in "ctq" and not count:
            steps.append((kind, 0))
        else:
            raise ValueError(f"bad script step {step!r}: use rN, wN, c, t or q")
    return steps


def _emit(event: str, **fields: str) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class _Recorder:
    """The subscriber: prints every signal and lets the script wait for counts and the end."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.count = 0
        self.changed = asyncio.Event()
        self.ended = False
        self.subscribed = asyncio.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.subscribed.set()

    def on_next(self, item: bytes) -> None:
        self.count += 1
        _emit("next", hex=bytes(item).hex())
        self.changed.set()

    def on_error(self, error: BaseException) -> None:
        if isinstance(error, RemoteStreamError):
            _emit("error", message=error.message)
        else:
            _emit("closed", message=f"{type(error).__name__}: {error}")
        self._end()

    def on_complete(self) -> None:
        _emit("complete")
        self._end()

    def _end(self) -> None:
        self.ended = True
        self.changed.set()

    async def until(self, count: int | None) -> None:
        while not self.ended and (count is None or self.count < count):
            self.changed.clear()
            await self.changed.wait()


async def _run(url: str, publisher: str, steps: list[tuple[str, int]]) -> None:
    try:
        conn = await connect(url)
    except (OSError, ReactiveStreamsError) as error:
        _emit("closed", message=f"connect failed: {type(error).__name__}: {error}")
        return
    recorder = _Recorder()
    conn.publisher(publisher).subscribe(recorder)
    await recorder.subscribed.wait()
    subscription = recorder.subscription
    assert subscription is not None
    for kind, count in steps:
        if kind == "r":
            subscription.request(count)
        elif kind == "w":
            await recorder.until(count)
        elif kind == "c":
            subscription.cancel()
        elif kind == "t":
            await recorder.until(None)
        elif kind == "q":
            with contextlib.suppress(ConnectionBrokenError, OSError):
                await conn.aclose()
            return
    with contextlib.suppress(ConnectionBrokenError, OSError):
        await conn.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the adapter: ``URL PUBLISHER SCRIPT``; see the module's documentation."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m rstreams.conformance.adapter URL PUBLISHER SCRIPT", file=sys.stderr)
        return 2
    try:
        steps = parse_script(args[2])
    except ValueError as error:
        print(f"rstreams.conformance.adapter: {error}", file=sys.stderr)
        return 2
    asyncio.run(_run(args[0], args[1], steps))
    _emit("exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
