"""rstreams/health, rstreams/publishers and rstreams/stats: on every server, subject to authorize."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.net import JSON, RemoteStreamError, connect, serve
from rstreams.observe import MetricsOffError
from rstreams.wire import ErrorCode
from testkit.observe import Clock, Opened, Waiter, use_clock

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_health_and_publishers_without_metrics() -> None:
    offer = {"counter": rstreams.just(b"1"), "sensors/{id}": lambda params: rstreams.just(b"2")}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        health = await conn.request("rstreams/health", codec=JSON)
        assert health["ok"] is True and health["metrics"] is False and health["connections"] == 1
        assert health["version"] and health["uptime_seconds"] >= 0
        listed = await conn.request("rstreams/publishers", codec=JSON)
        assert listed == {
            "publishers": [
                {"name": "counter", "pattern": False},
                {"name": "sensors/{id}", "pattern": True},
                {"name": "rstreams/health", "pattern": False},
                {"name": "rstreams/publishers", "pattern": False},
                {"name": "rstreams/stats", "pattern": False},
            ],
            "more": False,
        }
        with pytest.raises(RemoteStreamError, match=r"counts nothing \(serve\(\.\.\., metrics=True\)") as off:
            await conn.request("rstreams/stats", codec=JSON)
        # the publisher's own error (code 1, PROTOCOL.md §19.2), named by its rstreams type
        assert off.value.code == ErrorCode.APPLICATION
        assert off.value.message.startswith("MetricsOffError: rstreams/stats: ")
        with pytest.raises(MetricsOffError, match="counts nothing"):
            server.metrics()
        with pytest.raises(MetricsOffError, match="needs a server that counts"):
            server.add_metrics("mine", dict)


async def test_a_function_offer_keeps_the_builtins_and_its_own_names_win() -> None:
    def offer(path: str, params: dict[str, str]) -> Any:
        return rstreams.just(b"mine") if path.startswith("rstreams/") or path == "x" else None

    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        listed = await conn.request("rstreams/publishers", codec=JSON)
        assert listed["more"] is True
        assert (await conn.request("rstreams/health", codec=JSON))["ok"] is True  # builtins first
        assert await conn.request("x") == b"mine"
    mapping = {"rstreams/health": rstreams.just(b"overridden")}
    async with await serve("tcp://127.0.0.1:0", mapping) as server, await connect(server.url) as conn:
        assert await conn.request("rstreams/health") == b"overridden"


async def test_authorize_decides_for_the_builtins_too() -> None:
    async with (
        await serve(
            "tcp://127.0.0.1:0",
            {"n": rstreams.just(b"x")},
            authorize=lambda who, name: not name.startswith("rstreams/stats"),
            metrics=True,
        ) as server,
        await connect(server.url) as conn,
    ):
        assert (await conn.request("rstreams/health", codec=JSON))["metrics"] is True
        with pytest.raises(RemoteStreamError, match="unauthorized"):
            await conn.request("rstreams/stats", codec=JSON)


async def test_stats_is_a_live_stream_of_the_servers_numbers() -> None:
    clock = Clock()
    opened = Opened(lambda params: rstreams.range(3).map(lambda i: b"e"))
    async with await serve("tcp://127.0.0.1:0", {"three": opened}, metrics=True) as server:
        use_clock(server, clock)
        async with await connect(server.url) as conn:
            held = Waiter(initial=0)
            conn.publisher("three").subscribe(held)
            await opened.wait(1)
            clock.now += 2.0
            stats = Waiter(initial=1)
            conn.publisher("rstreams/stats?interval=0.1", codec=JSON).subscribe(stats)
            await stats.wait(1)
            first = stats.items[0]
            [row] = [s for s in first["streams"] if s["publisher"] == "three"]
            assert (row["demand"], row["elements_sent"], row["stalled_demand_seconds"]) == (0, 0, 2.0)
            assert first["publishers"]["three"]["subscriptions_open"] == 1
            held.request(3)
            await held.wait(3, done=True)
            stats.request(1)  # the next snapshot is taken after the stream completed
            await stats.wait(2)
            assert stats.items[1]["publishers"]["three"]["elements_sent"] == 3
            assert stats.items[1]["publishers"]["three"]["completed"] == 1
            with pytest.raises(
                RemoteStreamError, match=r"interval must be seconds >= 0.1, got 'soon'"
            ) as bad:
                await conn.request("rstreams/stats?interval=soon", codec=JSON)
            assert bad.value.code == ErrorCode.APPLICATION
            assert bad.value.message.startswith("StatsIntervalError: rstreams/stats: ")
