"""The Reactive Streams floor (``benchmarks/net_floor.py``): its signals arrive, in order, over a
real loopback connection; its script and its hotpath modes run; its scenario rows pair it with
the ceiling."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import net_floor
import pytest
from _scenarios import SCENARIOS

from testkit import patience

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class Recorder:
    """A Subscriber that asks for ``demand`` and writes down every signal, in order."""

    def __init__(self, demand: int, done: asyncio.Future[None]) -> None:
        self.demand = demand
        self.done = done
        self.signals: list[object] = []

    def on_subscribe(self, subscription: net_floor.RemotePublisher) -> None:
        self.signals.append("subscribe")
        subscription.request(self.demand)

    def on_next(self, element: bytes) -> None:
        self.signals.append(element)

    def on_complete(self) -> None:
        self.signals.append("complete")
        self.done.set_result(None)


def _with_floor(body: Callable[[net_floor.FloorClient], Awaitable[T]]) -> T:
    async def main() -> T:
        server = await net_floor.serve()
        client = await net_floor.connect(server.sockets[0].getsockname()[1])
        try:
            return await asyncio.wait_for(body(client), 10)
        finally:
            client.close()
            server.close()
            await server.wait_closed()

    return asyncio.run(main())


def test_a_request_delivers_on_subscribe_then_its_element_then_completion() -> None:
    async def body(client: net_floor.FloorClient) -> list[list[object]]:
        seen = []
        for argument in (b"a", b"12345678", b"x" * 300):
            done = client.loop.create_future()
            recorder = Recorder(1, done)
            client.publisher(b"echo?" + argument).subscribe(recorder)
            await done
            seen.append(recorder.signals)
        assert client.streams == {}  # each stream forgotten once complete
        return seen

    assert _with_floor(body) == [
        ["subscribe", b"a", "complete"],
        ["subscribe", b"12345678", "complete"],
        ["subscribe", b"x" * 300, "complete"],
    ]


def test_request_answers_each_round_trip_on_one_connection() -> None:
    async def body(client: net_floor.FloorClient) -> list[bytes]:
        return [await client.request(b"echo?%d" % i) for i in range(5)]

    assert _with_floor(body) == [b"0", b"1", b"2", b"3", b"4"]


def test_an_open_stream_delivers_one_element_per_request() -> None:
    async def body(client: net_floor.FloorClient) -> tuple[list[bytes], int]:
        one = net_floor.OneAtATime(client.loop)
        client.publisher(net_floor.REPEAT_ROUTE).subscribe(one)
        got = [await one.next() for _ in range(5)]
        return got, len(client.streams)

    assert _with_floor(body) == ([net_floor.ELEMENT] * 5, 1)


@pytest.mark.parametrize("mode", ["rr", "latency"])
def test_the_script_measures_its_mode(mode: str) -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "net_floor.py"), "client", "--mode", mode]
    command += ["--count", "50", "--client-cpu", "-1", "--server-cpu", "-1", "--timeout", "30"]
    done = patience.run(command, 50, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["impl"] == "rs-floor"
    assert result["rate"] > 0 and result["p50_us"] > 0


def test_hotpath_counts_the_plain_modes_without_rstreams() -> None:
    """Run as a program: hotpath imports the rstreams scripts, which mypy does not check."""
    modes = ["ceiling", "floor-rr", "floor-latency"]
    command = [sys.executable, str(ROOT / "benchmarks" / "hotpath.py"), *modes, "--count", "20"]
    done = patience.run(command, 50, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == modes
    for line in lines:
        calls, rest = line.split()[1], line.split("Python calls per operation ")[1]
        assert float(calls) > 10
        assert rest.startswith("(0.0 in rstreams)")


@pytest.mark.timeout(150)  # (above its two children's 50 s of own time each)
def test_hotpath_no_gc_counts_with_the_collector_off() -> None:
    """``--no-gc`` (the collector off while measuring) counts as without it; ``--help`` names it."""
    hotpath = [sys.executable, str(ROOT / "benchmarks" / "hotpath.py")]
    done = patience.run(
        [*hotpath, "ceiling", "--count", "20", "--no-gc"],
        50,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "ceiling"
    assert float(done.stdout.split()[1]) > 10
    usage = patience.run([*hotpath, "--help"], 50, capture_output=True, text=True, cwd=ROOT)
    assert "--no-gc" in usage.stdout


def test_hotpath_runs_on_uvloop() -> None:
    """``--loop uvloop``: the modes run on uvloop's loop (its transports: fewer Python calls)."""
    pytest.importorskip("uvloop")
    hotpath = [sys.executable, str(ROOT / "benchmarks" / "hotpath.py"), "ceiling", "--count", "20"]
    calls = []
    for loop in ("asyncio", "uvloop"):
        done = patience.run([*hotpath, "--loop", loop], 50, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[0] == "ceiling"
        calls.append(float(done.stdout.split()[1]))
    assert calls[1] < calls[0]


def test_the_floor_rows_are_paired_with_the_ceiling() -> None:
    for quick in (True, False):
        for name, floor in (("request-response", "rs-floor"), ("latency", "rs-floor-stream")):
            scenario = SCENARIOS[name](quick)
            rows = {c.name: c for c in scenario.contestants}
            assert rows[floor].script == "net_floor.py"
            assert rows[floor].env == rows["ceiling"].env  # the same interpreter as the ceiling
            assert (floor, "ceiling") in scenario.ratios
            assert all(a in rows and b in rows for a, b in scenario.ratios)
