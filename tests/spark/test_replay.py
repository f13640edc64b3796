"""ReplayLog and its RS.io naming convention, without Spark (fast)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams.spark import RemoteLogError, ReplayLog, TrimmedError
from rstreams.spark._remote import fetch_range, request_json, upload
from rstreams.spark._replay import pack, unpack
from support import RecordingSubscriber

pytestmark = pytest.mark.timeout(30)


def counting(n: int, produced: list[int]) -> Iterator[bytes]:
    for i in range(n):
        produced.append(i)
        yield str(i).encode()


def test_upstream_demand_is_bounded_by_capacity_until_commit() -> None:
    """The log asks its producer for at most `capacity` elements beyond the last commit."""
    produced: list[int] = []
    log = ReplayLog("n", capacity=10).feed(rstreams.from_iterable(counting(100, produced)))
    assert len(produced) == 10 and log.info()["end"] == 10
    log.commit(1)  # less than a quarter of the capacity freed: no new request yet
    assert len(produced) == 10
    log.commit(6)
    assert len(produced) == 16 and log.first == 6 and log.max_held == 10


def test_cursor_serves_a_range_under_demand_and_waits_for_the_tail() -> None:
    """cursor(start, stop) honours demand, waits for elements not yet produced, then completes."""
    log = ReplayLog("n", capacity=100)
    log.append([b"0", b"1", b"2"])
    sub: RecordingSubscriber[bytes] = RecordingSubscriber()
    log.cursor(1, 5).subscribe(sub)
    sub.request(1)
    assert sub.items == [b"1"]
    sub.request(10)
    assert sub.items == [b"1", b"2"] and not sub.done
    log.append([b"3", b"4", b"5"])
    assert sub.items == [b"1", b"2", b"3", b"4"] and sub.completed


def test_reading_a_trimmed_position_is_an_error_naming_it() -> None:
    """A reader behind the trim point gets onError with the position and the oldest held."""
    log = ReplayLog("n", capacity=100)
    log.append([str(i).encode() for i in range(10)])
    log.commit(5)
    sub: RecordingSubscriber[bytes] = RecordingSubscriber(initial=10)
    log.cursor(2, 8).subscribe(sub)
    assert isinstance(sub.error, TrimmedError) and (sub.error.position, sub.error.first) == (2, 5)


def test_evicting_log_keeps_the_newest() -> None:
    """evict=True: a ring of `capacity` elements; the producer is never paused."""
    produced: list[int] = []
    log = ReplayLog("n", capacity=4, evict=True).feed(rstreams.from_iterable(counting(10, produced)))
    assert len(produced) == 10 and log.info() == {"first": 6, "end": 10, "complete": True, "error": None}


def test_upstream_error_reaches_readers_at_the_end() -> None:
    """An upstream onError ends tail readers once they have read everything before it."""
    log = ReplayLog("n", capacity=10).feed(
        rstreams.from_iterable([b"a"]).concat_map(lambda x: rstreams.error(OSError("gone")))
    )
    sub: RecordingSubscriber[bytes] = RecordingSubscriber(initial=5)
    log.cursor().subscribe(sub)
    assert isinstance(sub.error, OSError) and log.info()["error"] == "OSError: gone"


def test_naming_convention_over_rs_io(serve: Any) -> None:
    """latest, from/to, commit and the trimmed error, through a real server."""
    produced: list[int] = []
    log = ReplayLog("nums", capacity=50).feed(rstreams.from_iterable(counting(200, produced)))
    server = serve({"nums": log})
    assert request_json(server.url, "nums?latest") == {
        "first": 0,
        "end": 50,
        "complete": False,
        "error": None,
    }
    assert fetch_range(server.url, "nums", 10, 13) == [b"10", b"11", b"12"]
    assert request_json(server.url, "nums?commit=40")["end"] == 90
    with pytest.raises(RemoteLogError, match="position 10 was already trimmed"):
        fetch_range(server.url, "nums", 10, 13)
    with pytest.raises(RemoteLogError, match="no publisher named 'other'"):
        request_json(server.url, "other?latest")


def test_sink_uploads_publish_once_per_batch(serve: Any) -> None:
    """Staged uploads become visible on publish, once per (writer, batch); discard drops them."""
    out = ReplayLog("out", capacity=100, evict=True)
    server = serve({}, sinks={"out": out})
    assert upload(server.url, "out", "t1", [b"a", b"b"]) == 2
    assert upload(server.url, "out", "t2", [b"c"]) == 1
    assert upload(server.url, "out", "t3", [b"x"]) == 1
    assert out.info()["end"] == 0  # staged, not published
    assert request_json(server.url, "out?publish=0&writer=q&tokens=t1,t2") == {"published": True, "count": 3}
    assert request_json(server.url, "out?publish=0&writer=q&tokens=t3") == {"published": False, "count": 0}
    assert request_json(server.url, "out?discard=t3") == {"discarded": 1}
    assert fetch_range(server.url, "out", 0, 3) == [b"a", b"b", b"c"]


def test_bounded_log_appends_wait_for_commits() -> None:
    """append() to a full bounded log waits (in order) until readers commit; done() says when."""
    log = ReplayLog("out", capacity=4)
    done: list[str] = []
    log.append([b"a", b"b", b"c"], lambda: done.append("first"))
    log.append([b"d", b"e"], lambda: done.append("second"))
    log.append([b"f"], lambda: done.append("third"))
    assert done == ["first"] and log.info()["end"] == 3
    log.commit(2)
    assert done == ["first", "second", "third"] and log.info() == {
        "first": 2,
        "end": 6,
        "complete": False,
        "error": None,
    }
    assert log.max_held == 4


def test_packed_ranges_round_trip(serve: Any) -> None:
    """?pack=N carries up to N elements per wire element, split by bytes; unpack restores them exactly."""
    log = ReplayLog("big", capacity=2000)
    log.append([b"x" * (i % 700) for i in range(2000)])  # ~700 KB: several byte-bounded packs
    server = serve({"big": log})
    assert fetch_range(server.url, "big", 5, 1995, pack=1024) == [b"x" * (i % 700) for i in range(5, 1995)]
    assert unpack(pack([b"", b"ab", b"c"])) == [b"", b"ab", b"c"]
