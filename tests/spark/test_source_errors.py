"""The Spark source's driver side names a failed replay log by type, and what went wrong with
it (no Spark session)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

import rstreams
from rstreams.replay import LogEndedError, RemoteLogError, ReplayLog
from rstreams.spark._source import RStreamsStreamReader

pytestmark = pytest.mark.timeout(30)


def test_a_log_that_failed_upstream_fails_the_batch_with_log_ended_error(serve: Any) -> None:
    """A log whose producer failed, with nothing more to read, is a LogEndedError (still a
    RuntimeError) carrying the log's error, not a plain RuntimeError."""
    log = ReplayLog("nums", capacity=10).feed(rstreams.error(ValueError("the sensor broke")))
    server = serve({"nums": log})
    schema = StructType([StructField("seq", LongType())])
    source = RStreamsStreamReader({"url": server.url, "publisher": "nums"}, schema)
    with pytest.raises(
        LogEndedError, match=r"replay log 'nums' at .* failed upstream: .*the sensor broke"
    ) as ended:
        source.latestOffset(source.initialOffset(), ReadAllAvailable())
    assert isinstance(ended.value, RuntimeError)


def test_a_log_restarted_empty_under_a_query_fails_it_and_keeps_its_elements(serve: Any) -> None:
    """A server restarted with a memory log (not its file) holds fewer positions than the query
    read: the next micro-batch fails saying so and what to do, and does not trim the new log's
    elements unread (a commit used to be cut to the log's end, trimming them)."""
    schema = StructType([StructField("seq", LongType())])
    before = ReplayLog("nums", capacity=100)
    before.append([b'{"seq": %d}' % i for i in range(50)])
    first = serve({"nums": before})
    url = first.url
    options = {"url": url, "publisher": "nums"}
    reader = RStreamsStreamReader(options, schema)
    batch = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert batch["position"] == 50
    reader.commit(batch)
    first.stop()
    after = ReplayLog("nums", capacity=100)
    after.append([b'{"seq": %d}' % i for i in range(1000, 1010)])
    serve({"nums": after}, url=url)
    restarted = RStreamsStreamReader(options, schema)  # the driver restarted from its checkpoint
    with pytest.raises(RemoteLogError, match=r"commits position 50, past the log's end 10") as failed:
        restarted.latestOffset(batch, ReadAllAvailable())
    assert "serve the log from a file (ReplayLog(path=...))" in str(failed.value)
    assert after.info()["first"] == 0 and after.end == 10
