"""Blocking calls to a replay server: one short-lived event loop per call.

Callers are plain (non-async) Python: ``rstreams publish``, and Spark's connector (the
driver's streaming-source runner, executor workers, and the sink's commit worker). Each call
opens its own connection inside ``asyncio.run`` and closes it before returning, so nothing
lives on between calls (Spark may pickle, fork or discard the objects that make them), and a
partition's ``read()`` holds one connection for exactly as long as it fetches its range.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from rstreams.flow._iterable import from_iterable
from rstreams.net import RemoteStreamError, connect
from rstreams.replay._log import unpack
from rstreams.replay._server import UPLOAD_NAME

PACK = 1024
"""Elements per wire element when fetching ranges (bounded by bytes on the server too)."""

__all__ = ["RemoteLogError", "fetch_range", "request_json", "upload"]


class RemoteLogError(RuntimeError):
    """The replay log refused a request; the message is the server's."""


def _run(coro: Any, timeout: float) -> Any:
    try:
        return asyncio.run(asyncio.wait_for(coro, timeout))
    except RemoteStreamError as error:
        raise RemoteLogError(error.message) from None


async def _request(url: str, name: str) -> Any:
    conn = await connect(url)
    try:
        data: bytes = await conn.request(name)
    finally:
        await conn.aclose()
    return json.loads(data)


def request_json(url: str, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """The single JSON answer of publisher ``name`` (``log?latest``, ``log?commit=N``...)."""
    answer: dict[str, Any] = _run(_request(url, name), timeout)
    return answer


async def _fetch(url: str, name: str) -> list[bytes]:
    conn = await connect(url)
    try:
        elements: list[bytes] = await conn.publisher(name).collect()
    finally:
        await conn.aclose()
    return elements


def fetch_range(
    url: str, log: str, start: int, end: int, timeout: float = 60.0, *, pack: int = PACK
) -> list[bytes]:
    """Exactly the elements at positions ``[start, end)`` of ``log``, ``pack`` per wire element.

    Raises:
        RemoteLogError: the server refused (for example positions already trimmed).
        RuntimeError: fewer elements than asked for arrived (the log ended early).
        TimeoutError: the range did not arrive within ``timeout`` seconds.
    """
    name = f"{log}?from={start}&to={end}" + (f"&pack={pack}" if pack else "")
    elements = _run(_fetch(url, name), timeout)
    if pack:
        elements = [element for packed in elements for element in unpack(packed)]
    if len(elements) != end - start:
        raise RuntimeError(
            f"replay log {log!r} at {url} ended after {len(elements)} of the {end - start} "
            f"elements at positions [{start}, {end})"
        )
    assert isinstance(elements, list)
    return elements


async def _upload(url: str, log: str, token: str, rows: Iterable[bytes]) -> int:
    header = json.dumps({"log": log, "token": token}).encode()
    elements: Iterator[bytes] = chain([header], rows)
    conn = await connect(url, publishers={UPLOAD_NAME: from_iterable(elements)})
    try:
        answer = json.loads(await conn.request(f"{log}?staged={token}"))
    finally:
        await conn.aclose()
    return int(answer["count"])


def upload(url: str, log: str, token: str, rows: Iterable[bytes], timeout: float = 300.0) -> int:
    """Stage ``rows`` on the server's sink log ``log`` under ``token``; returns how many."""
    count: int = _run(_upload(url, log, token, rows), timeout)
    return count
