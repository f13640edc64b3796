"""``rstreams serve URL NAME --sink S --path DIR``: each sink log kept in ``DIR/sinks/S``, so a
server restarted from the same ``--path`` keeps its rows, its epoch and its record of published
batches (docs/replay.md, *Epochs*). Real restarts of ``rstreams serve``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from rstreams.cli import main
from rstreams.replay import ReplayLog, fetch_range, request_json, upload
from testkit.replay import serving_sink

pytestmark = pytest.mark.timeout(60)


def publish(url: str, token: str, rows: list[bytes], batch: int = 0) -> bool:
    """Stage ``rows`` on ``results`` and publish them as batch ``batch`` of writer ``w``."""
    upload(url, "results", token, rows, timeout=20)
    answer = request_json(url, f"results?publish={batch}&writer=w&tokens={token}", timeout=20)
    return bool(answer["published"])


def test_a_sink_log_served_with_path_keeps_rows_epoch_and_batches_across_a_restart(tmp_path: Path) -> None:
    """Published on the first server; the second, from the same ``--path``, has the same epoch
    and rows, and refuses to publish the same batch again (nothing appended)."""
    where = ("--path", str(tmp_path / "kept"))
    rows = [b"a", b"b", b"c"]
    with serving_sink("tcp://127.0.0.1:0", *where) as url:
        assert publish(url, "t1", rows)
        before = request_json(url, "results?discard=")["epoch"]
        assert fetch_range(url, "results", 0, 3, timeout=20) == rows
    kept = tmp_path / "kept" / "sinks" / "results"
    assert json.loads((kept / "state.json").read_text())["epoch"] == before
    assert (tmp_path / "kept" / "state.json").exists()  # the log of standard input: DIR itself
    with serving_sink(url, *where) as again:
        assert again == url
        latest = request_json(url, "results?latest")
        assert (latest["epoch"], latest["end"]) == (before, 3)
        assert fetch_range(url, "results", 0, 3, timeout=20) == rows
        assert not publish(url, "t2", rows)  # a re-run batch: already published before the restart
        assert publish(url, "t3", [b"d"], batch=1)
        assert request_json(url, f"results?latest&epoch={before}")["end"] == 4


def test_a_sink_log_in_memory_gets_a_new_epoch_and_starts_empty() -> None:
    """Without ``--path`` (as before): the restarted sink log is another one."""
    with serving_sink("tcp://127.0.0.1:0") as url:
        assert publish(url, "t1", [b"a"])
        before = request_json(url, "results?latest")["epoch"]
    with serving_sink(url) as again:
        latest = request_json(again, "results?latest")
        assert latest["epoch"] != before and latest["end"] == 0


@pytest.mark.parametrize(
    ("sinks", "says"),
    [
        (["a/b"], "--sink 'a/b' with --path: a sink log is kept in DIR/sinks/NAME"),
        ([".."], "--sink '..' with --path"),
        (["out", "Out"], "--sink 'out' with --path: another --sink differs from it only in case"),
        (["lines"], "log 'lines' is named twice"),
    ],
)
def test_sink_names_that_are_not_a_directory_of_their_own_exit_2_with_path(
    sinks: list[str],
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    named = [option for sink in sinks for option in ("--sink", sink)]
    assert main(["serve", "tcp://127.0.0.1:0", "lines", *named, "--path", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: ") and says in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()  # refused before anything is made


def test_a_sink_directory_that_is_a_file_exits_2_naming_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    (tmp_path / "d" / "sinks").mkdir(parents=True)
    (tmp_path / "d" / "sinks" / "out").write_text("not a directory")
    assert main(["serve", "tcp://127.0.0.1:0", "lines", "--sink", "out", "--path", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: cannot keep sink log 'out' in --path ") and err.count("\n") == 1


def test_name_of_a_sink_log_kept_in_path_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A restart that serves as NAME a log kept there as a sink (roles swapped) is refused: NAME is
    kept in DIR itself, so it would serve the other log's elements under the sink's name."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    (tmp_path / "d" / "sinks" / "out").mkdir(parents=True)
    assert main(["serve", "tcp://127.0.0.1:0", "out", "--sink", "lines", "--path", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: NAME 'out': --path ") and "keeps a sink log of that name" in err
    assert err.count("\n") == 1 and not (tmp_path / "d" / "sinks" / "lines").exists()


def test_a_path_that_holds_another_log_exits_2_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`serve URL other --path DIR` after `serve URL nums --path DIR`: DIR's state names the log
    it holds, so its elements are not served under another name."""
    ReplayLog("nums", path=tmp_path / "d").close()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["serve", "tcp://127.0.0.1:0", "other", "--path", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: the log directory ") and err.count("\n") == 1
    assert "holds the log 'nums', not 'other'" in err and err.rstrip().endswith("(--path)")
