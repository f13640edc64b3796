"""Uploads staged on a sink log when its server restarts (docs/replay.md, *Sink logs*): each is
published once or refused with an error saying what happened, never appended twice nor lost
without a word. Staging lives in the server's memory, whether the sink log is in memory or in
files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rstreams.replay import RemoteLogError, ReplayLog, request_json, upload
from testkit.replay import Serve

pytestmark = pytest.mark.timeout(60)


def test_a_stopped_server_started_again_publishes_what_was_staged_once(serve: Serve) -> None:
    """The same ReplayServer stopped and started (the same log objects): the staged upload is still
    there, published once; the re-run publish appends nothing."""
    out = ReplayLog("out", capacity=100, evict=True)
    server = serve({}, sinks={"out": out})
    assert upload(server.url, "out", "t1", [b"a", b"b"]) == 2
    server.stop()
    server.start()
    publish = f"out?publish=0&writer=w&tokens=t1&epoch={out.epoch}"
    assert request_json(server.url, publish) == {"published": True, "count": 2}
    assert request_json(server.url, publish) == {"published": False, "count": 0}
    assert out.end == 2


def test_a_file_backed_sink_log_restarted_refuses_a_publish_of_uploads_staged_before(
    serve: Serve, tmp_path: Path
) -> None:
    """A new server process on the same directory (the same epoch): what was staged before is gone,
    so the publish is refused saying so and appends nothing; the batch uploaded again is published
    once."""
    out = ReplayLog("out", capacity=100, path=tmp_path / "out")
    first = serve({}, sinks={"out": out})
    url = first.url
    assert upload(url, "out", "t1", [b"a", b"b"]) == 2
    first.stop()
    out.close()
    reopened = ReplayLog("out", capacity=100, path=tmp_path / "out")
    serve({}, sinks={"out": reopened}, url=url)
    assert reopened.epoch == out.epoch
    with pytest.raises(RemoteLogError) as refused:
        request_json(url, f"out?publish=0&writer=w&tokens=t1&epoch={out.epoch}")
    said = str(refused.value)
    assert "LogLookupError: sink log 'out': upload 't1' is not staged here" in said
    assert "a restart of the server since the upload lost it" in said
    assert "batch 0 of writer 'w' is not published, nothing of it was appended" in said
    assert reopened.end == 0
    assert upload(url, "out", "t2", [b"a", b"b"]) == 2  # the batch re-run
    assert request_json(url, "out?publish=0&writer=w&tokens=t2") == {"published": True, "count": 2}
    assert request_json(url, "out?publish=0&writer=w&tokens=t2") == {"published": False, "count": 0}
    assert reopened.end == 2
    reopened.close()


def test_uploads_staged_on_a_restarted_memory_log_are_dropped_with_the_publish_refused(
    serve: Serve,
) -> None:
    """A writer recorded the log's epoch, the server restarted with a new memory log, and the
    writer's tasks staged the batch on it: the publish naming the old epoch is refused, and the
    uploads it named are dropped then (no publish could ever take them), saying so; nothing is
    appended, and the other uploads stay staged."""
    before = ReplayLog("out", capacity=100, evict=True)
    first = serve({}, sinks={"out": before})
    url = first.url
    first.stop()
    after = ReplayLog("out", capacity=100, evict=True)
    server = serve({}, sinks={"out": after}, url=url)
    assert upload(url, "out", "t1", [b"a", b"b"]) == 2
    assert upload(url, "out", "t2", [b"c"]) == 1
    assert upload(url, "out", "other", [b"x"]) == 1
    with pytest.raises(RemoteLogError) as refused:
        request_json(url, f"out?publish=3&writer=w&tokens=t1,t2,gone&epoch={before.epoch}")
    said = str(refused.value)
    assert said.startswith(f"LogEpochError: replay log 'out': epoch '{before.epoch}' is not this log's")
    assert "nothing was published, and the 2 upload(s) the publish named, staged on the log since" in said
    assert after.end == 0
    assert server.sink_statistics("out") == {"published": 0, "refused": 0, "dropped": 0, "expired": 0}
    with pytest.raises(RemoteLogError, match="upload 't1' is not staged here"):
        request_json(url, "out?publish=3&writer=w&tokens=t1")
    assert request_json(url, "out?publish=3&writer=w&tokens=other") == {"published": True, "count": 1}
    assert after.end == 1
    no_uploads = r"LogEpochError: .*; nothing was done$"  # a publish naming no uploads: as before
    with pytest.raises(RemoteLogError, match=no_uploads):
        request_json(url, f"out?publish=4&writer=w&epoch={before.epoch}")
