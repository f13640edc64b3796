"""Publisher names (PROTOCOL.md §5.5): the ``names`` vectors of docs/protocol-vectors.json, the
offer they are requested from, and a pair whose server hands messages to a recording handler."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rstreams
from rstreams.api import Publisher
from rstreams.net import Message
from rstreams.net._connection import Connection
from rstreams.wire import ConnectionConfig
from testkit.net import connection, memory_pair

NAMES: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.json").read_text(encoding="utf-8")
)["names"]
"""The ``names`` section: ``offered``, ``cases`` and ``not_offerable``."""


def cases(outcome: str) -> list[dict[str, Any]]:
    """The cases whose ``outcome`` is ``found``, ``unknown`` or ``malformed``."""
    return [case for case in NAMES["cases"] if case["outcome"] == outcome]


def answering(entry: str) -> Callable[[dict[str, str]], Publisher[bytes]]:
    """The factory of the offered ``entry``: one element, ``{"offer": entry, "params": params}``
    as JSON, what a ``found`` case expects (:func:`expected`)."""

    def factory(params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.just(json.dumps({"offer": entry, "params": params}).encode())

    return factory


def vector_offer() -> dict[str, Any]:
    """The vectors' ``offered`` names, in their order, each answered by :func:`answering`."""
    return {entry: answering(entry) for entry in NAMES["offered"]}


def expected(case: dict[str, Any]) -> dict[str, Any]:
    """What a ``found`` case's factory answers, decoded."""
    return {"offer": case["offer"], "params": case["params"]}


class Handled:
    """A client connected to a server whose ``handlers`` (each name to this recorder) take
    messages (PROTOCOL.md §20), with one message in flight at most: a message dropped without
    its credit given back would hang the next one."""

    def __init__(self, names: list[str], **server: Any) -> None:
        self.got: list[Message] = []
        self._arrived = asyncio.Event()
        config = ConnectionConfig(max_messages_in_flight=1)
        handlers: dict[str, Any] = dict.fromkeys(names, self._handle)
        served = connection(client=False, handlers=handlers, config=config, **server)
        self.client = connection(client=True, config=config)
        memory_pair(served, self.client)

    def _handle(self, message: Message) -> None:
        self.got.append(message)
        self._arrived.set()

    async def arrived(self) -> None:
        """Until a message has reached the handler since the last call."""
        await self._arrived.wait()
        self._arrived.clear()


def client_of(offer: dict[str, Any]) -> Connection:
    """A client connected to a server offering ``offer``."""
    server = connection(client=False, offer=offer)
    client = connection(client=True)
    memory_pair(server, client)
    return client
