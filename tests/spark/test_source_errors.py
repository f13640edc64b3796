"""The Spark source's driver side names a failed replay log by type, and what went wrong with
it (no Spark session)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

import rstreams
from rstreams.replay import LogEndedError, RemoteLogError, ReplayLog
from rstreams.spark._source import RStreamsStreamReader

pytestmark = pytest.mark.timeout(30)
SCHEMA = StructType([StructField("seq", LongType())])


def test_a_log_that_failed_upstream_fails_the_batch_with_log_ended_error(serve: Any) -> None:
    """A log whose producer failed, with nothing more to read, is a LogEndedError (still a
    RuntimeError) carrying the log's error, not a plain RuntimeError."""
    log = ReplayLog("nums", capacity=10).feed(rstreams.error(ValueError("the sensor broke")))
    server = serve({"nums": log})
    source = RStreamsStreamReader({"url": server.url, "publisher": "nums"}, SCHEMA)
    with pytest.raises(
        LogEndedError, match=r"replay log 'nums' at .* failed upstream: .*the sensor broke"
    ) as ended:
        source.latestOffset(source.initialOffset(), ReadAllAvailable())
    assert isinstance(ended.value, RuntimeError)


def restarted(
    serve: Any, before: ReplayLog, after: Callable[[], ReplayLog]
) -> tuple[dict[str, Any], dict[str, Any], ReplayLog]:
    """A query read and committed the 50 positions of ``before`` (filled here); its server then
    stopped, ``before`` was closed, and a new server serves ``after()`` at the same URL: the
    query's options, its checkpointed offset, and the new log."""
    before.append([b'{"seq": %d}' % i for i in range(50)])
    first = serve({"nums": before})
    url = first.url
    options = {"url": url, "publisher": "nums"}
    reader = RStreamsStreamReader(options, SCHEMA)
    batch = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert batch == {"position": 50, "reader": batch["reader"], "epoch": before.epoch}
    reader.commit(batch)
    first.stop()
    before.close()
    log = after()
    serve({"nums": log}, url=url)
    return options, batch, log


def restarted_in_memory(serve: Any, rows: int) -> tuple[dict[str, Any], dict[str, Any], ReplayLog]:
    """:func:`restarted` from a memory log to a new memory log of ``rows`` rows (another epoch)."""

    def refilled() -> ReplayLog:
        log = ReplayLog("nums", capacity=100)
        log.append([b'{"seq": %d}' % i for i in range(1000, 1000 + rows)])
        return log

    options, batch, after = restarted(serve, ReplayLog("nums", capacity=100), refilled)
    assert after.epoch != batch["epoch"]
    return options, batch, after


@pytest.mark.parametrize("rows", [10, 80])
def test_a_log_restarted_in_memory_under_a_query_fails_it_and_keeps_its_elements(
    serve: Any, rows: int
) -> None:
    """A server restarted with a memory log (not its file): the log's epoch is another, so the
    query's next micro-batch fails saying the log was restarted and what to do, and nothing of
    the new log is trimmed, whether it holds fewer positions than the query read or, refilled
    since, more (a commit of 50 would then have trimmed 50 rows the query never saw)."""
    options, batch, after = restarted_in_memory(serve, rows)
    restarted = RStreamsStreamReader(options, SCHEMA)  # the driver restarted from its checkpoint
    named = r"LogEpochError: replay log 'nums': epoch '[0-9a-f]{16}' is not this log's"
    with pytest.raises(RemoteLogError, match=named) as failed:
        restarted.latestOffset(batch, ReadAllAvailable())
    said = str(failed.value)
    assert "the log was restarted" in said and "the rows between the checkpoint and now may differ" in said
    assert "serve the log from a file (ReplayLog(path=...))" in said
    assert after.info()["first"] == 0 and after.end == rows and after.readers() == {}
    (part, *_) = restarted.partitions({**batch, "position": 40}, batch)  # Spark replays a logged batch:
    assert part.epoch == batch["epoch"]
    with pytest.raises(RemoteLogError, match="LogEpochError"):  # its ranges are not read from the new log
        list(restarted.read(part))
    assert after.readers() == {}


def test_a_checkpoint_without_an_epoch_still_meets_a_log_restarted_empty(serve: Any) -> None:
    """An offset of an older checkpoint has no epoch: it is read as it is; a memory log restarted
    with fewer positions still refuses its commit past the end (nothing trimmed)."""
    options, batch, after = restarted_in_memory(serve, 10)
    older = {"position": batch["position"], "reader": batch["reader"]}
    restarted = RStreamsStreamReader(options, SCHEMA)
    with pytest.raises(RemoteLogError, match=r"commits position 50, past the log's end 10") as failed:
        restarted.latestOffset(older, ReadAllAvailable())
    assert "serve the log from a file (ReplayLog(path=...))" in str(failed.value)
    assert after.info()["first"] == 0 and after.end == 10


def test_a_file_backed_log_keeps_its_epoch_across_a_restart_so_the_query_goes_on(
    serve: Any, tmp_path: Path
) -> None:
    """A file-backed log restarted (a new ReplayLog on the same directory, a new server) has the
    same epoch: the query's checkpointed offset goes on, nothing refused."""

    def reopened() -> ReplayLog:
        log = ReplayLog("nums", capacity=100, path=tmp_path / "nums")
        log.append([b'{"seq": %d}' % i for i in range(50, 70)])
        return log

    kept = ReplayLog("nums", capacity=100, path=tmp_path / "nums")
    options, batch, after = restarted(serve, kept, reopened)
    assert after.epoch == batch["epoch"]
    again = RStreamsStreamReader(options, SCHEMA)
    parts = again.partitions({**batch, "position": 0}, batch)
    assert [(p.start, p.end, p.epoch) for p in parts] == [(0, 25, after.epoch), (25, 50, after.epoch)]
    going_on = again.latestOffset(batch, ReadAllAvailable())
    assert going_on == {"position": 70, "reader": batch["reader"], "epoch": after.epoch}
    assert after.readers() == {batch["reader"]: 50}
    after.close()
