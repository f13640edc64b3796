"""kill -9 of the Spark driver mid-stream, then a restart from its checkpoint: exactly the input comes out."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import ReplayLog, fetch_range
from testkit.replay import Serve
from testkit.spark import (
    TEST_TIMEOUT,
    kill_group,
    records,
    restart_to_the_end,
    start_query,
    wait_progressing,
)

pytestmark = pytest.mark.spark

TOTAL = 1_000


@pytest.mark.timeout(TEST_TIMEOUT)
def test_driver_killed_with_sigkill_and_restarted_loses_and_duplicates_nothing(
    spark: Any, serve: Serve, tmp_path: Path
) -> None:
    """SIGKILL to the driver (Python and JVM) mid-stream, then a restart: `out` is the input, once.

    The killed query runs in a subprocess (its own driver); the restart runs in this
    process's Spark session from the same checkpoint, as a new driver would.

    The source log holds fewer elements than the input, so the killed run's commits have
    trimmed it: the restart must resume from its checkpoint, not from the start.
    """
    source = ReplayLog("nums", capacity=400)
    source.append(records(400))
    rest = iter(records(TOTAL - 400, 400))
    out = ReplayLog("out", capacity=10 * TOTAL)
    server = serve({"nums": source}, sinks={"out": out})
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "query.log"

    def feed() -> None:  # the producer: more input as the query commits
        room = source.capacity - (source.end - source.first)
        batch = [item for _, item in zip(range(room), rest, strict=False)]
        if batch:
            source.append(batch)

    first = start_query(server.url, checkpoint, output)
    try:

        def published_a_few() -> bool:
            feed()
            assert first.poll() is None, output.read_text()[-3000:]
            return server.sink_statistics("out")["published"] >= 3

        wait_progressing(
            published_a_few,
            "the first run to publish 3 batches",
            signs=lambda: (server.sink_statistics("out"), out.end, source.first, output.stat().st_size),
        )
    finally:
        kill_group(first)
    assert first.returncode == -signal.SIGKILL
    killed_at = out.end
    assert 0 < killed_at < TOTAL
    feed()
    source.capacity = TOTAL  # all input in place, so an availableNow run reads to the end
    feed()
    assert source.end == TOTAL
    restart_to_the_end(spark, server.url, checkpoint, out, 400)  # fewer, larger batches now
    rows = [json.loads(item) for item in fetch_range(server.url, "out", 0, out.end)]
    assert sorted(row["seq"] for row in rows) == list(range(TOTAL))
    assert len(source.readers()) == 1  # the restarted query committed as the same reader
