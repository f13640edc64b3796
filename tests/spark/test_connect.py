"""The rstreams source and sink through Spark Connect (a local Connect server the test starts).

Spark Connect's client needs gRPC (``pip install 'rstreams[spark-connect]'``, which
``scripts/test.sh`` installs); without it this test skips and says so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import ReplayLog, fetch_range
from testkit import patience
from testkit.spark import TEST_TIMEOUT, records

pytestmark = pytest.mark.spark


def published_and_refused(server: Any, log: str) -> tuple[int, int]:
    """Batches published on sink log ``log`` and re-runs refused (the uploads the server dropped by
    their owners vary with Spark's task retries, as the machine's load makes them)."""
    numbers = server.sink_statistics(log)
    return numbers["published"], numbers["refused"]


SCRIPT = Path(__file__).with_name("connect_query.py")
# The script imports testkit: tests/ joins the child's path (before what the parent was given)
TESTS_PATH = os.pathsep.join(filter(None, [str(SCRIPT.parents[1]), os.environ.get("PYTHONPATH")]))
MISSING = [
    name
    for name in ("grpc", "grpc_status", "google.rpc", "zstandard")
    if importlib.util.find_spec(name.split(".")[0]) is None
]


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.skipif(
    bool(MISSING), reason=f"Spark Connect's client needs {MISSING}: pip install 'rstreams[spark-connect]'"
)
def test_source_and_sink_through_a_spark_connect_session(serve: Any, tmp_path: Path) -> None:
    """A batch read and a streaming query (source -> sink, availableNow, 40 rows per batch) from a
    Spark Connect session: every row read once, every row published on the sink log once."""
    nums = ReplayLog("nums", capacity=200)
    nums.append(records(100))
    out = ReplayLog("out", capacity=1000, evict=True)
    server = serve({"nums": nums}, sinks={"out": out})
    done = patience.run(
        [sys.executable, str(SCRIPT), server.url, str(tmp_path / "checkpoint")],
        TEST_TIMEOUT - 30,
        capture_output=True,
        # a hang guard: the query's wait fails first, saying what stalled
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": TESTS_PATH},
        check=False,
    )
    lines = [line for line in done.stdout.decode().splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr.decode()[-3000:]
    seen = json.loads(lines[-1])
    assert seen["session"] == "pyspark.sql.connect.session", seen
    assert seen["error"] is None and seen["seqs"] == list(range(100)), seen
    published = [json.loads(x) for x in fetch_range(server.url, "out", 0, out.info()["end"])]
    assert sorted(row["seq"] for row in published) == list(range(100))
    assert published_and_refused(server, "out") == (3, 0)  # 40 + 40 + 20 rows
