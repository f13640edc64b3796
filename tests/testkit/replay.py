"""The replay tests' and the Spark tests' shared fixture: ReplayServers stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rstreams.replay import ReplayServer

Serve = Callable[..., ReplayServer]
"""The type of the ``serve`` fixture: ``serve(logs, **ReplayServer options)``."""


@pytest.fixture
def serve() -> Iterator[Serve]:
    """``serve(logs, sinks=..., offer=...)`` starts a ReplayServer, stopped after the test."""
    servers: list[ReplayServer] = []

    def start(logs: Any, **kwargs: Any) -> ReplayServer:
        server = ReplayServer(logs, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
