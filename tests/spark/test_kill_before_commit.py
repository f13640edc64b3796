"""kill -9 of the Spark driver between a micro-batch's uploads and its commit, then a restart from
the checkpoint: the restarted run's first upload drops what the killed run staged, before any
publish (PROTOCOL.md §21.8, owners), nothing stays staged, and the sink log has every row exactly
once. Real Spark, local mode."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from rstreams.api import Publisher
from rstreams.replay import ReplayLog, fetch_range
from rstreams.replay._staging import Owner
from testkit.publishers import Never
from testkit.spark import (
    TEST_TIMEOUT,
    kill_group,
    records,
    restart_to_the_end,
    start_query,
    wait_progressing,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(2 * TEST_TIMEOUT)]

TOTAL = 100
BATCH = 50


def test_driver_killed_between_upload_and_commit_leaves_nothing_staged_and_loses_nothing(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """A run of the query in its own process is killed (SIGKILL, driver and JVM) while its commit of
    batch 0 waits for the server: every task had uploaded. The restart (a second run, in this
    process's warm session) re-runs batch 0: by the time it asks to publish it, its uploads have
    dropped the killed run's (the new-run rule, not the publish's), and it reads to the end: `out`
    is the input, each row once, and nothing stays staged."""
    source = ReplayLog("nums", capacity=TOTAL)
    source.append(records(TOTAL))
    out = ReplayLog("out", capacity=10 * TOTAL)
    stalling = [True]
    publishes: list[dict[str, str]] = []
    at_publish: list[dict[str, tuple[int, Owner | None]]] = []  # staged as each restarted publish came
    route: list[Any] = []

    def commits_wait(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        if path == "out" and "publish" in params:
            if stalling[0]:
                publishes.append(params)
                return Never[bytes]()
            at_publish.append(staging.staged())
        answer: Publisher[Any] | None = route[0](path, params)
        return answer

    server = serve({"nums": source}, sinks={"out": out}, offer=commits_wait)
    route.append(server._route)
    staging = server._stagings["out"]
    checkpoint = tmp_path / "checkpoint"

    output = tmp_path / "query.log"
    query = start_query(server.url, checkpoint, output, rows=str(BATCH))
    try:

        def commit_waiting() -> bool:
            assert query.poll() is None, output.read_text()[-3000:]
            return bool(publishes)

        wait_progressing(
            commit_waiting,
            "the query to upload batch 0 and ask to publish it",
            signs=lambda: (staging.staged_bytes, len(publishes), output.stat().st_size),
        )
    finally:
        kill_group(query)
    assert query.returncode == -signal.SIGKILL
    killed = staging.staged()
    assert out.end == 0
    (params,) = publishes
    said = f"staged {killed}, published {params}"
    committed = params["tokens"].split(",")
    assert set(committed) <= set(killed), said  # (a retried task's first attempt: uploaded too)
    owners = {owner for _, owner in killed.values()}
    assert len(owners) == 1, said  # one query, batch 0, one run
    (owner,) = owners
    assert owner is not None and owner.batch == 0 and owner.writer == params["writer"], said
    assert owner.run is not None, said
    assert sum(killed[token][0] for token in committed) == BATCH, said

    stalling[0] = False
    restart_to_the_end(spark, server.url, checkpoint, out, BATCH)
    first = at_publish[0]  # the restarted run's batch 0, staged, its publish not yet taken
    assert first and killed.keys().isdisjoint(first), (killed, first)
    runs = {owner.run for _, owner in first.values() if owner is not None}
    assert len(runs) == 1 and owner.run not in runs  # a new run at each start of the query
    assert staging.staged() == {} and staging.staged_bytes == 0
    assert server.sink_statistics("out")["dropped"] >= len(killed)  # (+ a retried task's empty attempt)
    rows = [json.loads(item) for item in fetch_range(server.url, "out", 0, out.end)]
    assert sorted(row["seq"] for row in rows) == list(range(TOTAL))
