"""testkit.spark's progress-based waits, against stand-ins for a streaming query (no JVM)."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.spark import await_query, wait_progressing

pytestmark = pytest.mark.timeout(60)


class FakeQuery:
    """A query that completes one batch of 10 rows at each look, up to ``batches``, then idles
    (or ends, when ``ends``)."""

    def __init__(self, batches: int, *, ends: bool = False) -> None:
        self.name, self.id = "fake", "0"
        self.batches, self.ends = batches, ends
        self.done: list[dict[str, Any]] = []

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        if len(self.done) < self.batches:
            n = len(self.done)
            self.done.append(
                {"batchId": n, "numInputRows": 10, "sources": [{"endOffset": {"position": 10 * n}}]}
            )
        return list(self.done)

    @property
    def status(self) -> dict[str, Any]:
        return {
            "message": "Processing new data"
            if len(self.done) < self.batches
            else "Waiting for data to arrive"
        }

    @property
    def isActive(self) -> bool:
        return not (self.ends and len(self.done) >= self.batches)

    def awaitTermination(self) -> bool:
        return True


def test_a_wait_goes_on_while_batches_complete_and_ends_when_done() -> None:
    query = FakeQuery(10, ends=True)
    await_query(query, "the fake query to end")
    assert len(query.done) == 10


def test_a_query_that_stops_moving_fails_naming_the_wait_and_its_last_batch() -> None:
    query = FakeQuery(3)
    with pytest.raises(AssertionError) as stalled:
        wait_progressing(lambda: False, "60 rows", query, stall=0.5)
    message = str(stalled.value)
    assert message.startswith("stalled waiting for 60 rows: nothing moved for 0.5 s")
    assert (
        "query fake: status 'Waiting for data to arrive', active True, last micro-batch 2 (10 rows,"
        in message
    )
    assert "up to [{'position': 20}])" in message


def test_signs_of_its_own_keep_a_wait_going_and_the_cap_ends_it() -> None:
    count = [0]

    def moving() -> int:
        count[0] += 1
        return count[0]

    with pytest.raises(
        AssertionError,
        match=r"not done after 1 s \(the guard of a wait\) waiting for never, though still moving",
    ):
        wait_progressing(lambda: False, "never", signs=moving, stall=0.5, cap=1.0)
    assert count[0] > 1
