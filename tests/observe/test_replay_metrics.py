"""Replay logs in a server's numbers: held elements and bytes, readers' positions and lag, trims."""

from __future__ import annotations

import pytest

from rstreams.net import connect, serve
from rstreams.observe import replay_metrics
from rstreams.replay import ReplayLog, ReplayServer, replay_offer
from testkit.observe import scrape

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

pytest.importorskip("prometheus_client")


async def test_a_readers_commit_moves_its_position_lag_and_the_trim() -> None:
    log = ReplayLog("sensors", capacity=10)
    log.append([b"abcd"] * 6)
    sink = ReplayLog("results", capacity=10)
    offer = replay_offer({"sensors": log}, {"results": sink})
    server = await serve("tcp://127.0.0.1:0", offer, metrics="127.0.0.1:0")
    async with server, await connect(server.url) as conn:
        server.add_metrics("replay", replay_metrics({"sensors": log, "results": sink}, offer.stagings))
        before = server.metrics()["replay"]["logs"]["sensors"]
        assert (before["elements"], before["bytes"], before["trimmed"], before["readers"]) == (6, 24, 0, {})
        await conn.request("sensors?commit=4&reader=q1")
        after = server.metrics()["replay"]["logs"]["sensors"]
        assert (after["elements"], after["bytes"], after["trimmed"], after["end"]) == (2, 8, 4, 6)
        assert after["readers"] == {"q1": {"position": 4, "lag": 2}}
        assert server.metrics()["replay"]["logs"]["results"]["staged_bytes"] == 0
        samples = await scrape(str(server.metrics_url))
        sensors = (("log", "sensors"),)
        assert samples["rstreams_replay_elements_held", sensors] == 2
        assert samples["rstreams_replay_trimmed_total", sensors] == 4
        assert samples["rstreams_replay_reader_lag", (("log", "sensors"), ("reader", "q1"))] == 2
        assert samples["rstreams_replay_staged_bytes", (("log", "results"),)] == 0
        with pytest.raises(ValueError, match="taken"):
            server.add_metrics("publishers", dict)


async def test_add_metrics_needs_a_counting_server() -> None:
    async with await serve("tcp://127.0.0.1:0", {}) as server:
        with pytest.raises(RuntimeError, match="metrics=True"):
            server.add_metrics("replay", dict)


async def test_a_replay_server_made_with_metrics_counts_its_logs_and_serves_a_scrape() -> None:
    log = ReplayLog("sensors", capacity=10)
    log.append([b"abcd"] * 6)
    server = ReplayServer({"sensors": log}, metrics="127.0.0.1:0").start()
    try:
        async with await connect(server.url) as conn:
            await conn.request("sensors?commit=4&reader=q1")
            sensors = server.metrics()["replay"]["logs"]["sensors"]
            assert (sensors["elements"], sensors["trimmed"]) == (2, 4)
            assert sensors["readers"] == {"q1": {"position": 4, "lag": 2}}
            assert server.metrics_url is not None
            samples = await scrape(server.metrics_url)
            assert samples["rstreams_replay_reader_lag", (("log", "sensors"), ("reader", "q1"))] == 2
    finally:
        server.stop()
        log.close()


async def test_a_replay_server_without_metrics_counts_nothing() -> None:
    log = ReplayLog("sensors", capacity=10)
    with ReplayServer({"sensors": log}) as server:
        assert server.metrics_url is None
        with pytest.raises(RuntimeError, match="counts nothing"):
            server.metrics()
    log.close()
