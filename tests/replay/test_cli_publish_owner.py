"""``rstreams publish`` names its upload's owner (PROTOCOL.md §21.8): a run of the same ``--writer``
drops what one killed before its publish left staged, and ``--batch`` publishes once."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest

from rstreams.api import Publisher
from rstreams.cli import main
from rstreams.replay import ReplayLog, fetch_range, upload

pytestmark = pytest.mark.timeout(60)


def serving(serve: Any, **kwargs: Any) -> tuple[Any, ReplayLog, list[dict[str, str]]]:
    """A server with the sink log ``out``; the parameters of each publish it gets."""
    out = ReplayLog("out", capacity=100)
    publishes: list[dict[str, str]] = []
    route: list[Any] = []

    def spy(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        if "publish" in params:
            publishes.append(params)
        answer: Publisher[Any] | None = route[0](path, params)
        return answer

    server = serve({}, sinks={"out": out}, offer=spy, **kwargs)
    route.append(server._route)
    return server, out, publishes


def publish(monkeypatch: pytest.MonkeyPatch, url: str, lines: bytes, *options: str) -> int:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    return main(["publish", url, "out", *options])


def test_a_run_of_a_writer_drops_what_its_killed_run_left_staged(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, out, _ = serving(serve)
    staging = server._stagings["out"]
    # a run of the job killed between its upload and its publish
    assert upload(server.url, "out", "killed", [b"old"], writer="nightly", batch=5, run="r0") == 1
    assert publish(monkeypatch, server.url, b"one\ntwo\n", "--writer", "nightly") == 0
    assert staging.staged() == {} and server.sink_statistics("out")["dropped"] == 1
    assert fetch_range(server.url, "out", 0, out.end) == [b"one", b"two"]


def test_a_batch_is_published_once(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, out, publishes = serving(serve)
    options = ("--writer", "nightly export", "--batch", "20261130")
    assert publish(monkeypatch, server.url, b"a\nb\n", *options) == 0
    assert "published 2 of 2 lines on 'out'" in capsys.readouterr().err
    assert publish(monkeypatch, server.url, b"a\nb\n", *options) == 0  # a re-run after the publish
    assert capsys.readouterr().err == (
        "batch 20261130 of writer 'nightly export' was published on 'out' before: nothing appended "
        "(2 lines uploaded, dropped)\n"
    )
    assert fetch_range(server.url, "out", 0, out.end) == [b"a", b"b"]
    assert [(p["writer"], p["publish"]) for p in publishes] == [("nightly export", "20261130")] * 2
    assert server._stagings["out"].staged() == {}


def test_without_options_each_run_is_a_writer_and_batch_of_its_own(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, out, publishes = serving(serve)
    assert publish(monkeypatch, server.url, b"x\n") == 0
    assert publish(monkeypatch, server.url, b"x\n") == 0
    assert fetch_range(server.url, "out", 0, out.end) == [b"x", b"x"]
    first, second = publishes
    assert first["writer"] != second["writer"] and first["writer"].startswith("cli-")
    assert first["publish"] != second["publish"]
