"""What `rstreams demo` ends with when its Spark query fails or runs no micro-batch: a
DemoQueryError (a RuntimeError), from the demo's own watch loop driven by a stand-in query (no
SparkSession: the loop reads only the query's state)."""

from __future__ import annotations

import io
from typing import Any

import pytest

import rstreams.spark
from rstreams.replay import ReplayLog, ReplayServer
from rstreams.spark import _demo

pytestmark = pytest.mark.timeout(30)


class _Query:
    """What the watch loop reads of a StreamingQuery: ``isActive``, its progress, its exception."""

    def __init__(self, *, active: bool, progress: list[dict[str, Any]], failure: str | None) -> None:
        self.isActive = active
        self.recentProgress = progress
        self.lastProgress = progress[-1] if progress else None
        self.status: dict[str, Any] = {"isTriggerActive": False}
        self._failure = failure

    def exception(self) -> str | None:
        return self._failure


def _watch(query: _Query) -> Any:
    log = ReplayLog("sensors", capacity=10)
    with ReplayServer({"sensors": log}, metrics=True) as server:
        return _demo._watch(query, server, _demo.SensorSource(1, 0.0), _demo._LiveView(), 0.0, io.StringIO())


def test_a_query_that_failed_is_a_demo_query_error_with_sparks_reason() -> None:
    done = {"batchId": 0, "numInputRows": 5, "durationMs": {"triggerExecution": 10}}
    query = _Query(active=False, progress=[done], failure="Python worker failed to connect back.")
    with pytest.raises(rstreams.spark.DemoQueryError) as raised:
        _watch(query)
    assert isinstance(raised.value, RuntimeError)
    assert str(raised.value) == "the Spark query failed: Python worker failed to connect back."


def test_a_query_without_a_micro_batch_in_time_is_a_demo_query_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demo, "FIRST_BATCH_TIMEOUT", -1.0)  # passed at the first look
    with pytest.raises(
        rstreams.spark.DemoQueryError, match=r"^no micro-batch finished within -1 s .*FIRST_BATCH_TIMEOUT"
    ):
        _watch(_Query(active=True, progress=[], failure=None))
