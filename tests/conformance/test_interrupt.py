"""Ctrl-C during a run: the command prints what finished so far, names the case it stopped in,
writes --junit for the cases that finished and the one that was running, and exits 130 (it
exited 130 in silence, and wrote no JUnit file)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rstreams.conformance import conformance_publishers
from rstreams.net import serve
from testkit.bound import within


def _default_sigint() -> None:
    """In the child, before Python starts: SIGINT as a terminal's Ctrl-C delivers it, even where this
    test runs with SIGINT ignored (a background job), which the child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.asyncio
@pytest.mark.timeout(240)  # (above its two waits on the child: 60 + 60 s of own time)
async def test_ctrl_c_prints_the_cases_finished_and_exits_130(tmp_path: Path) -> None:
    """One case at a time; the server serves the first two ranges a case asks for and lets the
    third never end, so that case waits; SIGINT to the command's PID then. The --junit file holds
    the finished cases as the summary lists them, and the running one as an error saying it was
    interrupted; no temporary file is left beside it."""
    full = conformance_publishers()
    ranges: list[str] = []
    stuck = asyncio.Event()

    def slow_third_range(path: str, params: dict[str, str]) -> object:
        if path == "conformance/range" and params.get("n", "0") != "0":  # the probe's n=0 runs
            ranges.append(params["n"])
            if len(ranges) == 3:
                stuck.set()
                return full("conformance/never", {})
        return full(path, params)

    server = await serve("tcp://127.0.0.1:0", slow_third_range, on_connection=full.on_connection)
    argv = [server.url, "-k", "dm.", "-v", "--jobs", "1", "--timeout", "60", "--case-timeout", "120"]
    junit = tmp_path / "report.xml"
    argv += ["--junit", str(junit)]
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rstreams.cli",
        "conformance",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=_default_sigint,
    )
    try:
        await within(stuck.wait(), 60, [child.pid])
        os.kill(child.pid, signal.SIGINT)
        out, err = await within(child.communicate(), 60, [child.pid])
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await server.aclose()
    said = out.decode()
    assert child.returncode == 130, (said, err.decode())
    header = said.splitlines()[0]
    match = re.fullmatch(
        rf"RS\.io conformance against {re.escape(server.url)}: "
        r"(\d+) of (\d+) cases, interrupted by Ctrl-C during (dm\.\w+)",
        header,
    )
    assert match, said
    finished, total, running = match.groups()
    assert 1 <= int(finished) < int(total), said
    listed = [line.split()[1] for line in said.splitlines() if line.startswith(("PASS", "FAIL", "skip"))]
    assert len(listed) == int(finished) and running not in listed, said
    totals = said.splitlines()[-1].split()
    assert totals[0] == "total" and sum(map(int, totals[1:])) == int(finished), said
    assert "Traceback" not in err.decode(), err.decode()

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    testcases = {t.get("name", ""): t for t in suite.iter("testcase")}
    assert sorted(testcases) == sorted([*listed, running])
    assert suite.get("tests") == str(int(finished) + 1) and suite.get("errors") == "1"
    error = testcases[running].find("error")
    assert error is not None and error.get("type") == "Interrupted", ET.tostring(suite)
    assert "interrupted by Ctrl-C" in error.get("message", "")
    for name in listed:
        assert testcases[name].find("error") is None, ET.tostring(testcases[name])
    stopped = suite.find("properties/property[@name='interrupted']")
    assert stopped is not None and stopped.get("value") == header.split(": ", 1)[1]
    assert os.listdir(tmp_path) == ["report.xml"]
