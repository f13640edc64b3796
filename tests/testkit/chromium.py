"""Headless Chromium driven over the Chrome DevTools Protocol, with the ``websockets`` library.

Just what the browser test needs: launch, open a page, evaluate JavaScript, take a
screenshot, quit. Flags: the ones known to work on this kind of machine (no sandbox as
root, no GPU, no network side traffic), and a fresh profile per launch.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from testkit.bound import within

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1100,760",
    "--remote-debugging-port=0",
)
LAUNCH_TIMEOUT = 20.0


def find_chromium() -> str | None:
    """The Chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One tab, attached with a flat session."""

    def __init__(self, browser: Browser, session: str) -> None:
        self._browser = browser
        self._session = session

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` (awaited if it is a promise), as JSON."""
        result = await self._browser.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            self._session,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self) -> bytes:
        result = await self._browser.call("Page.captureScreenshot", {"format": "png"}, self._session)
        return base64.b64decode(result["data"])


class Browser:
    """A DevTools connection: ``call`` sends a command and waits for its answer."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.console: list[str] = []  # the page's console messages and exceptions
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            future = self._waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(message)
            elif message.get("method") == "Runtime.consoleAPICalled":
                args = message["params"]["args"]
                self.console.append(" ".join(str(a.get("value", a.get("description"))) for a in args))
            elif message.get("method") == "Runtime.exceptionThrown":
                self.console.append(str(message["params"]["exceptionDetails"]))

    async def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        await self._ws.send(json.dumps(message))
        answer = await future
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    async def open(self, url: str) -> Page:
        target = await self.call("Target.createTarget", {"url": "about:blank"})
        attached = await self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        page = Page(self, attached["sessionId"])
        await self.call("Runtime.enable", None, attached["sessionId"])
        await self.call("Page.enable", None, attached["sessionId"])
        await self.call("Page.navigate", {"url": url}, attached["sessionId"])
        return page

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.call("Browser.close")
        self._reader.cancel()
        await self._ws.close()


async def _devtools_url(profile: Path, process: asyncio.subprocess.Process) -> str:
    """Wait (bounded) for Chromium to write DevToolsActivePort into the profile."""
    port_file = profile / "DevToolsActivePort"
    try:
        async with asyncio.timeout(LAUNCH_TIMEOUT):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"chromium exited with status {process.returncode} while starting")
                lines = port_file.read_text().split("\n") if port_file.exists() else []
                if len(lines) >= 2 and lines[1]:
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise TimeoutError(f"chromium did not open its DevTools port within {LAUNCH_TIMEOUT} s") from None


@contextlib.asynccontextmanager
async def chromium(executable: str, profile: Path) -> AsyncIterator[Browser]:
    """Launch headless Chromium with a fresh profile in ``profile``; quit it at the end."""
    process = await asyncio.create_subprocess_exec(
        executable,
        *FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        url = await _devtools_url(profile, process)
        async with connect(url, max_size=None, ping_interval=None) as ws:
            browser = Browser(ws)
            try:
                yield browser
            finally:
                await browser.aclose()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await within(process.wait(), 10, [process.pid])
            except TimeoutError:
                process.kill()
                await process.wait()
