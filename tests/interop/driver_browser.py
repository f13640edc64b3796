"""The browser client's driver for the interop matrix: ``python tests/interop/driver_browser.py PLAN.json``.

Runs every case of the plan in headless Chromium with the browser build of @rstreams/rsio
(``js/src/rsio.js``, WebSocket only) through ``tests/interop/driver-core.mjs``, the same code
the Node driver runs, and prints the lines it reports as JSON, one case at a time, then
``{"event": "exit"}``. The page and the modules come from a plain HTTP server on 127.0.0.1 over
the repository's ``js/src`` and ``tests/interop``; the page's WebSocket goes straight to the
server under test. Needs ``PYTHONPATH`` with ``tests`` (for ``testkit.chromium``).

The page's load and each case are hang guards of own time (:class:`testkit.bound.Bound` over
this process, Chromium, and the case's server, ``pids`` in the plan), not of wall time.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from testkit.bound import Bound, family
from testkit.chromium import chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
SERVED = ("/js/src/", "/tests/interop/")
LOAD_SECONDS = 20.0
CASE_SECONDS = 120.0

RUN = """(async () => {
  const core = await import("/tests/interop/driver-core.mjs");
  const rsio = await import("/js/src/rsio.js");
  const lines = [];
  await core.runCase(%s, rsio, (line) => lines.push(line), core.webSha256);
  return lines;
})()"""


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


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def run(plan: dict[str, Any], executable: str) -> None:
    files = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Files, directory=str(ROOT)))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{files.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory(prefix="rsio-interop-chromium-") as profile:
            async with chromium(executable, Path(profile)) as browser:
                page = await browser.open(origin + "/")
                async with Bound(LOAD_SECONDS, family()):  # the navigation to the page is done
                    while True:
                        loaded = await page.evaluate("location.href + ' ' + document.readyState")
                        if loaded == f"{origin}/ complete":
                            break
                        await asyncio.sleep(0.05)
                for spec in plan["cases"]:
                    try:
                        async with Bound(CASE_SECONDS, [*family(), *spec.get("pids", [])]):
                            lines = await page.evaluate(RUN % json.dumps(spec))
                    except TimeoutError:
                        emit({"case": spec["id"], "event": "timeout", "step": "the whole case"})
                        continue
                    for line in lines:
                        emit(line)
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
