"""`rstreams demo`'s pipeline, short, on the shared session: rows, windows back, Parquet, the live page;
and the command stopped by SIGTERM or Ctrl-C (SIGINT) at several moments, in a process of its own
(the same with a stand-in for Spark, cheaper: tests/spark/test_demo_signals.py)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rstreams.spark._demo import run_demo
from testkit import patience
from testkit.bound import family, within
from testkit.net import connect_child
from testkit.spark import TEST_TIMEOUT, kill_group, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class _Output(io.StringIO):
    """The demo's output; ``page`` is set when it prints the live page's address."""

    def __init__(self) -> None:
        super().__init__()
        self.page = threading.Event()
        self.page_url = ""

    def write(self, text: str) -> int:
        if text.startswith("live page: "):
            self.page_url = text.split()[2]
            self.page.set()
        return super().write(text)


def _watch_page(out: _Output, seen: dict[str, Any]) -> None:
    """What a browser does: read config.json, subscribe over RS.io on its WebSocket, take a row."""
    if not patience.wait(out.page, 60, family()):
        return
    config = json.loads(patience.urlopen(out.page_url + "config.json", 10, family())[2])
    seen["config"] = config

    async def first_row() -> None:
        conn = await connect_child(config["url"])
        try:
            async for element in conn.publisher(config["publisher"]):
                seen["row"] = json.loads(element)
                break
        finally:
            await conn.aclose()

    try:
        asyncio.run(within(first_row(), 200, family()))
    except Exception as error:  # reported by the assertions below, with the demo's output
        seen["error"] = repr(error)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_demo_pipeline_publishes_windows_and_saves_them(spark: Any, tmp_path: Path) -> None:
    """Sensors -> replay log -> Spark windowed averages -> rstreams sink -> live view, page and Parquet."""
    out = _Output()
    seen: dict[str, Any] = {}
    watcher = threading.Thread(target=_watch_page, args=(out, seen), daemon=True)
    watcher.start()
    figures = run_demo(
        seconds=15, batch=20_000, window=1, out=str(tmp_path), stream=out, spark=spark, web="127.0.0.1:0"
    )
    watcher.join(30)
    text = out.getvalue()
    assert figures["rows"] > 0 and figures["batches"] > 0, text
    assert figures["results"] > 0, text  # window averages came back over RS.io
    assert "sensor-0" in text and "window" in text
    assert re.search(r"query behind [\d,]+ rows", text), text  # the source's lag, from Spark's progress
    saved = spark.read.parquet(figures["parquet"]).collect()
    assert saved and {"sensor", "avg", "n"} <= set(saved[0].asDict())
    # the live page: its address printed, its config naming results, a row over its WebSocket
    assert out.page_url.startswith("http://127.0.0.1:"), text
    assert seen.get("config", {}).get("publisher") == "results", (seen, text)
    assert {"sensor", "avg", "window"} <= set(seen.get("row", {})), (seen, text)


def _carrying(marker: str) -> list[int]:
    """The processes whose environment holds ``marker`` (the demo's, its JVM's, its workers')."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if marker.encode() in environ.read():
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


def _kill_carrying(marker: str) -> None:
    for pid in _carrying(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize(
    ("signum", "moment", "whom"),
    [
        (signal.SIGTERM, "(Spark's log: ", "group"),  # the JVM starting
        (signal.SIGTERM, "pipeline started after ", "group"),  # the query started, Python workers starting
        (signal.SIGTERM, "first micro-batch done after ", "every"),  # the pipeline running
    ],
)
def test_a_signal_stops_the_demo_cleanly(signum: int, moment: str, whom: str, tmp_path: Path) -> None:
    """SIGTERM once the demo prints ``moment``, to its process group (as timeout(1) or a shell
    sends it) or to every process it started (as a service manager stops a service): the demo
    says it stops, stops the query, Spark and the server, saves what was published or says
    nothing was, and exits with 128 + the signal's number; nothing on its standard error (no
    Java stack trace: Spark's log goes to a file); the JVM ends with it. Its JVM is in a group
    of its own, so a signal to the demo's group leaves it to the demo to stop; a JVM signalled
    too has ended, which the demo says in a line. (SIGINT, and a signal while Spark starts,
    with a stand-in for Spark: tests/spark/test_demo_signals.py.)"""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "rstreams.cli", "demo", "--seconds", "600", "--no-web"]
    command += ["--batch", "20000", "--window", "1", "--out", str(out)]
    marker = f"RSTREAMS_DEMO_TEST={tmp_path}"  # inherited by the JVM and its Python workers
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "RSTREAMS_DEMO_TEST": str(tmp_path)}
    with (tmp_path / "stderr").open("w+") as errors:
        demo = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env, start_new_session=True
        )
        assert demo.stdout is not None
        try:
            lines, line = [], ""
            for line in demo.stdout:  # bounded by the test's timeout
                lines.append(line)
                if line.startswith(moment):
                    os.killpg(demo.pid, signum)
                    for pid in _carrying(marker) if whom == "every" else ():
                        with contextlib.suppress(ProcessLookupError):
                            if os.getpgid(pid) != demo.pid:  # once each: a second ends the demo at once
                                os.kill(pid, signum)
                    break
            rest, _ = patience.communicate(demo, 180)
            text = "".join(lines) + rest
            assert line.startswith(moment), text
            wait_until(lambda: not _carrying(marker), 120, "the JVM to end with the demo")
        finally:
            kill_group(demo)
            _kill_carrying(marker)  # its JVM and workers, whatever happened
        errors.seek(0)
        stderr = errors.read()
    assert demo.returncode == 128 + signum, (demo.returncode, text, stderr)
    assert f"{signal.Signals(signum).name}: stopping the demo" in text, text
    assert "saved to " in text or "nothing saved" in text or "were not saved" in text, text
    if whom != "every":  # (signalled too, the JVM may end before the demo stops it, or after)
        assert "Spark's JVM has ended" not in text, text
    assert stderr == "", stderr
    assert (out / "spark.log").exists()
