"""kill -9 of the Spark driver between a micro-batch's uploads and its commit, twice, then a restart
from the checkpoint: the staging area keeps nothing of the killed runs (PROTOCOL.md §21.8, owners),
and the sink log has every row exactly once. Real Spark, local mode."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.flow._flow import Flow
from rstreams.replay import ReplayLog, fetch_range
from rstreams.replay._staging import Owner
from testkit.spark import (
    TEST_TIMEOUT,
    await_query,
    kill_group,
    read_stream,
    records,
    start_query,
    wait_progressing,
)

pytestmark = [pytest.mark.spark, pytest.mark.timeout(2 * TEST_TIMEOUT)]

TOTAL = 300


class _Silent(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class Never(Flow[bytes]):
    """An answer that never comes: the driver's commit waits in it until the driver is killed."""

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        subscriber.on_subscribe(_Silent())


def test_drivers_killed_between_upload_and_commit_leave_nothing_staged_and_lose_nothing(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """Two runs of the query are each killed (SIGKILL, driver and JVM) while their commit of batch 0
    waits for the server: every task had uploaded. The second run's first upload drops what the
    first staged, so the staging area holds one run's batch, not two; the restart (a third run, in
    this process's session) re-runs batch 0, drops the second run's uploads and publishes its own,
    then reads to the end: `out` is the input, each row once, and nothing stays staged."""
    source = ReplayLog("nums", capacity=TOTAL)
    source.append(records(TOTAL))
    out = ReplayLog("out", capacity=10 * TOTAL)
    stalling = [True]
    publishes: list[dict[str, str]] = []
    route: list[Any] = []

    def commits_wait(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        if stalling[0] and path == "out" and "publish" in params:
            publishes.append(params)
            return Never()
        answer: Publisher[Any] | None = route[0](path, params)
        return answer

    server = serve({"nums": source}, sinks={"out": out}, offer=commits_wait)
    route.append(server._route)
    staging = server._stagings["out"]
    checkpoint = tmp_path / "checkpoint"
    killed: list[dict[str, tuple[int, Owner | None]]] = []

    def killed_at_its_commit(run: int) -> None:
        """A run of the query in its own process, killed once its commit of batch 0 waits."""
        output = tmp_path / f"query-{run}.log"
        query = start_query(server.url, checkpoint, output, rows="100")
        try:

            def commit_waiting() -> bool:
                assert query.poll() is None, output.read_text()[-3000:]
                return len(publishes) > run

            wait_progressing(
                commit_waiting,
                f"run {run} to upload batch 0 and ask to publish it",
                signs=lambda: (staging.staged_bytes, len(publishes), output.stat().st_size),
            )
        finally:
            kill_group(query)
        assert query.returncode == -signal.SIGKILL
        killed.append(staging.staged())

    killed_at_its_commit(0)
    killed_at_its_commit(1)
    assert out.end == 0
    first, second = killed
    for uploads, params in zip(killed, publishes, strict=True):
        said = f"staged {uploads}, published {params}"
        committed = params["tokens"].split(",")
        assert set(committed) <= set(uploads), said  # (a retried task's first attempt: uploaded too)
        owners = {owner for _, owner in uploads.values()}
        assert len(owners) == 1, said  # one query, batch 0, one run
        (owner,) = owners
        assert owner is not None and owner.batch == 0 and owner.writer == params["writer"], said
        assert sum(uploads[token][0] for token in committed) == 100, said
    assert first.keys().isdisjoint(second.keys())  # staged after the second kill: nothing of the first
    run_ids = {next(iter(uploads.values()))[1].run for uploads in killed}  # type: ignore[union-attr]
    assert None not in run_ids and len(run_ids) == 2  # a new run at each start of the query
    assert server.sink_statistics("out")["dropped"] >= len(first)  # (and a retried task's empty attempt)

    stalling[0] = False
    restarted = (  # a new driver on the same checkpoint, in this process's warm session
        read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
        .writeStream.format("rstreams")
        .option("url", server.url)
        .option("publisher", "out")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    await_query(restarted, "the restarted query to read to the end", signs=lambda: out.end)
    assert staging.staged() == {} and staging.staged_bytes == 0
    assert server.sink_statistics("out")["dropped"] >= len(first) + len(second)  # (+ retried tasks')
    rows = [json.loads(item) for item in fetch_range(server.url, "out", 0, out.end)]
    assert sorted(row["seq"] for row in rows) == list(range(TOTAL))
