"""The stream reader's driver-side methods called directly against a ReplayServer (no Spark session).

Spark calls ``initialOffset``, ``latestOffset`` and ``commit`` in its driver runner; here the
test calls them, so admission control and reader registration are checked in milliseconds.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

import rstreams
from rstreams.replay import RemoteLogError, ReplayLog
from rstreams.spark import arrow_ipc, arrow_rows
from rstreams.spark._options import OptionError
from rstreams.spark._source import RangePartition, RStreamsBatchReader, RStreamsStreamReader

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


def test_a_fresh_query_holds_the_log_until_batch_0_is_logged_then_commits(serve: Any) -> None:
    """initialOffset only holds (a pending reader, once: Spark asks twice); latestOffset renews the
    hold; partitions of batch 0 (logged by then) make the reader a committed one."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"1"] * 10)
    server = serve({"nums": log})
    first, second = reader(server.url, "nums"), reader(server.url, "nums", readerName="mine")
    start = first.initialOffset()
    assert first.initialOffset() == start and list(start) == ["position", "reader", "epoch"]
    assert start["epoch"] == log.epoch
    assert second.initialOffset() == {"position": 0, "reader": "mine", "epoch": log.epoch}
    assert log.pending() == {start["reader"]: 0, "mine": 0} and log.readers() == {}
    end = first.latestOffset(start, ReadAllAvailable())
    assert end == {"position": 10, "reader": start["reader"], "epoch": log.epoch}
    assert log.readers() == {}  # no checkpointed offset yet: still pending
    assert [(p.start, p.end) for p in first.partitions(start, end)] == [(0, 5), (5, 10)]
    assert log.readers() == {start["reader"]: 0} and log.pending() == {"mine": 0}
    first.commit(end)
    assert log.first == 0  # "mine" holds position 0
    old = reader(server.url, "nums")
    # Older checkpoints: no reader, no epoch (the next offset has the log's).
    assert old.latestOffset({"position": 3}, ReadAllAvailable()) == {"position": 10, "epoch": log.epoch}
    again = old.latestOffset({"position": 10, "reader": "mine"}, ReadAllAvailable())
    assert again == {"position": 10, "reader": "mine", "epoch": log.epoch}


def test_a_driver_restarted_before_batch_0_was_done_replays_it_from_the_logged_reader(serve: Any) -> None:
    """The restarted driver calls initialOffset again (a new name, a new hold) but replays batch 0
    with the offsets Spark logged: its start comes from the log's record of the logged reader, and
    the new hold is released, so no orphan is left."""
    log = ReplayLog("nums", capacity=100)
    log.append([str(i).encode() for i in range(30)])
    server = serve({"nums": log})
    killed = reader(server.url, "nums", startingPosition="latest")
    start = killed.initialOffset()  # at 30
    log.append([str(i).encode() for i in range(30, 50)])
    logged_end = killed.latestOffset(start, ReadAllAvailable())  # batch 0 = [30, 50), then the kill
    restarted = reader(server.url, "nums", startingPosition="latest")
    log.append([b"later"] * 5)
    again = restarted.initialOffset()  # a fresh name, holding at 55
    assert again["reader"] != start["reader"] and again["position"] == 55
    parts = restarted.partitions(again, logged_end)
    assert [(p.start, p.end) for p in parts] == [(30, 40), (40, 50)]
    assert log.readers() == {start["reader"]: 30} and log.pending() == {}


def test_latest_offset_commits_the_batch_spark_has_finished(serve: Any) -> None:
    """Spark asks for the next offsets only after the batch ending at `start` is in its commit log,
    but reports it done only when it plans the next batch: latestOffset commits `start` itself."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"1"] * 10)
    server = serve({"nums": log})
    source = reader(server.url, "nums")
    start = source.initialOffset()
    end = source.latestOffset(start, ReadAllAvailable())
    source.partitions(start, end)
    assert source.latestOffset(end, ReadAllAvailable()) == end  # no new data: no next batch...
    assert log.first == 10 and log.readers() == {start["reader"]: 10}  # ...but the log is trimmed
    assert source.reportLatestOffset() == {"position": 10, "behind": 0, "rowsBehind": 0, "oldestHeld": 10}


def test_the_lag_reported_in_spark_progress_counts_positions_and_rows(serve: Any) -> None:
    """reportLatestOffset: positions and rows behind the log's end, for an arrow log that counts rows."""
    log = ReplayLog("arrow", capacity=10, rows=arrow_rows)
    log.append(batches(10, 10, 10, 40, 5))
    server = serve({"arrow": log})
    source = reader(server.url, "arrow", codec="arrow", maxRecordsPerBatch=25)
    assert source.reportLatestOffset() is None  # nothing seen yet
    start = source.initialOffset()
    source.latestOffset(start, source.getDefaultReadLimit())  # a batch of [0, 2): 20 rows
    assert source.reportLatestOffset() == {"position": 5, "behind": 3, "rowsBehind": 55, "oldestHeld": 0}


def test_element_and_row_bounds_are_exclusive() -> None:
    """maxElementsPerBatch and maxRecordsPerBatch: one or the other."""
    with pytest.raises(ValueError, match="not both"):
        reader("tcp://127.0.0.1:1", "p", maxElementsPerBatch=1, maxRecordsPerBatch=1)
    assert reader("tcp://127.0.0.1:1", "p", maxElementsPerBatch=15).getDefaultReadLimit().max_rows == 15


def test_max_records_on_an_arrow_log_that_counts_no_rows_says_what_to_do(serve: Any) -> None:
    """A row bound needs the log's row count: without it the error names both ways out."""
    log = ReplayLog("plain", capacity=10)
    log.append(batches(10, 10))
    server = serve({"plain": log})
    source = reader(server.url, "plain", codec="arrow", maxRecordsPerBatch=25)
    with pytest.raises(ValueError, match=r"rows=rstreams\.spark\.arrow_rows.*maxElementsPerBatch"):
        source.latestOffset(source.initialOffset(), source.getDefaultReadLimit())


def spark_order(source: RStreamsStreamReader, total_rows: int, limit: Any) -> list[int]:
    """Drive ``source`` exactly as Spark's micro-batch loop does (no Spark): offsets, then the
    write-ahead log, then ``commit`` of the *previous* batch only, then partitions and reads.
    Returns each batch's rows; fails if the stream stalls before ``total_rows`` arrived."""
    start = source.initialOffset()
    previous: dict[str, Any] | None = None
    sizes: list[int] = []
    idle = 0
    while sum(sizes) < total_rows:
        end = source.latestOffset(start, limit)
        if end == start:
            idle += 1
            assert idle < 3, f"stalled at {start} after {sum(sizes)} of {total_rows} rows: {sizes}"
            continue
        idle = 0
        if previous is not None:
            source.commit(previous)  # what Spark does once the next batch is in its offset log
        rows = 0
        for partition in source.partitions(start, end):
            rows += sum(batch.num_rows for batch in source.read(partition))
        sizes.append(rows)
        previous, start = end, end
    return sizes


@pytest.mark.parametrize("codec", ["json", "msgpack", "arrow"])
@pytest.mark.parametrize("capacity", [4, 64])
@pytest.mark.parametrize(
    "bound", [{}, {"maxRecordsPerBatch": 3}, {"maxRecordsPerBatch": 5_000}, {"maxElementsPerBatch": 2}]
)
def test_no_capacity_and_read_limit_stalls_the_stream(
    serve: Any, codec: str, capacity: int, bound: dict[str, int]
) -> None:
    """A producer with 3x the log's capacity, read in Spark's call order: every row arrives,
    whether a batch takes a few elements or the whole log (which used to deadlock: the room
    came back only with a commit that Spark sends only for the next batch)."""
    import msgpack

    elements = capacity * 3 + 1
    per_element = 3 if codec == "arrow" else 1

    def element(i: int) -> bytes:
        if codec == "arrow":
            return batches(per_element)[0]
        record = {"seq": i}
        return msgpack.packb(record) if codec == "msgpack" else json.dumps(record).encode()

    counts = arrow_rows if codec == "arrow" else None
    log = ReplayLog("nums", capacity=capacity, rows=counts).feed(
        rstreams.from_iterable(element(i) for i in range(elements))
    )
    server = serve({"nums": log})
    source = reader(server.url, "nums", codec=codec, **bound)
    sizes = spark_order(source, elements * per_element, source.getDefaultReadLimit())
    assert sum(sizes) == elements * per_element
    assert log.max_held <= capacity
    if "maxRecordsPerBatch" in bound:
        assert max(sizes) <= max(bound["maxRecordsPerBatch"], per_element)


def test_max_bytes_bounds_a_batch_beside_the_row_bound(serve: Any) -> None:
    """maxBytesPerBatch: a batch ends where its elements pass the byte bound (at least one element)."""
    log = ReplayLog("sized", capacity=100)
    log.append([b"x" * n for n in (4, 4, 4, 30, 2)])
    server = serve({"sized": log})
    source = reader(server.url, "sized", maxBytesPerBatch=10, maxRecordsPerBatch=100)
    ends, start = [], source.initialOffset()
    while (end := source.latestOffset(start, source.getDefaultReadLimit())) != start:
        ends.append(end["position"])
        start = end
    assert ends == [2, 3, 4, 5]  # 8 bytes, 4, 30 (alone: past the bound), 2


class Clock:
    """A virtual clock: time moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_min_records_waits_for_rows_at_most_max_trigger_delay(serve: Any) -> None:
    """minRecordsPerBatch: no batch below it until maxTriggerDelay has passed since the last one."""
    log = ReplayLog("nums", capacity=100)
    log.append([b"{}"] * 3)
    server = serve({"nums": log})
    source = reader(server.url, "nums", minRecordsPerBatch=5, maxTriggerDelay=30)
    clock = Clock()
    source._clock = clock
    source._last_batch = 0.0
    limit = source.getDefaultReadLimit()
    start = source.initialOffset()
    assert source.latestOffset(start, limit) == start  # 3 rows < 5, 0 s waited
    clock.now = 29.0
    assert source.latestOffset(start, limit) == start
    clock.now = 30.0
    first = source.latestOffset(start, limit)
    assert first["position"] == 3  # waited long enough: what there is
    log.append([b"{}"] * 6)
    assert source.latestOffset(first, limit)["position"] == 9  # 6 rows >= 5: at once


def test_fail_on_data_loss_false_skips_and_counts_trimmed_positions(serve: Any) -> None:
    """failOnDataLoss=false: a batch whose start was trimmed reads from the oldest held position,
    the skipped positions appear as `lost` in the progress, and read() skips a trim it meets;
    true (the default) keeps the error naming the position."""
    log = ReplayLog("nums", capacity=100)
    log.append([json.dumps({"seq": i}).encode() for i in range(20)])
    log.commit(12, "other")  # the only reader: the log trims below 12
    server = serve({"nums": log})
    lenient = reader(server.url, "nums", failOnDataLoss="false")
    start, end = {"position": 5, "reader": "gone"}, {"position": 20, "reader": "gone"}
    parts = lenient.partitions(start, end)
    assert [(p.start, p.end) for p in parts] == [(12, 16), (16, 20)]
    lenient.latestOffset(end, ReadAllAvailable())
    assert lenient.reportLatestOffset()["lost"] == 7  # type: ignore[index]
    whole = RangePartition(server.url, "nums", 5, 20)
    rows = [row for batch in lenient.read(whole) for row in batch.column("seq").to_pylist()]
    assert rows == list(range(12, 20))
    strict = reader(server.url, "nums")
    with pytest.raises(RemoteLogError, match="position 5 was already trimmed"):
        list(strict.read(whole))


def test_the_progress_names_the_readers_that_hold_the_log_back(serve: Any) -> None:
    """Another reader behind this query's commits: the reported latest offset names it (heldBy)."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"{}"] * 10)
    log.join("abandoned", 2)
    server = serve({"nums": log})
    source = reader(server.url, "nums", startingPosition="5")
    start = source.initialOffset()
    end = source.latestOffset(start, ReadAllAvailable())
    source.partitions(start, end)
    source.latestOffset(end, ReadAllAvailable())  # commits 10: the log stays full below 2
    report = source.reportLatestOffset()
    assert report is not None and report["oldestHeld"] == 2 and report["heldBy"] == {"abandoned": 2}


def test_starting_timestamp_starts_at_the_first_element_that_arrived_then(serve: Any) -> None:
    """startingTimestamp (ms since the epoch): a fresh query holds the log from the first position
    that arrived at that time or later; a time among positions of unknown arrival fails naming it."""
    now = [1000.0]
    log = ReplayLog("nums", capacity=10, wall=lambda: now[0])
    log.append([b'{"seq": 0}', b'{"seq": 1}'])
    now[0] = 1005.0
    log.append([b'{"seq": 2}'])
    server = serve({"nums": log})
    source = reader(server.url, "nums", startingTimestamp=1_003_000, readerName="q")
    assert source.initialOffset() == {"position": 2, "reader": "q", "epoch": log.epoch}
    assert log.pending() == {"q": 2}
    late = reader(server.url, "nums", startingTimestamp=2_000_000, readerName="r")
    assert late.initialOffset()["position"] == 3  # nothing arrived since: the end


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"startingTimestamp": "yesterday"}, "milliseconds since the epoch"),
        ({"startingTimestamp": 5, "startingPosition": "latest"}, "not both"),
    ],
)
def test_bad_starting_timestamps_fail_naming_the_option(options: dict[str, Any], says: str) -> None:
    with pytest.raises(OptionError) as failure:
        reader("tcp://127.0.0.1:1", "nums", **options)
    assert failure.value.option == "startingTimestamp" and says in str(failure.value)


def test_a_starting_position_past_the_log_end_fails_naming_it_and_holds_nothing(serve: Any) -> None:
    """startingPosition 99 on a log that ends at 10 is refused, not quietly started at 10 (which
    would read the positions 10 to 98 the query was told to skip); no pending reader is left."""
    log = ReplayLog("nums", capacity=20)
    log.append([b"{}"] * 10)
    server = serve({"nums": log})
    with pytest.raises(OptionError, match=r"startingPosition 99: log 'nums' ends at 10") as failure:
        reader(server.url, "nums", startingPosition="99").initialOffset()
    assert failure.value.option == "startingPosition" and log.pending() == {}
    assert reader(server.url, "nums", startingPosition="10").initialOffset()["position"] == 10


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"endingPosition": "99"}, r"option endingPosition 99: log 'nums' at \S+ ends at 10"),
        ({"startingPosition": "5", "endingPosition": "3"}, "endingPosition 3 is below startingPosition 5"),
    ],
)
def test_a_batch_range_the_log_does_not_hold_fails_naming_ending_position(
    serve: Any, options: dict[str, str], says: str
) -> None:
    """spark.read with endingPosition past the end (it was cut to the end) or below the start (it
    was an empty read): OptionError naming endingPosition."""

    log = ReplayLog("nums", capacity=20)
    log.append([b"{}"] * 10)
    server = serve({"nums": log})
    batch = RStreamsBatchReader({"url": server.url, "publisher": "nums", **options}, SCHEMA)
    with pytest.raises(OptionError, match=says) as failure:
        batch.partitions()
    assert failure.value.option == "endingPosition"
