"""The interop drivers' waits are hang guards of own time: a peer that never answers fails the
wait it hangs (the connection, a count), and a wait starved of its CPU is not taken for a hang.

Each driver is given a plan whose cases wait 1 s (``"wait"``) against a listener that accepts
and never answers, and against a server whose stream never sends (``conformance/never``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit import patience

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LINUX_SCHEDSTAT = os.path.exists("/proc/thread-self/schedstat") and hasattr(os, "sched_setaffinity")
DRIVERS = ["python", "javascript", "browser"]


def command(driver: str, plan: Path) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    paths = [str(ROOT / "src"), str(ROOT / "tests"), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    if driver == "javascript":
        if shutil.which("node") is None or not (ROOT / "js" / "node_modules" / "ws").is_dir():
            pytest.skip("no node, or js/node_modules is missing (npm ci in js/)")
        return ["node", str(HERE / "driver.mjs"), str(plan)], env
    if driver == "browser":
        if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
            pytest.skip("chromium is not installed")
        return [sys.executable, str(HERE / "driver_browser.py"), str(plan)], env
    return [sys.executable, str(HERE / "driver.py"), str(plan)], env


def drive(driver: str, cases: list[dict[str, Any]], tmp_path: Path, pids: list[int]) -> list[dict[str, Any]]:
    """What the driver printed for ``cases``; it must have printed its exit line and exited 0."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"cases": cases}), encoding="utf-8")
    argv, env = command(driver, plan)
    done = patience.run(argv, 120, capture_output=True, text=True, env=env)  # (hang guard: own time)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    said = (done.returncode, lines, done.stderr[-2000:])
    assert done.returncode == 0 and lines[-1:] == [{"event": "exit"}], said
    return lines


@pytest.fixture
def silent() -> Iterator[tuple[str, int]]:
    """A TCP listener that accepts connections and never sends a byte: (host, port)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.listen(8)
        yield listener.getsockname()[:2]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_peer_that_never_answers_fails_the_connection_s_wait(
    driver: str, silent: tuple[str, int], tmp_path: Path
) -> None:
    host, port = silent
    scheme = "ws" if driver == "browser" else "tcp"
    url = f"{scheme}://{host}:{port}" + ("/rsio" if scheme == "ws" else "")
    case = {"id": "silent", "url": url, "pids": [], "wait": 1, "streams": [{"name": "x", "script": "r1 t"}]}
    lines = drive(driver, [case], tmp_path, [])
    # (a client may count itself connected before the server's hello: then the stream's wait fails)
    gave_up = [
        line
        for line in lines
        if line["event"] == "timeout"
        or (line["event"] == "connect-failed" and line["message"].startswith("TimeoutError"))
    ]
    assert gave_up and [line["event"] for line in lines[-2:]] == ["done", "exit"], lines


@pytest.mark.timeout(300)
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_stream_that_never_sends_fails_its_count_s_wait(driver: str, tmp_path: Path) -> None:
    scheme = "ws://127.0.0.1:0/rsio" if driver == "browser" else "tcp://127.0.0.1:0"
    offer = str(HERE / "offer.py")
    pages = ["--origin", "*"] if driver == "browser" else []  # (the driver's page has an origin of its own)
    with patience.serving(scheme, "--publishers", offer, *pages) as (server, url):
        streams = [
            {"name": "conformance/range?n=3", "script": "r3 t"},
            {"name": "conformance/never", "script": "r1 w1"},
        ]
        case = {"id": "never", "url": url, "pids": [server.pid], "wait": 1, "streams": streams}
        lines = drive(driver, [case], tmp_path, [server.pid])
    events = [(line.get("stream"), line["event"]) for line in lines]
    assert events[:5] == [(None, "connected"), (0, "next"), (0, "next"), (0, "next"), (0, "complete")], lines
    assert events[5] == (1, "timeout") and lines[5]["step"] == "w1", lines
    # (then the stream may see its connection close under it)
    assert events[6:] in (
        [(None, "done"), (None, "exit")],
        [(1, "closed"), (None, "done"), (None, "exit")],
    ), lines


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux's schedstat and CPU affinity")
@pytest.mark.timeout(120)
def test_the_node_drivers_clock_does_not_count_the_time_it_waited_for_a_cpu(tmp_path: Path) -> None:
    """Node on one CPU with four processes spinning on it works 0.1 s of its own CPU: that takes
    about 0.5 s of wall time, its own-time clock stays near 0.1 s (testkit.patience's proof, for
    own-time.mjs)."""
    if shutil.which("node") is None:
        pytest.skip("no node")
    cpu = min(os.sched_getaffinity(0))
    code = (
        "const { ownTime } = await import(process.argv[1]);\n"
        "const own = ownTime([]); const start = performance.now();\n"
        "const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };\n"
        "const from = cpu(); while (cpu() - from < 0.1) {}\n"
        "console.log(JSON.stringify({ own: own(), wall: (performance.now() - start) / 1000 }));\n"
    )
    spin = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print('spinning', flush=True)\nwhile True: pass"
    spinners: list[subprocess.Popen[str]] = []
    try:
        for _ in range(4):
            spinners.append(subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True))
            assert patience.child_line(spinners[-1], "'spinning'") == "spinning\n"
        module = str(HERE / "own-time.mjs")
        node = ["taskset", "-c", str(cpu), "node", "--input-type=module", "-e", code, module]
        done = patience.run(node, 60, capture_output=True, text=True, check=True)
    finally:
        for child in spinners:
            child.kill()
            child.wait()
            assert child.stdout is not None
            child.stdout.close()
    measured = json.loads(done.stdout)
    assert measured["wall"] > 0.3, f"node was not starved ({measured}): this run proves nothing"
    assert measured["own"] < 0.3, measured
