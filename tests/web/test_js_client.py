"""The JavaScript package (js/) from the Python suite.

* The live page serves the package's browser modules themselves (js/src, which the wheel
  carries as rstreams/web/static): every module rsio.js imports is served, and the wheel's
  build configuration maps exactly those modules there, not the Node-only ones; checked here
  without Node.
* ``npm test`` (Node's test runner, js/test/) against real ``rstreams serve`` processes run by
  this interpreter: it needs Node 20+ and ``npm ci`` in js/, and skips, saying which, without
  them. scripts/test.sh runs ``npm ci``, ``npm run typecheck`` and ``npm test`` itself and then
  sets ``RSTREAMS_NPM_TESTED=1``, so the suite does not run twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.web import STATIC_FILES, LivePage, static_file
from testkit import patience
from testkit.bound import family, within
from testkit.chromium import chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "js"
STATIC = ROOT / "src" / "rstreams" / "web" / "static"
NODE = shutil.which("node")
IMPORT = re.compile(r'^(?:import|export)\s[^;]*?from\s+"\./([^"]+)"', re.M)


def imported_modules(name: str) -> set[str]:
    """``name`` and every module of js/src it imports, directly or not."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += IMPORT.findall((JS / "src" / module).read_text())
    return seen


@pytest.mark.timeout(10)
def test_the_page_serves_the_packages_own_modules() -> None:
    """The page serves js/src's files (no copy of them exists), every module rsio.js needs among them."""
    modules = imported_modules("rsio.js")
    assert {"rsio.js", "rsio-wire.js", "rsio-metadata.js"} <= modules
    assert modules == {name for name in STATIC_FILES if name.startswith("rsio")}, (
        "STATIC_FILES (rstreams.web._http) must list exactly the modules js/src/rsio.js imports"
    )
    for name in modules:
        assert static_file(name) == (JS / "src" / name).read_bytes()
        assert not (STATIC / name).exists(), f"a copy of {name} is back in src/rstreams/web/static"


@pytest.mark.timeout(10)
def test_the_wheel_carries_the_browser_modules_of_js_src_only() -> None:
    """pyproject's wheel build maps each module rsio.js needs from js/src to rstreams/web/static,
    where static_file looks first, and leaves js/src's Node-only modules out of the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force_include = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    browser = imported_modules("rsio.js")
    assert force_include == {f"js/src/{name}": f"rstreams/web/static/{name}" for name in browser}
    node_only = {path.name for path in (JS / "src").glob("*.js")} - browser
    assert {"node.js", "sessions.js", "gate.js"} <= node_only
    assert not {source for source in force_include if Path(source).name in node_only}


def summary(output: str) -> dict[str, int]:
    return {
        key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", output, re.M)
    }


@pytest.mark.timeout(600)
def test_npm_test_against_python_servers() -> None:
    """Every Node test passes, none skipped: codec vectors, serving, auth, keepalive, end to end."""
    if os.environ.get("RSTREAMS_NPM_TESTED") == "1":
        pytest.skip("scripts/test.sh ran npm test in js/ already")
    if NODE is None:
        pytest.skip("node is not installed (Node 20+ runs the JavaScript package's tests)")
    if not (JS / "node_modules" / "ws").is_dir():
        pytest.skip("js/node_modules is missing: run `npm ci` in js/ (scripts/test.sh does)")
    tests = sorted(str(path.relative_to(JS)) for path in (JS / "test").glob("*.test.mjs"))
    done = patience.run(
        [NODE, "--test", "--test-timeout=180000", *tests],
        540,  # ~140 s alone; ~230 s beside a busy pytest run on two cores
        cwd=JS,
        env={**os.environ, "RSTREAMS_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        check=False,
    )
    counts = summary(done.stdout)
    assert done.returncode == 0 and counts.get("fail") == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert counts["skipped"] == 0 and counts["pass"] >= 150, counts


# -- the package in a real browser --------------------------------------------------------------
BROWSER_SCRIPT = """(async () => {
  const { connect, fromIterable, ConnectionClosedError } = await import("/rsio.js");
  const text = async (conn, name) => {
    const out = [];
    for await (const item of conn.stream(name, { window: 2, decode: "text" })) out.push(item);
    return out;
  };
  const result = {};
  // auth (PROTOCOL.md §15): the token accepted, another refused
  const authed = await connect(%(token_url)s, { auth: %(token)s });
  await authed.ready;
  result.authenticated = authed.authenticated;
  result.counted = await text(authed, "counter?from=1&to=6");
  await authed.close();
  const refused = await connect(%(token_url)s, { auth: "not the token" });
  result.refusal = await refused.ready.then(
    () => "accepted", (e) => e instanceof ConnectionClosedError && e.reason);
  // publishing (§1): the server subscribes to this page's rstreams/upload, within its demand
  const rows = Array.from({ length: %(rows)d }, (_, i) => `browser row ${i}`);
  const record = { requested: 0, emitted: 0, maxOutstanding: 0 };
  const upload = fromIterable([JSON.stringify({ log: "out", token: "page-1" }), ...rows]);
  const recording = { subscribe(s) { upload.subscribe({
    onSubscribe: (sub) => s.onSubscribe({ request(n) {
      record.requested += n;
      record.maxOutstanding = Math.max(record.maxOutstanding, record.requested - record.emitted);
      sub.request(n);
    }, cancel: () => sub.cancel() }),
    onNext: (x) => { record.emitted += 1; s.onNext(x); },
    onError: (e) => s.onError(e), onComplete: () => s.onComplete() }); } };
  const publisher = await connect(%(log_url)s, { publishers: { "rstreams/upload": recording } });
  result.staged = JSON.parse(await publisher.request("out?staged=page-1", { decode: "text" }));
  const publish = "out?publish=0&writer=page&tokens=page-1";
  result.published = JSON.parse(await publisher.request(publish, { decode: "text" }));
  await publisher.close();
  result.record = record;
  return result;
})()"""


def _serve(started: list[subprocess.Popen[bytes]], *args: str, stdin: bytes | None = None) -> str:
    """Start ``rstreams serve ...`` with this interpreter (added to ``started``); the URL it serves on."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", *args],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    started.append(process)
    assert process.stdin is not None and process.stdout is not None
    if stdin is not None:
        process.stdin.write(stdin)
    process.stdin.close()
    line = patience.child_line(process, "its serving line").decode()
    found = re.search(r" on ((?:ws|tcp)://\S+)", line)
    assert found is not None, line
    return found.group(1)


@pytest.mark.timeout(240)  # (above its build, the server's exit and the page: 60 + 10 + 60 s of own time)
def test_the_package_in_chromium_authenticates_and_publishes(tmp_path: Path) -> None:
    """In Chromium: auth accepted and refused; a page's publisher uploads within the server's demand."""
    executable = find_chromium()
    if executable is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it)")
    rows = 3000
    servers: list[subprocess.Popen[bytes]] = []
    try:
        with LivePage({"x": rstreams.just(b"{}")}, publisher="x") as live:
            # the script runs in the live page: the servers accept its origin (--origin)
            token_url = _serve(
                servers, "ws://127.0.0.1:0/rsio", "--token", "tk-browser", "--origin", live.url
            )
            log_url = _serve(
                servers, "ws://127.0.0.1:0/rsio", "nums", "--sink", "out", "--origin", live.url, stdin=b"a\n"
            )

            async def drive() -> Any:
                async with chromium(executable, tmp_path / "profile") as browser:
                    page = await browser.open(live.url)
                    for _ in range(200):  # the page's modules are loaded once live.js ran
                        if await page.evaluate("window.rsioLive !== undefined"):
                            break
                        await asyncio.sleep(0.05)
                    script = BROWSER_SCRIPT % {
                        "token_url": json.dumps(token_url),
                        "token": json.dumps("tk-browser"),
                        "log_url": json.dumps(log_url),
                        "rows": rows,
                    }
                    return await within(page.evaluate(script), 60, family())

            result = asyncio.run(drive())
        read = patience.run(
            [
                sys.executable,
                "-m",
                "rstreams.cli",
                "subscribe",
                log_url,
                f"out?from=0&to={rows}",
                "--demand",
                "64",
            ],
            60,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        for process in servers:
            process.terminate()
            patience.wait_child(process, 10)
            if process.stdout is not None:
                process.stdout.close()
    assert result["authenticated"] is True
    assert result["counted"] == ["1", "2", "3", "4", "5"]
    assert result["refusal"] == "authentication failed (PROTOCOL.md §15.3)"
    assert result["staged"] == {"count": rows}
    assert result["published"] == {"published": True, "count": rows}
    # the server's demand bounded the page's publisher: a window of 1,024, renewed as it staged
    assert 0 < result["record"]["maxOutstanding"] <= 1024, result["record"]
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines() == [f"browser row {i}" for i in range(rows)]
