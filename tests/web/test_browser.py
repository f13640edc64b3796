"""The live page in a real headless Chromium: it connects, receives, draws; a screenshot is kept.

Needs Debian's ``chromium`` (scripts/test.sh installs it when apt-get can); skips, saying
so, when it is absent. The screenshot goes to the test's tmp dir and to
``test-artifacts/live-page.png`` at the repository root (git-ignored).
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.web import LivePage
from testkit.chromium import Page, chromium, find_chromium
from testkit.web import CountingPublisher

CHROMIUM = find_chromium()
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SENSORS = 4
WINDOW = 32
DEADLINE = 20.0

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it)",
)


def row(i: int) -> bytes:
    """A row shaped like the demo's results: a window average per sensor."""
    sensor = i % SENSORS
    second = i // SENSORS
    value = 20 + 3 * math.sin(second / 8 + sensor) + sensor
    start = f"2026-01-01T00:{second // 60 % 60:02d}:{second % 60:02d}"
    return json.dumps(
        {"sensor": f"sensor-{sensor}", "window": {"start": start}, "avg": value, "n": 100}
    ).encode()


STATE = """(() => {
  const s = window.rsioLive;
  if (s === undefined) return null;
  const figures = [...document.querySelectorAll("figure")].map((f) => ({
    sensor: f.dataset.sensor,
    points: Number(f.dataset.points ?? 0),
    polyline: f.querySelector("polyline").getAttribute("points").split(" ").filter(Boolean).length,
    drawn: f.querySelector("polyline").getAttribute("points"),
    last: Number(f.dataset.last),
  }));
  const shown = Number(document.getElementById("received").textContent.replace(/,/g, ""));
  return { status: s.status, error: s.error, received: s.received, outstanding: s.outstanding,
    window: s.window, rate: s.rate, shownReceived: shown, figures, server: s.server,
    serverRows: [...document.querySelectorAll("#server-publishers tr")].map((r) => r.dataset.publisher) };
})()"""


async def wait_for_state(page: Page, done: Any, what: str) -> dict[str, Any]:
    """Poll the page's state until ``done(state)``, for at most DEADLINE seconds."""
    state = None
    try:
        async with asyncio.timeout(DEADLINE):
            while True:
                state = await page.evaluate(STATE)
                if state is not None and done(state):
                    return dict(state)
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(
            f"the page did not reach {what} within {DEADLINE} s; last state: {state}"
        ) from None


@pytest.mark.timeout(60)
def test_live_page_connects_receives_and_draws(tmp_path: Path) -> None:
    """Chromium loads the page, which subscribes over RS.io and draws a chart per sensor within its window."""
    assert CHROMIUM is not None
    source = CountingPublisher(10**9, row)
    with LivePage({"results": source}, publisher="results", window=WINDOW) as live:

        async def drive() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], bytes, list[str]]:
            async with chromium(CHROMIUM, tmp_path / "profile") as browser:
                page = await browser.open(live.url)
                drawn = await wait_for_state(
                    page,
                    lambda s: (
                        s["received"] >= 2000
                        and len(s["figures"]) == SENSORS
                        and all(f["polyline"] >= 50 for f in s["figures"])
                        and s["shownReceived"] > 0
                    ),
                    "charts for every sensor",
                )
                served = await wait_for_state(  # beside the charts: the server's own numbers
                    page,
                    lambda s: (s["server"] or {}).get("publishers", {}).get("results", {}).get("open") == 1,
                    "the server's numbers (rstreams/stats)",
                )
                first = drawn["figures"][0]
                await wait_for_state(  # the chart keeps updating: the line and its newest value move
                    page,
                    lambda s: (
                        s["figures"][0]["drawn"] != first["drawn"]
                        and s["figures"][0]["last"] != first["last"]
                    ),
                    "a redrawn chart",
                )
                png = await page.screenshot()
                live.stop()  # the server says goodbye: the page shows it
                closed = await wait_for_state(page, lambda s: s["status"] == "closed", "the closed status")
                return drawn, served, closed, png, browser.console

        drawn, served, closed, png, console = asyncio.run(drive())
    (tmp_path / "live-page.png").write_bytes(png)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(tmp_path / "live-page.png", ARTIFACTS / "live-page.png")
    print(f"screenshot: {ARTIFACTS / 'live-page.png'} ({len(png):,} bytes); page state: {drawn}")

    assert drawn["status"] == "live" and drawn["window"] == WINDOW
    assert served["serverRows"] == ["results"]  # the server's own publishers are not listed
    assert served["server"]["connections"] == 1
    assert 0 <= served["server"]["publishers"]["results"]["demand"] <= WINDOW
    assert sorted(f["sensor"] for f in drawn["figures"]) == [f"sensor-{i}" for i in range(SENSORS)]
    assert 0 <= drawn["outstanding"] <= WINDOW
    assert drawn["rate"] > 0
    # backpressure end to end: the server's publisher never held more demand than the page's window
    assert 0 < source.stats["max_outstanding"] <= WINDOW, source.stats
    assert source.stats["emitted"] <= closed["received"] + WINDOW, (source.stats, closed)
    assert "goodbye" in (closed["error"] or ""), closed
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert not [line for line in console if "rror" in line and "goodbye" not in line], console


ERRORS = """(async () => {
  const { connect, ERROR_CODES } = await import("./rsio.js");
  const config = await (await fetch("config.json")).json();
  const url = new URL(config.url);
  if (url.hostname === "0.0.0.0" || url.hostname === "[::]") url.hostname = location.hostname;
  const conn = await connect(url.href);
  await conn.ready;
  const seen = { extensions: [...conn.extensions] };
  for (const name of ["no/such/publisher", "broken"]) {
    try {
      await conn.request(name);
      seen[name] = "no error";
    } catch (error) {
      seen[name] = { type: error.name, code: error.code, codeName: error.codeName, message: error.message };
    }
  }
  seen.registry = ERROR_CODES.UNKNOWN_PUBLISHER;
  await conn.close("done");
  return seen;
})()"""


@pytest.mark.timeout(60)
def test_the_browser_client_reads_error_codes(tmp_path: Path) -> None:
    """In Chromium, the JavaScript client negotiates error-codes with the Python server (§19) and
    exposes each onError's code: 2 for an unknown publisher, 1 for a publisher's own failure."""
    assert CHROMIUM is not None
    offer = {"results": CountingPublisher(10, row), "broken": rstreams.error(RuntimeError("boom"))}
    with LivePage(offer, publisher="results", window=WINDOW) as live:

        async def drive() -> Any:
            async with chromium(CHROMIUM, tmp_path / "profile") as browser:
                page = await browser.open(live.url)
                return await page.evaluate(ERRORS)

        seen = asyncio.run(drive())
    assert 6 in seen["extensions"], seen
    assert seen["no/such/publisher"]["type"] == "RemoteStreamError", seen
    assert seen["no/such/publisher"]["code"] == 2 == seen["registry"]
    assert seen["no/such/publisher"]["codeName"] == "UNKNOWN_PUBLISHER"
    assert seen["broken"]["code"] == 1 and "boom" in seen["broken"]["message"], seen


SEND = """(async () => {
  const { connect, MessageCreditError } = await import("./rsio.js");
  const conn = await connect(%(url)s);
  await conn.ready;
  for (let i = 0; i < 40; i++) await conn.send("events/click?n=" + i, "from the page " + i);
  let refused = null;
  try {
    while (true) await conn.send("events/flood", "x", { wait: false });  // until the credit runs out
  } catch (error) {
    refused = error instanceof MessageCreditError ? "MessageCreditError" : String(error);
  }
  const extensions = [...conn.extensions];
  await conn.close("done");
  return { extensions, refused };
})()"""


@pytest.mark.timeout(60)
def test_the_browser_client_sends_messages_within_the_credit(tmp_path: Path) -> None:
    """In Chromium, conn.send() reaches a Python handler (extension messages, §20): 40 messages,
    more than one grant of credit, all delivered in order; {wait: false} fails once it runs out."""
    assert CHROMIUM is not None
    got: list[tuple[str, bytes]] = []

    def on_click(message: Any) -> None:
        got.append((message.params.get("n", "flood"), bytes(message.payload)))

    with LivePage({"x": rstreams.just(b"{}")}, publisher="x") as live:

        async def drive() -> Any:
            server = await rstreams.serve(
                "ws://127.0.0.1:0/rsio",
                {},
                handlers={"events/click": on_click, "events/flood": lambda m: None},
                origins=[live.url],  # the script runs in the live page, another server's
            )
            try:
                async with chromium(CHROMIUM, tmp_path / "profile") as browser:
                    page = await browser.open(live.url)
                    return await page.evaluate(SEND % {"url": json.dumps(server.url)})
            finally:
                await server.aclose()

        seen = asyncio.run(drive())
    assert 7 in seen["extensions"], seen
    assert seen["refused"] == "MessageCreditError", seen
    assert got == [(str(i), f"from the page {i}".encode()) for i in range(40)]


CHANNEL = """(async () => {
  const { connect } = await import("./rsio.js");
  const conn = await connect(%(url)s);
  await conn.ready;
  let pulled = 0;
  const big = "b".repeat(150000);  // above 64 KiB: travels in parts (extension input-parts, §21.6)
  function* words() {
    yield big;
    for (let i = 0; i < 1000; i++) { pulled += 1; yield "word " + i; }
  }
  const answers = [];
  for await (const answer of conn.channel("upper", words(), { window: 4, decode: "text" })) {
    answers.push(answer);
    if (answers.length === 21) break;  // cancels the channel, and with it the input
  }
  const extensions = [...conn.extensions];
  await conn.close("done");
  return { extensions, pulled, bigLength: answers[0].length, bigUpper: answers[0] === big.toUpperCase(),
    rest: answers.slice(1) };
})()"""


@pytest.mark.timeout(60)
def test_the_browser_client_opens_a_channel_with_demand_both_ways(tmp_path: Path) -> None:
    """In Chromium, conn.channel() streams its input to a Python channel factory and reads the
    results on the same subscription (extension channels, §21): a 150 kB input element arrives
    joined (input-parts, §21.6), the answers come in order, and the input is pulled only about as
    fast as the 21 answers are taken — not the 1,000 the generator could give — before the
    break cancels both directions."""
    assert CHROMIUM is not None
    inputs: list[int] = []

    def upper(words: Any, params: dict[str, str]) -> Any:
        def one(word: bytes) -> bytes:
            inputs.append(len(word))
            return bytes(word).upper()

        return rstreams.from_publisher(words).map(one)

    with LivePage({"x": rstreams.just(b"{}")}, publisher="x") as live:

        async def drive() -> Any:
            server = await rstreams.serve(
                "ws://127.0.0.1:0/rsio",
                {},
                channels={"upper": upper},
                origins=[live.url],  # the script runs in the live page, another server's
            )
            try:
                async with chromium(CHROMIUM, tmp_path / "profile") as browser:
                    page = await browser.open(live.url)
                    return await page.evaluate(CHANNEL % {"url": json.dumps(server.url)})
            finally:
                await server.aclose()

        seen = asyncio.run(drive())
    assert {8, 9} <= set(seen["extensions"]), seen["extensions"]
    assert seen["bigUpper"] and seen["bigLength"] == 150_000
    assert seen["rest"] == [f"WORD {i}" for i in range(20)]
    assert inputs[0] == 150_000 and inputs[1:21] == [len(f"word {i}") for i in range(20)]
    # the server asked for input only as its answers were taken: a window's worth ahead, not all
    assert 20 <= seen["pulled"] <= 20 + 2 * 64, seen["pulled"]


OTHER_SERVER = """(async () => {
  const { connect } = await import("./rsio.js");
  try {
    const conn = await connect(%(url)s);
    await conn.ready;
    await conn.close("done");
    return "connected";
  } catch (error) {
    return error.name + ": " + error.message;
  }
})()"""


@pytest.mark.timeout(60)
def test_a_page_from_another_origin_cannot_use_a_websocket_server(tmp_path: Path) -> None:
    """In Chromium, a page (the live page's) cannot open RS.io on another ws:// server on the same
    machine: the server refuses its origin (403, cross-site WebSocket hijacking) unless it was
    served with origins= naming the page's origin."""
    assert CHROMIUM is not None
    with LivePage({"x": rstreams.just(b"{}")}, publisher="x") as live:

        async def drive() -> list[str]:
            strict = await rstreams.serve("ws://127.0.0.1:0/rsio", {"x": rstreams.just(b"1")})
            allowing = await rstreams.serve("ws://127.0.0.1:0/rsio", {}, origins=[live.url])
            try:
                async with chromium(CHROMIUM, tmp_path / "profile") as browser:
                    page = await browser.open(live.url)
                    return [
                        await page.evaluate(OTHER_SERVER % {"url": json.dumps(server.url)})
                        for server in (strict, allowing)
                    ]
            finally:
                await strict.aclose()
                await allowing.aclose()

        refused, allowed = asyncio.run(drive())
    assert refused.startswith("ConnectionClosedError: cannot open a WebSocket to ws://127.0.0.1:"), refused
    assert allowed == "connected"
