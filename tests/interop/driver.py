"""The Python client's driver for the interop matrix: ``python tests/interop/driver.py PLAN.json``.

The plan is ``{"cases": [{"id", "url", "token", "pids", "streams": [{"name", "script", "codec"}]}]}``.
Each case is one connection made with :func:`rstreams.connect` (presenting the token, if
any); its streams are subscribed one after the other, each following its script: ``rN``
request N, ``wN`` wait until N elements arrived in all, ``c`` cancel, ``t`` wait for the
terminal signal. What the subscribers see is printed as one JSON object per line, each with
the case's id: ``connected``, ``connect-failed``, ``next`` (``size``, ``sha256``, ``hex`` up
to 64 bytes, ``value`` with the int64 codec, and here ``batch``: how many elements came in
the same frame), ``complete``, ``error`` (the publisher's onError
text), ``closed`` (the connection ended), ``timeout``, ``done``; last ``{"event": "exit"}``.
The Java (``InteropClientMain``) and JavaScript (``driver.mjs``) drivers print the same.

Each wait (the connection, onSubscribe, a count, the end) is a hang guard of the case's
``wait`` seconds (:data:`WAIT_SECONDS` unless the plan says) of own time
(:class:`testkit.bound.Bound`: wall time less what this loop's thread and the threads of the
case's server, ``pids``, waited for a CPU), not of wall time: on a
loaded machine a server that is served late is not taken for one that hangs. Needs
``PYTHONPATH`` with ``tests``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sys
from typing import Any

import rstreams
from rstreams.api import Subscription
from rstreams.errors import ReactiveStreamsError
from rstreams.net import INT64, RemoteStreamError
from testkit.bound import within

WAIT_SECONDS = 20.0
"""Seconds of own time (this process's and the case's server's) any one wait may take."""


def emit(case: str | None, stream: int | None, event: str, **fields: Any) -> None:
    line: dict[str, Any] = {} if case is None else {"case": case}
    if stream is not None:
        line["stream"] = stream
    print(json.dumps({**line, "event": event, **fields}), flush=True)


class Recorder:
    """Prints every signal and lets the script wait for a count or the end."""

    def __init__(self, case: str, stream: int, int64: bool) -> None:
        self.case, self.stream, self.int64 = case, stream, int64
        self.subscription: Subscription | None = None
        self.subscribed = asyncio.Event()
        self.changed = asyncio.Event()
        self.count = 0
        self.ended = False

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.subscribed.set()

    def on_next(self, item: Any) -> None:
        if self.int64:  # batched: one list per frame (onNextPacked: the whole pack)
            for value in item:
                self.element(INT64.encode(value), value, batch=len(item))
        else:
            self.element(bytes(item), None)

    def element(self, data: bytes, value: int | None, **extra: int) -> None:
        fields: dict[str, Any] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if len(data) <= 64:
            fields["hex"] = data.hex()
        if value is not None:
            fields["value"] = value
        emit(self.case, self.stream, "next", **fields, **extra)
        self.count += 1
        self.changed.set()

    def on_error(self, error: BaseException) -> None:
        if isinstance(error, RemoteStreamError):
            emit(self.case, self.stream, "error", message=error.message)
        else:
            emit(self.case, self.stream, "closed", message=f"{type(error).__name__}: {error}")
        self.ended = True
        self.changed.set()

    def on_complete(self) -> None:
        emit(self.case, self.stream, "complete")
        self.ended = True
        self.changed.set()

    async def until(self, count: int | None) -> None:
        while not self.ended and (count is None or self.count < count):
            self.changed.clear()
            await self.changed.wait()


async def run_stream(
    conn: Any, case: str, index: int, stream: dict[str, Any], pids: list[int], limit: float
) -> bool:
    """One stream's script, each wait bounded by ``limit`` seconds of own time; False if a wait
    timed out (the case stops there)."""
    int64 = stream.get("codec") == "int64"
    recorder = Recorder(case, index, int64)
    if int64:
        publisher = conn.publisher(stream["name"], codec=INT64, batched=True)
    else:
        publisher = conn.publisher(stream["name"])
    publisher.subscribe(recorder)
    for step in stream["script"].split():
        kind, count = step[0], int(step[1:] or 0)
        try:
            if kind in "rc":
                await within(recorder.subscribed.wait(), limit, pids)
                assert recorder.subscription is not None
                if kind == "r":
                    recorder.subscription.request(count)
                else:
                    recorder.subscription.cancel()
            elif kind in "wt":
                await within(recorder.until(count if kind == "w" else None), limit, pids)
            else:
                raise ValueError(f"bad script step {step!r}")
        except TimeoutError:
            emit(case, index, "timeout", step=step)
            return False
    return True


async def run_case(spec: dict[str, Any]) -> None:
    case, pids, limit = spec["id"], spec.get("pids", []), spec.get("wait", WAIT_SECONDS)
    try:  # (connect's own handshake timer of wall time off: the bound is the one above)
        connecting = rstreams.connect(spec["url"], auth=spec.get("token"), handshake_timeout=None)
        conn = await within(connecting, limit, pids)
    except (OSError, ReactiveStreamsError, TimeoutError) as error:
        emit(case, None, "connect-failed", message=f"{type(error).__name__}: {error}")
        emit(case, None, "done")
        return
    emit(case, None, "connected")
    try:
        for index, stream in enumerate(spec["streams"]):
            if not await run_stream(conn, case, index, stream, pids, limit):
                break
    finally:
        with contextlib.suppress(OSError, ReactiveStreamsError):
            await conn.aclose()
    emit(case, None, "done")


async def main(cases: list[dict[str, Any]]) -> None:
    for spec in cases:
        await run_case(spec)
    emit(None, None, "exit")


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as plan:
        asyncio.run(main(json.load(plan)["cases"]))
