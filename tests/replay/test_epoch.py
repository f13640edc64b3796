"""A log's epoch (docs/replay.md, *Epochs*): new for each log in memory, kept on disk for a
file-backed one; a request naming another epoch is refused with nothing done. Real restarts of
``rstreams serve``, in memory and with ``--path``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import LogEpochError, RemoteLogError, ReplayLog, fetch_range, request_json, stream_range
from testkit import patience

pytestmark = pytest.mark.timeout(60)

EPOCH = re.compile(r"[0-9a-f]{16}")


@contextmanager
def serving(url: str, lines: int, *extra: str) -> Iterator[str]:
    """``rstreams serve URL nums`` in a process of its own, fed ``lines`` lines; its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", url, "nums", "--capacity", "100", *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(b"line %d\n" % i for i in range(lines)))
        server.stdin.flush()
        yield server.stdout.readline().decode().split(" on ")[-1].strip()
    finally:
        patience.stop_child(server, 20)


def until_end(url: str, end: int) -> dict[str, Any]:
    """``nums?latest`` once the log holds ``end`` positions (its input is read as it arrives)."""
    fetch_range(url, "nums", end - 1, end, timeout=20)
    return request_json(url, "nums?latest")


def test_each_memory_log_has_an_epoch_of_its_own_in_every_info() -> None:
    one, two = ReplayLog("a"), ReplayLog("a")
    assert EPOCH.fullmatch(one.epoch) and one.epoch != two.epoch
    assert one.info()["epoch"] == one.epoch
    one.check_epoch(one.epoch)
    said = rf"epoch '{two.epoch}' is not this log's \('{one.epoch}'\)"
    with pytest.raises(LogEpochError, match=said) as wrong:
        one.check_epoch(two.epoch)
    assert isinstance(wrong.value, LookupError)
    assert (wrong.value.given, wrong.value.epoch) == (two.epoch, one.epoch)


def test_a_request_naming_another_epoch_is_refused_with_nothing_done(serve: Any) -> None:
    """Reads, commits, holds and the others take ``epoch=E``: the log's own goes through, another
    fails that request alone (onError), before anything is read, committed or held."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"a", b"b", b"c"])
    server = serve({"nums": log})
    assert request_json(server.url, "nums?latest")["epoch"] == log.epoch
    assert request_json(server.url, f"nums?commit=1&reader=r&epoch={log.epoch}")["first"] == 1
    assert list(stream_range(server.url, "nums", 1, 3, epoch=log.epoch)) == [b"b", b"c"]
    other = "0" * 16
    for name in ("nums?commit=3&reader=r", "nums?hold=2&reader=p", "nums?latest"):
        with pytest.raises(RemoteLogError, match=r"LogEpochError: replay log 'nums': epoch '0{16}' is not"):
            request_json(server.url, f"{name}&epoch={other}")
    with pytest.raises(RemoteLogError, match="LogEpochError"):
        list(stream_range(server.url, "nums", 1, 3, epoch=other))
    assert log.readers() == {"r": 1} and log.pending() == {} and log.first == 1


def test_fetch_range_takes_the_epoch_and_refuses_a_range_of_another(serve: Any) -> None:
    """``fetch_range(..., epoch=E)``: the log's own epoch reads as without, packed or not;
    another is refused with the server's LogEpochError naming both epochs, and nothing else."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"a", b"b", b"c"])
    server = serve({"nums": log})
    for pack in (0, 2):
        assert fetch_range(server.url, "nums", 0, 3, pack=pack, epoch=log.epoch) == [b"a", b"b", b"c"]
        with pytest.raises(RemoteLogError) as refused:
            fetch_range(server.url, "nums", 0, 3, pack=pack, epoch="0" * 16)
        said = str(refused.value)
        assert said.startswith(f"LogEpochError: replay log 'nums': epoch '{'0' * 16}' is not this log's")
        assert f"('{log.epoch}')" in said and "the log was restarted since the reader saw it" in said
    assert fetch_range(server.url, "nums", 1, 2, epoch=None) == [b"b"]
    assert log.readers() == {} and log.first == 0


def test_a_memory_log_restarted_and_refilled_past_a_reader_refuses_its_epoch(tmp_path: Path) -> None:
    """``rstreams serve`` killed and started again on the same URL with a memory log that is
    refilled past where a reader committed: the positions are there, but the epoch is another, so
    the reader's commit and reads naming its epoch are refused and nothing is trimmed."""
    with serving("tcp://127.0.0.1:0", 10) as url:
        before = until_end(url, 10)
        assert request_json(url, f"nums?commit=5&reader=q&epoch={before['epoch']}")["first"] == 5
    with serving(url, 40) as again:
        assert again == url
        after = until_end(url, 40)
        assert EPOCH.fullmatch(after["epoch"]) and after["epoch"] != before["epoch"]
        refused = f"epoch '{before['epoch']}' is not this log's"
        with pytest.raises(RemoteLogError, match=refused):
            request_json(url, f"nums?commit=8&reader=q&epoch={before['epoch']}")
        with pytest.raises(RemoteLogError, match=refused):
            list(stream_range(url, "nums", 5, 8, epoch=before["epoch"]))
        with pytest.raises(RemoteLogError, match=refused):
            fetch_range(url, "nums", 5, 8, epoch=before["epoch"])
        assert fetch_range(url, "nums", 5, 8, epoch=after["epoch"]) == [b"line 5", b"line 6", b"line 7"]
        assert request_json(url, "nums?readers")["readers"] == {}
        assert request_json(url, "nums?latest")["first"] == 0


def test_a_file_backed_log_keeps_its_epoch_across_a_restart(tmp_path: Path) -> None:
    """``rstreams serve --path DIR`` killed and started again: the same epoch, so a reader that
    recorded it goes on (nothing false fires)."""
    options = ("--path", str(tmp_path / "nums"), "--input-from", "0")
    with serving("tcp://127.0.0.1:0", 10, *options) as url:
        before = until_end(url, 10)
        request_json(url, f"nums?commit=5&reader=q&epoch={before['epoch']}")
    assert json.loads((tmp_path / "nums" / "state.json").read_text())["epoch"] == before["epoch"]
    with serving(url, 20, *options):
        after = until_end(url, 20)
        assert after["epoch"] == before["epoch"]
        assert request_json(url, f"nums?commit=12&reader=q&epoch={before['epoch']}")["first"] == 12
        assert fetch_range(url, "nums", 12, 14) == [b"line 12", b"line 13"]


def test_a_log_directory_of_an_earlier_version_gets_an_epoch_it_then_keeps(tmp_path: Path) -> None:
    """A ``state.json`` without an epoch (written before epochs): the log opens as before, makes
    an epoch and writes it at once, and opens with that epoch from then on."""
    log = ReplayLog("n", path=tmp_path / "n")
    log.append([b"a", b"b"])
    log.commit(1)
    log.close()
    state = tmp_path / "n" / "state.json"
    older = {k: v for k, v in json.loads(state.read_text()).items() if k != "epoch"}
    state.write_text(json.dumps(older))
    opened = ReplayLog("n", path=tmp_path / "n")
    assert (opened.first, opened.end) == (1, 2) and EPOCH.fullmatch(opened.epoch)
    assert opened.epoch != log.epoch and json.loads(state.read_text())["epoch"] == opened.epoch
    opened.close()
    reopened = ReplayLog("n", path=tmp_path / "n")
    assert reopened.epoch == opened.epoch
    reopened.close()
