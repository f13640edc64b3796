"""What the network scripts share (``benchmarks/_netcommon.py``) and the scale scenario's rows.

The procedures run here against an in-process fake library, so the steps they take (and
the numbers they report) are checked without starting servers; ``test_quick.py`` runs the
real scripts.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from _netcommon import (
    Settles,
    SlowReader,
    Streams,
    connections_memory,
    idle_subscriptions,
    make_parser,
    round_trips,
    server_child,
)
from _scenarios import SCENARIOS
from _tables import render_scenario


class FakeLib:
    """A library whose streams deliver at once and whose connections are numbered."""

    def __init__(self) -> None:
        self.connected = 0
        self.closed = 0
        self.barriers = 0
        self.streams: list[tuple[int, int, int]] = []  # (connection, count, window)

    async def connect(self) -> int:
        self.connected += 1
        return self.connected

    async def stream(self, conn: int, count: int, window: int) -> int:
        self.streams.append((conn, count, window))
        return count

    async def barrier(self, conn: int) -> None:
        self.barriers += 1

    async def close(self, conn: int) -> None:
        self.closed += 1

    def streams_of(self) -> Streams[int]:
        return Streams(connect=self.connect, stream=self.stream, barrier=self.barrier, close=self.close)


def _args(*argv: str) -> Any:
    return make_parser("doc", ["stream", "subs", "conns"]).parse_args(["client", *argv])


def test_the_parser_has_every_scripts_arguments_and_defaults() -> None:
    args = _args("--mode", "subs", "--fanout", "7")
    assert (args.mode, args.fanout, args.count, args.size, args.window) == ("subs", 7, 200_000, 8, 256)
    assert (args.duration, args.slow_factor, args.sample_interval, args.uvloop) == (60.0, 10.0, 0.25, False)
    with pytest.raises(SystemExit):
        make_parser("doc", ["stream"]).parse_args(["client", "--mode", "subs"])


def test_idle_subscriptions_opens_k_then_cancels_each_and_streams_beside_them() -> None:
    lib = FakeLib()
    opened: list[int] = []
    cancelled: list[int] = []

    def open_idle(conn: int) -> int:
        opened.append(conn)
        return len(opened)

    args = _args("--mode", "subs", "--fanout", "5", "--count", "1000", "--window", "64")
    measure = idle_subscriptions(lib.streams_of(), 42, open_idle, cancelled.append, os.getpid(), args)
    got = asyncio.run(measure)
    assert opened == [42] * 5 and cancelled == [1, 2, 3, 4, 5]
    assert lib.streams[0] == (42, 20_000, 256)  # the warm-up
    assert lib.streams[1] == (42, 1000, 64)  # the stream beside the idle ones
    assert lib.streams[2:] == [(42, 200, 64)] * 5  # five at once, sharing the count
    assert lib.barriers == 2 and lib.connected == 0
    assert got["rate"] > 0 and got["parallel_rate"] > 0 and got["open_s"] >= 0
    assert {"server_b_per_sub", "client_b_per_sub"} <= got.keys()


def test_connections_memory_connects_in_batches_and_closes_every_connection() -> None:
    lib = FakeLib()
    args = _args("--mode", "conns", "--fanout", "120", "--count", "1200")
    got = asyncio.run(connections_memory(lib.streams_of(), os.getpid(), args))
    assert lib.connected == 120 and lib.closed == 120 and lib.barriers == 120
    assert sorted(conn for conn, _, _ in lib.streams[1:]) == list(range(1, 121))
    assert all(count == 10 and window == 10 for _, count, window in lib.streams[1:])
    assert got["rate"] > 0 and "server_b_per_conn" in got


def test_round_trips_checks_the_answer() -> None:
    async def echo() -> bytes:
        return b"ok"

    got = asyncio.run(round_trips(echo, b"ok", 50))
    assert got["rate"] > 0 and got["p50_us"] <= got["p99_us"] <= got["max_us"]
    with pytest.raises(AssertionError, match="echo answered b'ok'"):
        asyncio.run(round_trips(echo, b"other", 5))


def test_a_slow_reader_keeps_to_its_rate_and_says_when_the_deadline_passed() -> None:
    async def main() -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        reader = SlowReader(64 / 0.05, time.perf_counter() + 60, done)  # 64 elements per 50 ms
        start = time.perf_counter()
        assert not any(reader.tick() for _ in range(128))
        assert time.perf_counter() - start >= 0.09 and reader.slept > 0
        reader.deadline = time.perf_counter()
        assert not any(reader.tick() for _ in range(63)) and reader.tick()
        reader.on_complete()
        reader.on_error(RuntimeError("late"))  # settles once: ignored
        assert done.result() is None

    asyncio.run(main())


def test_settles_passes_the_first_error_on() -> None:
    class Sub(Settles):
        __slots__ = ("done",)

    async def main() -> None:
        sub = Sub()
        sub.done = asyncio.get_running_loop().create_future()
        boom = RuntimeError("boom")
        sub.on_error(boom)
        sub.on_complete()
        assert sub.done.exception() is boom

    asyncio.run(main())


def test_the_scale_scenario_pairs_every_rstreams_row_with_rsocket_py() -> None:
    for quick in (True, False):
        scenario = SCENARIOS["scale"](quick)
        names = {c.name for c in scenario.contestants}
        for kind in ("subs", "conns"):
            ks = [n.rsplit("-", 1)[1] for n in names if n.startswith(f"rstreams-{kind}-")]
            assert len(ks) == 3 if not quick else len(ks) == 2
            for k in ks:
                assert f"rsocket-py-{kind}-{k}" in names
                assert (f"rstreams-{kind}-{k}", f"rsocket-py-{kind}-{k}") in scenario.ratios
        rsocket_subs = [c for c in scenario.contestants if c.name.startswith("rsocket-py-subs-")]
        assert all(c.env == "peers" and c.args[:3] == ["client", "--mode", "subs"] for c in rsocket_subs)


def test_a_failed_peer_row_reads_not_measured_and_the_other_ratios_stay() -> None:
    scenario = SCENARIOS["scale"](False)
    failed = "rsocket-py-subs-10000"
    contestants = []
    for c in scenario.contestants:
        runs: list[dict[str, Any]] = (
            [{"error": "timed out after 600 s"}]
            if c.name == failed
            else [{"rate": 1e5 if c.name.startswith("rstreams") else 1e4, "server_b_per_sub": 900.0}]
        )
        contestants.append({"name": c.name, "label": c.label, "env": c.env, "args": c.args, "runs": runs})
    data = {"repeats": 1, "warmup": 0, "skipped": {}, "contestants": contestants}
    table = render_scenario(scenario, data)
    assert f"- `{failed}`: not measured (timed out after 600 s)" in table
    assert "| rstreams-subs-100 / rsocket-py-subs-100 | 10.00x | 10.00x | 10.00x |" in table
    assert "rstreams-subs-10000 / rsocket-py-subs-10000" not in table


@pytest.mark.timeout(120)
def test_a_server_child_is_ready_when_it_prints_its_port_and_a_failed_one_is_named(tmp_path: Path) -> None:
    """The printed port is the readiness signal (no fixed start-up time); a child that exits
    first, or prints something else, fails at once saying so."""
    script = tmp_path / "child.py"
    script.write_text(
        "import sys\n"
        "mode = sys.argv[2] if len(sys.argv) > 2 else 'port'\n"
        "if mode == 'exit':\n    sys.exit(3)\n"
        "print(4321 if mode == 'port' else 'Traceback', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with server_child(str(script), [], -1) as (port, pid):
        assert port == 4321 and pid > 0
    exited = pytest.raises(RuntimeError, match="exited with code 3 before printing its port")
    with exited, server_child(str(script), ["exit"], -1):
        pass
    garbage = pytest.raises(RuntimeError, match="printed 'Traceback' where its port was expected")
    with garbage, server_child(str(script), ["garbage"], -1):
        pass
