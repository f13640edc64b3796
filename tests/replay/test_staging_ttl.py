"""Staged uploads without activity for ``staging_ttl`` seconds are dropped (docs/replay.md, *Owners*):
what no publish will ever name (a writer that never comes back) does not stay for the server's
lifetime. On a virtual clock: no real sleeps."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rstreams.observe._families import families
from rstreams.replay import RemoteLogError, ReplayLog, ReplayServer, request_json, upload
from rstreams.replay._cursor import LogLookupError
from rstreams.replay._staging import STAGING_TTL, Owner, Staging, check_ttl
from testkit.clock import VirtualLoop

pytestmark = pytest.mark.timeout(60)

TTL = 100.0


class Clock:
    """Seconds that move only when the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def staging_on(clock: Clock, ttl: float | None = TTL) -> Staging:
    return Staging(ReplayLog("out", capacity=10), 10_000, ttl, clock)


def test_an_idle_upload_is_dropped_logged_with_its_owner_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    staging = staging_on(clock)
    gone = staging.begin("t1", Owner(writer="w", batch=3, run="r"))
    staging.add("t1", [b"ab", b"c"], gone)
    gone.set_result(2)
    kept = staging.begin("t2")
    staging.add("t2", [b"d"], kept)
    clock.now = 60.0
    staging.add("t2", [b"e"], kept)  # rows arriving: activity
    clock.now = 100.5
    staging.future("t2")  # a NAME?staged=T: activity, and the check (t1: idle for 100.5 s)
    assert staging.staged() == {"t2": (2, None)}
    assert staging.staged_bytes == 2 and staging.expired == 1 and staging.dropped == 0
    (said,) = [r.getMessage() for r in caplog.records if r.name == "rstreams.replay"]
    assert said == (
        "sink log 'out': upload 't1' (writer 'w', batch 3, run 'r'; 2 rows) dropped after 100 s "
        "without activity (staging_ttl=)"
    )
    clock.now = 200.0
    with caplog.at_level(logging.WARNING, "rstreams.replay"):
        assert staging.expire() == 0  # t2's last activity: 100.5
    clock.now = 201.0
    assert staging.expire() == 1 and staging.staged() == {} and staging.staged_bytes == 0
    assert "upload 't2' (no owner; 2 rows)" in caplog.records[-1].getMessage()


def test_a_publish_naming_an_upload_is_activity_and_one_expired_is_not_staged() -> None:
    clock = Clock()
    staging = staging_on(clock)
    for token in ("a", "b"):
        staging.add(token, [token.encode()], staging.begin(token))
    clock.now = 90.0
    assert staging.publish("w", 0, ["a"]).result(5) == {"published": True, "count": 1}
    staging.add("c", [b"c"], staging.begin("c"))
    clock.now = 150.0
    assert staging.staged() == {"c": (1, None)}  # b: idle for 150 s; a: published (named at 90)
    with pytest.raises(LogLookupError, match=r"upload 'b' is not staged here: .*dropped after staging_ttl="):
        staging.publish("w", 1, ["c", "b"]).result(5)
    assert staging.expired == 1 and staging.staged() == {"c": (1, None)}


def test_a_publish_takes_an_idle_upload_not_yet_dropped() -> None:
    """Between two checks an upload idle past the ttl is still there: a publish naming it is
    activity, and publishes it."""
    clock = Clock()
    staging = staging_on(clock)
    staging.add("a", [b"a"], staging.begin("a"))
    clock.now = 100.0
    staging.begin("b")  # checked: a is not idle past the ttl yet
    clock.now = 100.5  # it is, but the next check is due at 101
    assert staging.publish("w", 0, ["a"]).result(5) == {"published": True, "count": 1}


def test_an_upload_idle_while_it_runs_fails_and_its_late_rows_are_refused() -> None:
    """A client that connected and then went quiet: its count fails with the reason."""
    clock = Clock()
    staging = staging_on(clock)
    running = staging.begin("t", Owner(writer="w", batch=0))
    staging.add("t", [b"a"], running)
    clock.now = 101.0
    assert staging.expire() == 1
    with pytest.raises(LogLookupError, match=r"upload 't' \(writer 'w', batch 0; 1 rows\) dropped after 100"):
        running.result(0)
    with pytest.raises(LogLookupError, match="was discarded, published or began again"):
        staging.add("t", [b"b"], running)
    assert staging.staged() == {} and staging.staged_bytes == 0


def test_a_wait_for_an_upload_that_never_comes_ends_too() -> None:
    clock = Clock()
    staging = staging_on(clock)
    waiting = staging.future("never")
    clock.now = 101.0
    assert staging.expire() == 1
    with pytest.raises(LogLookupError, match="upload 'never' \\(no owner; 0 rows\\) dropped"):
        waiting.result(0)


def test_the_check_runs_at_most_once_a_second_at_requests() -> None:
    clock = Clock()
    staging = staging_on(clock)
    staging.add("t", [b"a"], staging.begin("t"))
    clock.now = 100.0
    staging.begin("u")  # checked now: t is not idle past the ttl yet
    clock.now = 100.7
    assert "t" in staging.staged()  # 0.7 s since the last check: not checked again
    clock.now = 101.0
    assert "t" not in staging.staged()


@pytest.mark.parametrize("ttl", [None, 0])
def test_no_ttl_keeps_idle_uploads(ttl: float | None) -> None:
    clock = Clock()
    staging = staging_on(clock, ttl)
    staging.add("t", [b"a"], staging.begin("t"))
    clock.now = 10 * STAGING_TTL
    assert staging.expire() == 0 and staging.staged() == {"t": (1, None)}


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "600", True])
def test_a_bad_ttl_is_refused_naming_the_option(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"staging_ttl= needs seconds >= 0 \(None or 0: never\), got"):
        check_ttl(bad)
    with pytest.raises(ValueError, match="staging_ttl="):
        ReplayServer({}, sinks={"out": ReplayLog("out", capacity=1)}, staging_ttl=bad)


def test_the_server_drops_idle_uploads_at_requests_and_counts_them(serve: Any) -> None:
    server = serve({}, sinks={"out": ReplayLog("out", capacity=10)}, staging_ttl=TTL, metrics=True)
    clock = Clock()
    server._stagings["out"]._clock = clock
    assert upload(server.url, "out", "t1", [b"a"], writer="w", batch=0, run="r") == 1
    assert server.metrics()["replay"]["logs"]["out"]["expired_uploads"] == 0
    clock.now = 101.0
    request_json(server.url, "out?discard=")  # any request on the sink log checks
    assert server.sink_statistics("out") == {"published": 0, "refused": 0, "dropped": 0, "expired": 1}
    (expired,) = [f for f in families(server.metrics()) if f.name == "rstreams_replay_expired_uploads"]
    assert (expired.kind, expired.samples) == ("counter", [(("out",), 1)])  # /metrics: ..._total
    with pytest.raises(RemoteLogError, match="upload 't1' is not staged here"):
        request_json(server.url, "out?publish=0&writer=w&tokens=t1")


def test_the_server_timer_drops_idle_uploads_of_an_idle_server() -> None:
    """No request comes: the server's timer checks every ttl/8 s (1 s to 60 s)."""
    server = ReplayServer({}, sinks={"out": ReplayLog("out", capacity=10)}, staging_ttl=TTL)
    clock = Clock()
    staging = server._stagings["out"]
    staging._clock = clock
    staging.add("t", [b"a"], staging.begin("t"))
    loop, server.loop = server.loop, VirtualLoop()  # type: ignore[assignment]
    try:
        server._expire(TTL / 8)
        clock.now = 101.0
        server.loop.advance(TTL / 8)  # type: ignore[attr-defined]
        assert staging.staged() == {} and staging.expired == 1
        assert server.loop.pending == 1  # type: ignore[attr-defined]  # the next check
    finally:
        server.loop = loop
        server.stop()
