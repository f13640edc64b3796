"""The stream reader's driver-side methods called directly against a ReplayServer (no Spark session).

Spark calls ``initialOffset``, ``latestOffset`` and ``commit`` in its driver runner; here the
test calls them, so admission control and reader registration are checked in milliseconds.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

from rstreams.replay import ReplayLog
from rstreams.spark import arrow_ipc, arrow_rows
from rstreams.spark._source import RStreamsStreamReader

pytestmark = pytest.mark.timeout(30)

SCHEMA = StructType([StructField("seq", LongType())])


def batches(*sizes: int) -> list[bytes]:
    return [arrow_ipc(pa.record_batch({"seq": pa.array(range(n))})) for n in sizes]


def reader(url: str, log: str, **options: Any) -> RStreamsStreamReader:
    return RStreamsStreamReader(
        {"url": url, "publisher": log, **{k: str(v) for k, v in options.items()}}, SCHEMA
    )


def test_max_records_counts_rows_of_arrow_elements(serve: Any) -> None:
    """codec=arrow, maxRecordsPerBatch=25, elements of 10, 10, 10, 40, 5 rows: batches of 20, 10, 40, 5."""
    log = ReplayLog("arrow", capacity=10, rows=arrow_rows)
    log.append(batches(10, 10, 10, 40, 5))
    server = serve({"arrow": log})
    source = reader(server.url, "arrow", codec="arrow", maxRecordsPerBatch=25)
    limit = source.getDefaultReadLimit()
    offset = source.initialOffset()
    ends = []
    while True:
        end = source.latestOffset(offset, limit)
        if end == offset:
            break
        ends.append(end["position"])
        source.commit(end)
        offset = end
    assert ends == [2, 3, 4, 5]  # an element past the bound still makes a batch of its own
    assert source.latestOffset(offset, ReadAllAvailable()) == offset


def test_each_fresh_query_is_a_reader_registered_before_it_reads(serve: Any) -> None:
    """initialOffset registers a new reader name once (Spark asks twice); offsets carry it."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"1"] * 10)
    server = serve({"nums": log})
    first, second = reader(server.url, "nums"), reader(server.url, "nums", readerName="mine")
    start = first.initialOffset()
    assert first.initialOffset() == start and list(start) == ["position", "reader"]
    assert second.initialOffset() == {"position": 0, "reader": "mine"}
    assert log.readers() == {start["reader"]: 0, "mine": 0}
    end = first.latestOffset(start, ReadAllAvailable())
    assert end == {"position": 10, "reader": start["reader"]}
    first.commit(end)
    assert log.first == 0  # "mine" has committed nothing yet
    old = reader(server.url, "nums")
    assert old.latestOffset({"position": 3}, ReadAllAvailable()) == {"position": 10}  # an old checkpoint


def test_element_and_row_bounds_are_exclusive() -> None:
    """maxElementsPerBatch and maxRecordsPerBatch: one or the other."""
    with pytest.raises(ValueError, match="not both"):
        reader("tcp://127.0.0.1:1", "p", maxElementsPerBatch=1, maxRecordsPerBatch=1)
    assert reader("tcp://127.0.0.1:1", "p", maxElementsPerBatch=15).getDefaultReadLimit().max_rows == 15  # type: ignore[attr-defined]


def test_max_records_on_an_arrow_log_that_counts_no_rows_says_what_to_do(serve: Any) -> None:
    """A row bound needs the log's row count: without it the error names both ways out."""
    log = ReplayLog("plain", capacity=10)
    log.append(batches(10, 10))
    server = serve({"plain": log})
    source = reader(server.url, "plain", codec="arrow", maxRecordsPerBatch=25)
    with pytest.raises(ValueError, match=r"rows=rstreams\.spark\.arrow_rows.*maxElementsPerBatch"):
        source.latestOffset(source.initialOffset(), source.getDefaultReadLimit())
