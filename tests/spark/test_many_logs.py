"""One source over several logs on several servers: the driver's methods called directly (no Spark).

Spark calls ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` on the driver
and ``read`` on executors; here the test makes those calls in Spark's order, so per-log
offsets, discovery, shared read limits and checkpoint shapes are checked in milliseconds.
The same over a real Spark session, with restarts: tests/spark/test_many_servers.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import LongType, StringType, StructField, StructType

from rstreams.replay import ReplayLog
from rstreams.spark._options import OptionError
from rstreams.spark._source import RangePartition, RStreamsBatchReader, RStreamsStreamReader

pytestmark = pytest.mark.timeout(60)

SCHEMA = StructType([StructField("log", StringType()), StructField("seq", LongType())])


def rows(log: str, start: int, stop: int) -> list[bytes]:
    return [json.dumps({"log": log, "seq": i}).encode() for i in range(start, stop)]


def filled(name: str, count: int, capacity: int = 1000) -> ReplayLog:
    log = ReplayLog(name, capacity=capacity)
    log.append(rows(name, 0, count))
    return log


def reader(urls: list[str], publisher: str, **options: Any) -> RStreamsStreamReader:
    given = {"url": ",".join(urls), "publisher": publisher, **{k: str(v) for k, v in options.items()}}
    return RStreamsStreamReader(given, SCHEMA)


def batch(source: RStreamsStreamReader, start: Any, limit: ReadLimit | None = None) -> tuple[Any, list[Any]]:
    """One micro-batch as Spark runs it: its end offset and the rows its partitions read."""
    end = source.latestOffset(start, limit or source.getDefaultReadLimit())
    read: list[Any] = []
    parts = source.partitions(start, end)
    for part in parts:
        assert isinstance(part, RangePartition)
        for record_batch in source.read(part):
            read.extend(record_batch.to_pylist())
    source.commit(end)
    return end, read


def run_to_end(
    source: RStreamsStreamReader, start: Any, limit: ReadLimit | None = None
) -> tuple[Any, list[Any]]:
    seen: list[Any] = []
    for _ in range(100):
        end, read = batch(source, start, limit)
        seen.extend(read)
        if end == start:
            return end, seen
        start = end
    raise AssertionError("the query never caught up")


def keyed(seen: list[Any]) -> list[tuple[str, int]]:
    return sorted((row["log"], row["seq"]) for row in seen)


def test_a_pattern_reads_every_matching_log_on_every_server_once(serve: Any) -> None:
    """Three servers; `sensors/*` matches two logs on each (not `other`); the offset is a map of
    url and name to position; every row of the six logs is read exactly once."""
    servers = [
        serve(
            {
                f"sensors/{i}a": filled(f"sensors/{i}a", 30),
                f"sensors/{i}b": filled(f"sensors/{i}b", 7),
                "other": filled("other", 5),
            }
        )
        for i in range(3)
    ]
    urls = [server.url for server in servers]
    source = reader(urls, "sensors/*", numPartitions=2)
    start = source.initialOffset()
    assert set(start["logs"]) == set(urls)
    assert all(set(start["logs"][url]) == {f"sensors/{i}a", f"sensors/{i}b"} for i, url in enumerate(urls))
    end, seen = run_to_end(source, start)
    expected = sorted(
        (f"sensors/{i}{s}", seq) for i in range(3) for s, n in (("a", 30), ("b", 7)) for seq in range(n)
    )
    assert keyed(seen) == expected
    assert end["logs"][urls[1]]["sensors/1a"] == 30
    reader_name = end["reader"]
    for server in servers:
        assert server._logs["sensors/" + str(servers.index(server)) + "a"].readers() == {reader_name: 30}
        assert server._logs["other"].readers() == {}


def test_partitions_are_ranges_of_each_log_read_from_its_own_server(serve: Any) -> None:
    """numPartitions is shared among the logs with rows to read, at least one range each."""
    one, two = (
        serve({"a": filled("a", 10), "b": filled("b", 0)}),
        serve({"a": filled("a", 4), "b": filled("b", 0)}),
    )
    source = reader([one.url, two.url], "a,b", numPartitions=4)
    start = source.initialOffset()
    parts = source.partitions(start, source.latestOffset(start, ReadAllAvailable()))
    assert sorted((p.url, p.publisher, p.start, p.end) for p in parts) == sorted(
        [(one.url, "a", 0, 5), (one.url, "a", 5, 10), (two.url, "a", 0, 2), (two.url, "a", 2, 4)]
    )
    fewer = reader([one.url, two.url], "a")  # numPartitions 2 over two logs: one range each
    begin = fewer.initialOffset()
    parts = fewer.partitions(begin, fewer.latestOffset(begin, ReadAllAvailable()))
    assert sorted((p.url, p.start, p.end) for p in parts) == sorted([(one.url, 0, 10), (two.url, 0, 4)])


def test_a_log_that_appears_is_discovered_and_read_from_the_stated_position(serve: Any) -> None:
    """A log added while the query runs enters the next offset at newLogStartingPosition
    (`earliest` by default: all it holds) and is read from the batch after."""
    server = serve({"sensors/a": filled("sensors/a", 5)})
    source = reader([server.url], "sensors/*")
    offset, seen = run_to_end(source, source.initialOffset())
    assert keyed(seen) == [("sensors/a", i) for i in range(5)]
    server.add("sensors/b", filled("sensors/b", 8))
    server.add("elsewhere", filled("elsewhere", 8))
    entered, read = batch(source, offset)
    assert read == [] and entered["logs"][server.url]["sensors/b"] == 0  # enters, nothing read yet
    offset, seen = run_to_end(source, entered)
    assert keyed(seen) == [("sensors/b", i) for i in range(8)]
    assert "elsewhere" not in offset["logs"][server.url]


def test_new_logs_may_start_at_their_end(serve: Any) -> None:
    server = serve({"s/a": filled("s/a", 2)})
    source = reader([server.url], "s/*", newLogStartingPosition="latest")
    offset, _ = run_to_end(source, source.initialOffset())
    late = filled("s/b", 8)
    server.add("s/b", late)
    offset, _ = batch(source, offset)
    late.append(rows("s/b", 8, 11))
    _, seen = run_to_end(source, offset)
    assert keyed(seen) == [("s/b", 8), ("s/b", 9), ("s/b", 10)]


def test_a_restarted_driver_goes_on_from_the_checkpointed_map(serve: Any) -> None:
    """A new reader object (a restarted driver) given the last offset Spark logged: the rest of
    each log, once, committed as the same reader."""
    servers = [serve({"n": filled("n", 20)}) for _ in range(3)]
    urls = [s.url for s in servers]
    first = reader(urls, "n", maxRecordsPerBatch=9)
    offset, seen = batch(first, first.initialOffset())
    offset, more = batch(first, offset)
    seen += more
    restarted = reader(urls, "n", maxRecordsPerBatch=9)
    _, rest = run_to_end(restarted, offset)
    assert sorted(row["seq"] for row in seen + rest) == sorted(list(range(20)) * 3)
    assert len(seen + rest) == 60
    for server in servers:
        assert server._logs["n"].readers() == {offset["reader"]: 20}


def test_max_records_is_shared_among_the_logs(serve: Any) -> None:
    """maxRecordsPerBatch=10 over logs holding 2, 50 and 50 rows: 2 + 4 + 4 in the first batch."""
    server = serve({"x/a": filled("x/a", 2), "x/b": filled("x/b", 50), "x/c": filled("x/c", 50)})
    source = reader([server.url], "x/*")
    start = source.initialOffset()
    end = source.latestOffset(start, ReadMaxRows(10))
    assert end["logs"][server.url] == {"x/a": 2, "x/b": 4, "x/c": 4}
    source.partitions(start, end)
    source.commit(end)
    _, seen = run_to_end(source, end, ReadMaxRows(10))
    assert len(seen) == 2 + 50 + 50 - 10


def test_the_progress_sums_the_lag_of_every_log(serve: Any) -> None:
    one, two = serve({"a": filled("a", 10)}), serve({"a": filled("a", 30)})
    source = reader([one.url, two.url], "a")
    start = source.initialOffset()
    source.latestOffset(start, ReadMaxRows(4))
    report = source.reportLatestOffset()
    assert report is not None
    assert report["behind"] == 8 + 28 and report["rowsBehind"] == 36
    assert report["logs"][two.url]["a"]["behind"] == 28


def test_a_checkpoint_of_one_log_read_by_a_query_over_several_names_the_options(serve: Any) -> None:
    """Upgrading: a single-log query keeps its offset shape (old checkpoints read as before); the
    same checkpoint under options naming several logs fails naming the option."""
    server = serve({"a": filled("a", 3), "b": filled("b", 3)})
    single = reader([server.url], "a")
    old = single.initialOffset()
    assert list(old) == ["position", "reader", "epoch"]
    epoch = old["epoch"]
    assert len(epoch) == 16
    older = {"position": 1}  # an offset of a checkpoint before readers and epochs
    assert single.latestOffset(older, ReadAllAvailable()) == {"position": 3, "epoch": epoch}
    several = reader([server.url], "a,b")
    with pytest.raises(OptionError, match="one log") as error:
        several.latestOffset(old, ReadAllAvailable())
    assert error.value.option == "publisher"
    with pytest.raises(OptionError, match="several logs") as error:
        single.latestOffset(several.initialOffset(), ReadAllAvailable())
    assert error.value.option == "publisher"


def test_a_pattern_on_a_server_without_a_listing_names_the_option(serve: Any) -> None:
    from rstreams.replay import replay_offer

    route = replay_offer({"s/a": filled("s/a", 1)})
    server = serve({}, offer=lambda path, params: None if path == "rstreams/logs" else route(path, params))
    source = reader([server.url], "s/*")
    with pytest.raises(OptionError, match="rstreams/logs") as error:
        source.initialOffset()
    assert error.value.option == "publisher"


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"url": "tcp://127.0.0.1:1,", "publisher": "a"}, "url"),
        ({"url": "tcp://127.0.0.1:1", "publisher": "a,a"}, "publisher"),
        (
            {"url": "tcp://127.0.0.1:1", "publisher": "a", "newLogStartingPosition": "3"},
            "newLogStartingPosition",
        ),
    ],
)
def test_bad_lists_fail_naming_the_option(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError) as error:
        RStreamsStreamReader(options, SCHEMA)
    assert error.value.option == option


def test_a_batch_read_covers_every_log(serve: Any) -> None:
    one, two = serve({"s/a": filled("s/a", 3)}), serve({"s/b": filled("s/b", 2)})
    source = RStreamsBatchReader({"url": f"{one.url},{two.url}", "publisher": "s/*"}, SCHEMA)
    seen = [row for part in source.partitions() for b in source.read(part) for row in b.to_pylist()]
    assert keyed(seen) == [("s/a", 0), ("s/a", 1), ("s/a", 2), ("s/b", 0), ("s/b", 1)]


def test_the_sink_spreads_rows_over_logs_by_key_the_same_for_rows_and_arrow(serve: Any) -> None:
    """Two servers with two sink logs each: four logs. codec json (one element per row) and
    arrow (record batches) put each key in the same log; each log publishes the batch once, a
    re-run publishes nothing."""
    import pyarrow as pa

    from rstreams.replay import fetch_range
    from rstreams.spark._sink import _Writer

    sinks = [{name: ReplayLog(name, capacity=1000, evict=True) for name in ("o1", "o2")} for _ in range(2)]
    servers = [serve({}, sinks=logs) for logs in sinks]
    options = {"url": ",".join(s.url for s in servers), "publisher": "o1,o2", "keyColumn": "log"}
    logs = [f"k{i}" for i in range(12)]
    table = pa.record_batch({"log": logs * 5, "seq": list(range(60))})

    def written() -> dict[tuple[int, str], list[Any]]:
        return {
            (i, name): [json.loads(x) if x[:1] == b"{" else x for x in fetch_range(s.url, name, 0, log.end)]
            for i, (s, named) in enumerate(zip(servers, sinks, strict=True))
            for name, log in named.items()
        }

    rows = _Writer({**options, "writerId": "w"}, SCHEMA)
    staged = rows.write_arrow(iter([table.slice(0, 25), table.slice(25)]))
    assert rows.publish([staged], 7) == {"published": True, "count": 60}
    assert rows.publish([rows.write_arrow(iter([table.slice(0, 1)]))], 7)["published"] is False  # once
    by_rows = {key: sorted(r["log"] for r in got) for key, got in written().items()}
    assert sum(len(v) for v in by_rows.values()) == 60 and sum(1 for v in by_rows.values() if v) >= 2
    for named in sinks:
        for log in named.values():
            log.commit(log.end)
    arrow = _Writer({**options, "writerId": "w", "codec": "arrow"}, SCHEMA)
    assert arrow.publish([arrow.write_arrow(iter([table]))], 8)["published"] is True
    for i, (server, named) in enumerate(zip(servers, sinks, strict=True)):
        for name, log in named.items():
            keys: list[str] = []
            for element in fetch_range(server.url, name, log.first, log.end):
                keys += pa.ipc.open_stream(element).read_all().column("log").to_pylist()
            assert sorted(keys) == by_rows[(i, name)]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"publisher": "a,b"}, "keyColumn"),
        ({"publisher": "a,b", "keyColumn": "nope"}, "keyColumn"),
        ({"publisher": "out/*", "keyColumn": "log"}, "publisher"),
    ],
)
def test_bad_sink_spreads_fail_naming_the_option(options: dict[str, str], option: str) -> None:
    from rstreams.spark._sink import _Writer

    with pytest.raises(OptionError) as error:
        _Writer({"url": "tcp://127.0.0.1:1", **options}, SCHEMA)
    assert error.value.option == option
