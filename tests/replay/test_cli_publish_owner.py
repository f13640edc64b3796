"""``rstreams publish`` names its upload's owner (PROTOCOL.md §21.8): a run of the same ``--writer``
drops what one killed before its publish left staged, and ``--batch`` publishes once."""

from __future__ import annotations

import io
import os
import sys
import threading
from typing import Any

import pytest

from rstreams import _cli_logs
from rstreams.api import Publisher
from rstreams.cli import main
from rstreams.replay import ReplayLog, fetch_range, upload
from rstreams.wire import ConnectionConfig
from testkit import patience

pytestmark = pytest.mark.timeout(60)


WAYS = {"channel": None, "reversed": ConnectionConfig(disabled_extensions=frozenset({8, 9}))}
"""How uploads travel: on a channel, or as the server's subscription (a server without channels)."""


def serving(
    serve: Any, capacity: int = 100, config: ConnectionConfig | None = None
) -> tuple[Any, ReplayLog, list[dict[str, str]]]:
    """A server with the sink log ``out``; the parameters of each publish it gets."""
    out = ReplayLog("out", capacity=capacity)
    publishes: list[dict[str, str]] = []
    route: list[Any] = []

    def spy(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        if "publish" in params:
            publishes.append(params)
        answer: Publisher[Any] | None = route[0](path, params)
        return answer

    server = serve({}, sinks={"out": out}, offer=spy, config=config)
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
    assert server._stagings["out"]._runs == {}  # a writer never named again names no run


def run_meanwhile(monkeypatch: pytest.MonkeyPatch, lines: bytes, *options: str) -> list[int]:
    """Runs ``publish URL out --writer nightly OPTIONS`` with ``lines`` whole between the next
    ``publish``'s upload and its publish request; its exit status, once it ran."""
    import rstreams.replay

    ask = rstreams.replay.request_json
    status: list[int] = []

    def meanwhile(url: str, name: str, *args: Any, **kwargs: Any) -> Any:
        if "publish=" in name and not status:
            status.append(-1)  # (its own publish comes here too)
            status[0] = publish(monkeypatch, url, lines, "--writer", "nightly", *options)
        return ask(url, name, *args, **kwargs)

    monkeypatch.setattr(rstreams.replay, "request_json", meanwhile)
    return status


@pytest.mark.parametrize("config", list(WAYS.values()), ids=list(WAYS))
def test_two_publishes_of_one_writer_at_once_both_publish_each_line_once(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: Any
) -> None:
    """A second ``publish --writer W`` runs whole between the first one's upload and its publish:
    its new run drops the first one's upload, which the first one finds gone at its publish; it
    says why, naming --writer, and uploads its lines again (naming no run, so that no other
    invocation's run drops them), and publishes them once."""
    server, out, publishes = serving(serve, config=config)
    second = run_meanwhile(monkeypatch, b"second\n")
    assert publish(monkeypatch, server.url, b"first 1\nfirst 2\n", "--writer", "nightly") == 0
    assert second == [0]
    assert fetch_range(server.url, "out", 0, out.end) == [b"second", b"first 1", b"first 2"]
    assert capsys.readouterr().err == (
        "published 1 of 1 lines on 'out'\n"
        "rstreams publish: another rstreams publish --writer 'nightly' started after this one's upload "
        "and dropped it (each invocation is a new run of its --writer, and a writer's new run drops what "
        "its other runs staged), or the server restarted: uploaded its 2 lines again\n"
        "published 2 of 2 lines on 'out'\n"
    )
    assert server._stagings["out"].staged() == {}
    theirs, *ours = [p["publish"] for p in publishes]
    assert ours == [ours[0]] * 2 and theirs != ours[0]  # the first one's batch, refused, then published


def test_two_publishes_of_one_batch_at_once_publish_it_once(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both with --batch 7: the one that publishes first publishes the batch; the other one says it
    was published before (nothing uploaded again, nothing appended twice)."""
    server, out, _ = serving(serve)
    second = run_meanwhile(monkeypatch, b"second\n", "--batch", "7")
    assert publish(monkeypatch, server.url, b"first\n", "--writer", "nightly", "--batch", "7") == 0
    assert second == [0]
    assert fetch_range(server.url, "out", 0, out.end) == [b"second"]
    assert capsys.readouterr().err == (
        "published 1 of 1 lines on 'out'\n"
        "batch 7 of writer 'nightly' was published on 'out' before: nothing appended (1 lines uploaded, "
        "dropped)\n"
    )
    assert server._stagings["out"].staged() == {}


@pytest.mark.parametrize("config", list(WAYS.values()), ids=list(WAYS))
def test_a_publish_whose_upload_is_dropped_as_it_runs_uploads_every_line_again(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: Any
) -> None:
    """The second ``publish --writer W`` starts while the first one's lines still arrive: its run
    drops the first one's upload, whose next rows are refused; the first one uploads every line
    again, those it had sent and those still to come from standard input."""
    server, out, _ = serving(serve, capacity=2000, config=config)
    staging = server._stagings["out"]
    add, staged = staging.add, threading.Event()

    def adding(*args: Any) -> None:
        add(*args)
        staged.set()

    monkeypatch.setattr(staging, "add", adding)
    monkeypatch.setattr(_cli_logs, "_KEPT_IN_MEMORY", 256)  # the lines kept go to disk
    reading, writing = os.pipe()
    stdin = io.TextIOWrapper(open(reading, "rb"))  # noqa: SIM115 (closed once the publish ended)
    monkeypatch.setattr(sys, "stdin", stdin)
    status: list[int] = []
    first = threading.Thread(
        target=lambda: status.append(main(["publish", server.url, "out", "--writer", "nightly"]))
    )
    first.start()
    with open(writing, "wb") as pipe:
        pipe.write(b"".join(b"%d\n" % i for i in range(1024)))  # a packed element; 2 x 512 reversed
        pipe.flush()
        assert patience.wait(staged)  # the first one's upload runs, its standard input still open
        assert publish(monkeypatch, server.url, b"second\n", "--writer", "nightly") == 0
        pipe.write(b"1024\n1025\n")
    patience.join(first)
    stdin.close()
    assert status == [0]
    assert fetch_range(server.url, "out", 0, out.end) == [b"second", *(b"%d" % i for i in range(1026))]
    err = capsys.readouterr().err
    assert err.endswith(
        "rstreams publish: another rstreams publish --writer 'nightly' started while this one uploaded, "
        "and dropped its upload (each invocation is a new run of its --writer, and a writer's new run "
        "drops what its other runs staged): uploaded its 1026 lines again\n"
        "published 1026 of 1026 lines on 'out'\n"
    ), err
    assert staging.staged() == {}


def test_an_upload_dropped_twice_exits_1_saying_nothing_was_published(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Should the upload made again be dropped too, nothing was published: exit 1, saying so."""
    import rstreams.replay

    def dropped(url: str, log: str, token: str, rows: Any, *args: Any, **kwargs: Any) -> int:
        assert list(rows) == [b"a", b"b"]
        message = f"upload {token!r} was discarded, published or began again while its rows arrived"
        raise rstreams.replay.RemoteLogError(f"LogLookupError: sink log 'out': {message}; not staged")

    monkeypatch.setattr(rstreams.replay, "upload", dropped)
    assert publish(monkeypatch, "tcp://127.0.0.1:1", b"a\nb\n", "--writer", "nightly") == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "rstreams publish: tcp://127.0.0.1:1 dropped this invocation's upload twice: another rstreams "
        "publish --writer 'nightly' started while this one uploaded"
    ), err
    assert err.endswith(
        "nothing of its 2 lines was published: publish them again (one invocation per --writer at a time)\n"
    ), err


def test_the_lines_kept_for_an_upload_made_again_go_to_disk_past_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Standard input's lines are kept so that a dropped upload can be made again: in memory up
    to ``_KEPT_IN_MEMORY`` bytes, on disk past it (a large input costs no more memory than
    streaming it); made again, every line comes back in order, then the lines not read yet."""
    monkeypatch.setattr(_cli_logs, "_KEPT_IN_MEMORY", 64)
    lines = _cli_logs._Read(iter([b"a\r\n", b"b\rc\n", *(b"%d\n" % i for i in range(100)), b"last"]))
    read = [next(lines) for _ in range(50)]
    assert read[:2] == [b"a", b"b\rc"] and lines.count == 50
    assert lines._kept._rolled  # type: ignore[attr-defined]
    assert list(lines.again()) == [b"a", b"b\rc", *(b"%d" % i for i in range(100)), b"last"]
    assert lines.count == 103
    lines.close()
