"""The Spark source's driver side names a failed replay log by type (no Spark session)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

import rstreams
from rstreams.replay import LogEndedError, ReplayLog
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
