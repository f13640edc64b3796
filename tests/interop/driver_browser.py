"""The browser client's driver for the interop matrix: ``python tests/interop/driver_browser.py PLAN.json``.

Runs every case of the plan in headless Chromium with the browser build of @rstreams/rsio
(``js/src/rsio.js``, WebSocket only) through ``tests/interop/driver-core.mjs``, the same code
the Node driver runs, and prints the lines it reports as JSON, one case at a time, then
``{"event": "exit"}``. The page and the modules come from a plain HTTP server on 127.0.0.1 over
the repository's ``js/src`` and ``tests/interop``; the page's WebSocket goes straight to the
server under test. Needs ``PYTHONPATH`` with ``tests`` (for ``testkit.chromium``).

The page's load and each case are hang guards of own time (:class:`testkit.bound.Bound` over
this process, Chromium, and the case's server, ``pids`` in the plan), not of wall time; so are
the waits inside a case (``driver-core.mjs``): the page cannot read ``/proc``, so this driver
tells it the own seconds of those processes every :data:`~testkit.bound.LOOK` at most
(``globalThis.ownSeconds``), which the page's clock reads. Told late (this process starved), the
page's clock only runs slow: a wait then lasts longer, never past its hard bound of wall time.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from testkit.bound import LOOK, Bound, Starved, family
from testkit.chromium import chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
SERVED = ("/js/src/", "/tests/interop/")
LOAD_SECONDS = 20.0
CASE_SECONDS = 120.0

RUN = """(async () => {
  const core = await import("/tests/interop/driver-core.mjs");
  const rsio = await import("/js/src/rsio.js");
  const lines = [];
  const told = () => {  // the own seconds this driver tells the page (tell_own_time)
    const start = globalThis.ownSeconds;
    return () => globalThis.ownSeconds - start;
  };
  await core.runCase(%s, rsio, (line) => lines.push(line), core.webSha256, told);
  return lines;
})()"""
TELL = "globalThis.ownSeconds = %.3f"


class Files(SimpleHTTPRequestHandler):
    """Serves only the two folders the page needs, and logs nothing."""

    def do_GET(self) -> None:
        if self.path == "/":
            body = b"<!doctype html><title>rstreams interop</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path.startswith(SERVED) and ".." not in self.path:
            super().do_GET()
        else:
            self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


async def tell_own_time(page: Any, pids: list[int]) -> None:
    """Tell the page the own seconds of this process, Chromium and ``pids`` (with their
    descendants) since now: wall time less what their threads waited for a CPU; until cancelled."""
    starved = Starved((), [*family(), *pids])
    start = time.monotonic()
    while True:
        await page.evaluate(TELL % max(time.monotonic() - start - starved.read(), 0.0))
        await asyncio.sleep(LOOK / 2)  # (how often the page's clock moves, not a wait for anything)


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def run(plan: dict[str, Any], executable: str) -> None:
    files = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Files, directory=str(ROOT)))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{files.server_address[1]}"
    try:
        # (Chromium's helper processes may still write the profile a moment after it quits)
        profiles = tempfile.TemporaryDirectory(prefix="rsio-interop-chromium-", ignore_cleanup_errors=True)
        with profiles as profile:
            async with chromium(executable, Path(profile)) as browser:
                page = await browser.open(origin + "/")
                async with Bound(LOAD_SECONDS, family()):  # the navigation to the page is done
                    while True:
                        loaded = await page.evaluate("location.href + ' ' + document.readyState")
                        if loaded == f"{origin}/ complete":
                            break
                        await asyncio.sleep(0.05)
                pids = sorted({pid for spec in plan["cases"] for pid in spec.get("pids", [])})
                await page.evaluate(TELL % 0)
                telling = asyncio.create_task(tell_own_time(page, pids))
                try:
                    for spec in plan["cases"]:
                        try:
                            async with Bound(CASE_SECONDS, [*family(), *spec.get("pids", [])]):
                                lines = await page.evaluate(RUN % json.dumps(spec))
                        except TimeoutError:
                            emit({"case": spec["id"], "event": "timeout", "step": "the whole case"})
                            continue
                        for line in lines:
                            emit(line)
                finally:
                    telling.cancel()
                if browser.console:
                    print("\n".join(browser.console), file=sys.stderr)
    finally:
        files.shutdown()
        files.server_close()


def main() -> None:
    executable = find_chromium()
    if executable is None:
        sys.exit("chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it)")
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    asyncio.run(run(plan, executable))
    emit({"event": "exit"})


if __name__ == "__main__":
    main()
