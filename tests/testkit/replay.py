"""The replay tests' and the Spark tests' shared fixture: ReplayServers stopped after each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rstreams.replay import ReplayServer


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(logs, sinks=..., offer=...)`` starts a ReplayServer, stopped after the test."""
    servers: list[ReplayServer] = []

    def start(logs: Any, **kwargs: Any) -> ReplayServer:
        server = ReplayServer(logs, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
