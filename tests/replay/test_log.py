"""ReplayLog: bounded upstream demand, cursors, trims, eviction, appends (no network)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import rstreams
from rstreams.api import Subscription
from rstreams.replay import LogLookupError, ReplayLog, TrimmedError, pack, unpack
from testkit.recording import RecordingSubscriber

pytestmark = pytest.mark.timeout(30)


class ManualSubscription(Subscription):
    """An upstream that records what the log requests and emits nothing by itself."""

    def __init__(self) -> None:
        self.requested: list[int] = []

    def request(self, n: int) -> None:
        self.requested.append(n)

    def cancel(self) -> None:
        pass


def counting(n: int, produced: list[int]) -> Iterator[bytes]:
    for i in range(n):
        produced.append(i)
        yield str(i).encode()


def test_upstream_demand_is_bounded_by_capacity_until_commit() -> None:
    """The log asks its producer for at most `capacity` elements beyond the last commit."""
    produced: list[int] = []
    log = ReplayLog("n", capacity=10).feed(rstreams.from_iterable(counting(100, produced)))
    assert len(produced) == 10 and log.info()["end"] == 10
    log.commit(6)
    assert len(produced) == 16 and log.first == 6 and log.max_held == 10


def test_a_producer_with_nothing_requested_gets_any_room_there_is() -> None:
    """Requests come in chunks of a quarter of the capacity, except that a producer with no
    demand at all is asked for whatever room there is: one freed position is enough."""
    log = ReplayLog("n", capacity=100)
    upstream = ManualSubscription()
    log.on_subscribe(upstream)
    assert upstream.requested == [100]
    for i in range(100):
        log.on_next(str(i).encode())
    log.commit(1)  # room 1, nothing outstanding: asked for at once
    assert upstream.requested == [100, 1]
    log.on_next(b"100")
    log.commit(2)  # again: room 1, nothing outstanding
    assert upstream.requested == [100, 1, 1]
    log.commit(3)  # room 1 while 1 is outstanding: waits for a quarter of the capacity
    assert upstream.requested == [100, 1, 1]
    log.commit(40)  # 61 held, 1 outstanding
    assert upstream.requested == [100, 1, 1, 38]


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
    assert len(produced) == 10 and log.info() == {
        "first": 6,
        "end": 10,
        "complete": True,
        "error": None,
        "epoch": log.epoch,
    }


def test_upstream_error_reaches_readers_at_the_end() -> None:
    """An upstream onError ends tail readers once they have read everything before it."""
    log = ReplayLog("n", capacity=10).feed(
        rstreams.from_iterable([b"a"]).concat_map(lambda x: rstreams.error(OSError("gone")))
    )
    sub: RecordingSubscriber[bytes] = RecordingSubscriber(initial=5)
    log.cursor().subscribe(sub)
    assert isinstance(sub.error, OSError) and log.info()["error"] == "OSError: gone"


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
        "epoch": log.epoch,
    }
    assert log.max_held == 4


def test_pack_format_is_count_lengths_then_bytes() -> None:
    """pack: a 4-byte count, that many 4-byte big-endian lengths, then the bytes; unpack inverts it."""
    assert pack([b"", b"ab", b"c"]) == b"\0\0\0\3\0\0\0\0\0\0\0\2\0\0\0\1abc"
    assert unpack(pack([b"", b"ab", b"c"])) == [b"", b"ab", b"c"]


def test_named_readers_trim_only_what_every_reader_committed() -> None:
    """Two readers: the faster one's commits trim nothing the slower one still needs."""
    produced: list[int] = []
    log = ReplayLog("n", capacity=10).feed(rstreams.from_iterable(counting(100, produced)))
    assert log.join("slow") == 0 and log.join("fast", 3) == 3
    log.commit(8, "fast")
    assert log.first == 0 and log.readers() == {"slow": 0, "fast": 8}
    sub: RecordingSubscriber[bytes] = RecordingSubscriber(initial=10)
    log.cursor(0, 5).subscribe(sub)
    assert sub.items == [b"0", b"1", b"2", b"3", b"4"]
    log.commit(5, "slow")
    assert log.first == 5 and len(produced) == 15
    log.commit(2, "fast")  # commits never go backwards
    assert log.readers()["fast"] == 8
    log.leave("slow")
    assert log.first == 8 and log.readers() == {"fast": 8}


def test_unnamed_commits_keep_the_single_reader_behaviour() -> None:
    """Only unnamed commits: each one trims, as with one reader."""
    log = ReplayLog("n", capacity=100)
    log.append([str(i).encode() for i in range(10)])
    log.commit(4)
    log.commit(7)
    assert log.first == 7 and log.readers() == {"": 7}


def test_row_counting_log_bounds_a_range_by_rows() -> None:
    """rows=: each element's rows are counted; end_within gives the furthest end within a row bound."""
    log = ReplayLog("n", capacity=4, evict=True, rows=len)
    log.append([b"x" * n for n in (5, 1, 1, 7, 3, 2)])  # a ring of 4: positions 2..5 held (1, 7, 3, 2)
    assert log.first == 2
    assert log.end_within(2, 8) == {"end": 4, "rows": 8}
    assert log.end_within(3, 5) == {"end": 4, "rows": 7}  # at least one element, even past the bound
    assert log.end_within(4, 100) == {"end": 6, "rows": 5}
    assert log.end_within(6, 10) == {"end": 6, "rows": 0}
    with pytest.raises(TrimmedError):
        log.end_within(1, 10)
    with pytest.raises(LogLookupError, match="counts no rows"):  # a LookupError too
        ReplayLog("plain").end_within(0, 10)


def test_a_reader_joining_by_commit_starts_at_the_oldest_held() -> None:
    """A first commit below `first` registers the reader at `first`, not below it."""
    log = ReplayLog("n", capacity=100)
    log.append([str(i).encode() for i in range(10)])
    log.commit(6, "a")
    log.commit(0, "b")
    assert log.readers() == {"a": 6, "b": 6}


class Clock:
    """A virtual clock for the readers' timeouts: time moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_pending_reader_holds_the_log_until_it_goes_silent() -> None:
    """hold() keeps positions like a commit; unheard for pending_timeout, the reader is forgotten
    and the log trims and refills for the readers still there."""
    clock = Clock()
    produced: list[int] = []
    log = ReplayLog("n", capacity=10, pending_timeout=30, clock=clock)
    log.feed(rstreams.from_iterable(counting(100, produced)))
    assert log.hold("orphan", 0) == 0
    log.commit(10, "live")
    assert log.first == 0 and len(produced) == 10  # the pending reader holds position 0
    clock.now = 29
    assert log.hold("orphan") == 0  # heard from: renewed
    clock.now = 58
    log.housekeep()
    assert log.pending() == {"orphan": 0}
    clock.now = 60
    assert log.info()["first"] == 10 and len(produced) == 20  # asking the log expires it
    assert log.pending() == {} and log.expired == {"orphan": 0}


def test_a_pending_reader_becomes_a_committed_one_at_its_first_commit() -> None:
    """Once committed, a reader no longer expires as pending, and starts from where it held."""
    clock = Clock()
    log = ReplayLog("n", capacity=100, pending_timeout=5, clock=clock)
    log.append([str(i).encode() for i in range(20)])
    assert log.hold("q", 4) == 4 and log.first == 0  # a hold does not trim
    log.commit(2, "q")  # below its hold: it keeps its held position
    clock.now = 100
    assert log.readers() == {"q": 4} and log.pending() == {} and log.first == 4


def test_reader_timeout_drops_only_silent_readers_of_a_full_log() -> None:
    """reader_timeout: a committed reader unheard for that long is dropped while the log is full,
    never while it has room."""
    clock = Clock()
    produced: list[int] = []
    log = ReplayLog("n", capacity=10, reader_timeout=60, clock=clock)
    log.append([b"x"] * 5)
    log.commit(0, "gone")
    log.commit(5, "live")
    clock.now = 1_000
    log.housekeep()
    assert log.readers() == {"gone": 0, "live": 5}  # room left: nobody is stalled
    log.append([b"x"] * 5)  # full now
    log.commit(5, "live")
    assert log.readers() == {"live": 5} and log.expired == {"gone": 0} and log.first == 5
    assert produced == []


def test_feed_from_a_position_skips_what_the_log_already_has(tmp_path: Path) -> None:
    """A file-backed log restarted with its producer replaying the input from position 0 goes on
    at its end: no element twice, none missing."""
    first = ReplayLog("n", capacity=100, path=tmp_path).feed(rstreams.from_iterable(counting(7, [])))
    assert first.end == 7
    first.close()
    again = ReplayLog("n", capacity=100, path=tmp_path)
    again.feed(rstreams.from_iterable(counting(12, [])), position=0)
    assert again.end == 12 and again._read(0, 12) == [str(i).encode() for i in range(12)]
    again.close()
    full = ReplayLog("n", capacity=100).feed(rstreams.from_iterable([b"x"] * 12))
    with pytest.raises(ValueError, match=r"feed\(position=20\) is past the log's end 12"):
        full.feed(rstreams.empty(), position=20)


def test_position_at_finds_the_first_position_that_arrived_at_a_time(tmp_path: Path) -> None:
    """Arrival times to the millisecond (a virtual wall clock): the first position held that
    arrived at T or later, the end when none did; trimmed positions are not answers."""
    now = [1000.0]
    log = ReplayLog("t", capacity=100, wall=lambda: now[0])
    log.append([b"a", b"b"])  # 1_000_000 ms
    now[0] = 1000.0004  # the same millisecond
    log.append([b"c"])
    now[0] = 1002.5
    log.append([b"d", b"e"])  # 1_002_500 ms
    assert log.position_at(0) == 0
    assert log.position_at(1_000_000) == 0
    assert log.position_at(1_000_001) == 3
    assert log.position_at(1_002_500) == 3
    assert log.position_at(1_002_501) == 5  # the end
    log.commit(4)
    assert log.position_at(1_000_001) == 4  # trimmed positions are not held
    with pytest.raises(ValueError, match="int >= 0"):
        log.position_at(-1)


def test_arrival_times_are_not_kept_across_a_restart(tmp_path: Path) -> None:
    """A reopened file-backed log knows no arrival times for what it held: asking for a time that
    might fall among them is an error saying so; times after its restart are answered."""
    log = ReplayLog("t", capacity=100, path=tmp_path / "t", wall=lambda: 1000.0)
    log.append([b"a", b"b"])
    log.close()
    again = ReplayLog("t", capacity=100, path=tmp_path / "t", wall=lambda: 2000.0)
    with pytest.raises(LogLookupError, match=r"positions 0\.\.1 have no arrival time"):
        again.position_at(1_500_000)
    again.append([b"c"])
    assert again.position_at(2_000_001) == 3  # after every arrival it knows: the end
    with pytest.raises(LookupError):
        again.position_at(1_999_000)  # the old positions may have arrived after that
    again.close()


def test_a_commit_past_the_end_is_refused_and_trims_nothing() -> None:
    """A reader that commits past the end has read positions this log never held (another log of
    that name, one restarted empty): refused, and the elements the log holds stay, unread."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"a", b"b", b"c"])
    log.commit(1, "old")
    with pytest.raises(ValueError, match=r"reader 'late' commits position 100, past the log's end 3"):
        log.commit(100, "late")
    with pytest.raises(ValueError, match="nothing was trimmed"):
        log.commit(4, "old")
    assert log.info()["first"] == 1 and log.readers() == {"old": 1}
    log.commit(3, "old")
    assert log.info()["first"] == 3
