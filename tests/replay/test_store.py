"""Replay log stores: memory and file behave alike; the file store survives a restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rstreams.replay import LogDirectoryError, ReplayLog
from rstreams.replay._store import FileStore, MemoryStore, Store
from testkit.recording import RecordingSubscriber

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store = MemoryStore() if request.param == "memory" else FileStore(tmp_path / "log")
    yield made
    made.close()


def test_append_read_drop(store: Store) -> None:
    """Positions [first, end); reads are exact slices; drops move first."""
    for i in range(10):
        store.append(b"x" * i)
    assert (store.first, store.end) == (0, 10)
    assert store.read(3, 2) == [b"xxx", b"xxxx"]
    assert store.read(8, 5) == [b"x" * 8, b"x" * 9]
    store.drop(4)
    assert (store.first, store.end) == (4, 10) and store.read(4, 1) == [b"xxxx"]


def test_compaction_keeps_positions(store: Store) -> None:
    """Trimming past the compaction threshold keeps every held position readable."""
    for i in range(10_000):
        store.append(str(i).encode())
    store.drop(9_000)
    store.append(b"new")
    assert (store.first, store.end) == (9_000, 10_001)
    assert store.read(9_000, 2) == [b"9000", b"9001"] and store.read(10_000, 1) == [b"new"]


def test_file_store_reopens_where_it_was(tmp_path: Path) -> None:
    """Positions, trims and elements survive closing and reopening; a torn record is cut off."""
    store = FileStore(tmp_path / "log")
    for i in range(6_000):
        store.append(str(i).encode())
    store.drop(5_000)  # compacts
    store.drop(10)
    store.close()
    with (tmp_path / "log" / "elements-5000").open("ab") as file:
        file.write(b"\x00\x00\x00\x09tor")  # a crash in the middle of an append
    again = FileStore(tmp_path / "log")
    assert (again.first, again.end) == (5_010, 6_000)
    assert again.read(5_010, 2) == [b"5010", b"5011"]
    again.append(b"after")
    assert again.read(5_999, 2) == [b"5999", b"after"]
    again.close()


def test_file_backed_log_survives_a_server_restart(tmp_path: Path) -> None:
    """A ReplayLog on disk: after a restart, readers get the uncommitted positions unchanged."""
    log = ReplayLog("n", capacity=1000, path=tmp_path / "n")
    log.append([str(i).encode() for i in range(100)])
    log.commit(30)
    log.close()
    restarted = ReplayLog("n", capacity=1000, path=tmp_path / "n")
    assert restarted.info() == {"first": 30, "end": 100, "complete": False, "error": None, "epoch": log.epoch}
    reader: RecordingSubscriber[bytes] = RecordingSubscriber(initial=100)
    restarted.cursor(30, 100).subscribe(reader)
    assert reader.completed and reader.items == [str(i).encode() for i in range(30, 100)]
    restarted.close()


def test_file_backed_log_keeps_its_readers_across_a_restart(tmp_path: Path) -> None:
    """Readers and their commits survive a server restart: the slow reader still holds its data."""
    log = ReplayLog("n", capacity=100, path=tmp_path / "log")
    log.append([str(i).encode() for i in range(20)])
    log.join("slow", 2)
    log.commit(15, "fast")
    log.close()
    again = ReplayLog("n", capacity=100, path=tmp_path / "log")
    assert again.readers() == {"slow": 2, "fast": 15} and again.first == 2
    again.commit(18, "fast")
    assert again.first == 2
    again.close()


def test_file_backed_row_counting_log_recounts_on_open(tmp_path: Path) -> None:
    """A reopened file log counts the rows of the elements it still holds."""
    log = ReplayLog("n", capacity=100, path=tmp_path / "log", rows=len)
    log.append([b"x" * n for n in range(1, 11)])
    log.commit(4)
    log.close()
    again = ReplayLog("n", capacity=100, path=tmp_path / "log", rows=len)
    assert again.end_within(4, 11) == {"end": 6, "rows": 11}  # 5 + 6
    again.close()


def test_a_file_store_keeps_its_log_name_and_refuses_another(tmp_path: Path) -> None:
    """state.json names the log a directory holds: reopened under its name it opens, under
    another it is refused before anything is read (its elements would reach another log's
    readers); a directory of an earlier version, without a name, takes the first it is given."""
    store = FileStore(tmp_path / "log", "nums")
    store.append(b"one")
    store.close()
    assert json.loads((tmp_path / "log" / "state.json").read_text())["name"] == "nums"
    with pytest.raises(LogDirectoryError, match=r"holds the log 'nums', not 'other'") as refused:
        FileStore(tmp_path / "log", "other")
    assert refused.value.holds == "nums"
    again = FileStore(tmp_path / "log", "nums")
    assert again.read(0, 1) == [b"one"]
    again.close()
    state = json.loads((tmp_path / "log" / "state.json").read_text())
    del state["name"]  # as an earlier version wrote it
    (tmp_path / "log" / "state.json").write_text(json.dumps(state))
    older = FileStore(tmp_path / "log", "renamed")
    older.close()
    assert json.loads((tmp_path / "log" / "state.json").read_text())["name"] == "renamed"
    with pytest.raises(LogDirectoryError):
        FileStore(tmp_path / "log", "nums")
