"""The replay tests' and the Spark tests' shared helpers: ReplayServers stopped after each test
(the ``serve`` fixture), and ``rstreams serve`` in a process of its own (:func:`serving_sink`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from rstreams.replay import ReplayServer
from testkit import patience

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


@contextmanager
def serving_sink(url: str, *extra: str) -> Iterator[str]:
    """``rstreams serve URL nums --sink results ...`` in a process of its own (its sink log in
    memory unless ``extra`` has ``--path``); its URL. Stopped (SIGTERM) at the end."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", url, "nums", "--sink", "results", *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        yield patience.child_line(server, "rstreams serve's announcement").decode().split(" on ")[-1].strip()
    finally:
        patience.stop_child(server, 20)
