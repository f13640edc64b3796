"""Exactly-once across restarts: faults in read(), a query stopped mid-stream, replay from the log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.replay import ReplayLog, replay_offer
from testkit.spark import SCHEMA, TEST_TIMEOUT, end_position, read_stream, records, wait_progressing

pytestmark = pytest.mark.spark

TOTAL = 600


@pytest.mark.timeout(TEST_TIMEOUT)
def test_restarts_with_faults_lose_and_duplicate_nothing(spark: Any, serve: Any, tmp_path: Path) -> None:
    """Two injected read() faults and one graceful stop mid-stream; the parquet output is exactly the input.

    The log holds at most 200 elements, so the runs also cross trims: a restart must
    replay its uncommitted batch from positions the server still holds.
    """
    log = ReplayLog("nums", capacity=200).feed(rstreams.from_iterable(records(TOTAL)))
    route = replay_offer({"nums": log})
    # A range read that contains one of these fails, until a run has failed by it: a read that a
    # stopped run began (past its goal) would otherwise take a fault that no run then reports.
    faults = {130, 370}

    def faulty(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        if "from" in params and "to" in params:
            hit = sorted(f for f in faults if int(params["from"]) <= f < int(params["to"]))
            if hit:
                return rstreams.error(ConnectionResetError(f"injected fault reading position {hit[0]}"))
        published: Publisher[Any] | None = route(path, params)
        return published

    server = serve({"nums": log}, offer=faulty)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    outcomes: list[str] = []
    reached = 0
    for _run in range(8):
        query = (
            read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
            .writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )
        goal = min(TOTAL, reached + 200)

        def moved(q: Any = query, goal: int = goal) -> bool:
            return not q.isActive or end_position(q) >= goal

        wait_progressing(moved, f"{goal} rows, a failure or the end", query, signs=log.info)
        reached = max(reached, end_position(query))
        if query.exception() is not None:
            outcomes.append("failed")
            said = re.search(r"injected fault reading position (\d+)", str(query.exception()))
            assert said is not None, query.exception()
            faults.discard(int(said.group(1)))
        else:
            done = end_position(query) >= TOTAL
            query.stop()
            outcomes.append("done" if done else "stopped")
            if done:
                break
    assert outcomes.count("failed") == 2 and outcomes[-1] == "done", outcomes
    assert "stopped" in outcomes, outcomes
    seqs = sorted(row.seq for row in spark.read.schema(SCHEMA).parquet(str(output)).collect())
    assert seqs == list(range(TOTAL))
