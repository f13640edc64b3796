"""One local[2] SparkSession for every Spark test, plus a replay server per test.

Spark needs Java 17+: without it these tests fail at once with what to install, rather
than with a JVM launch error 20 s later.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from rstreams.spark import JavaMissingError, check_java, register
from testkit.replay import serve as serve  # the per-test replay server fixture, shared with tests/replay


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared SparkSession (local[2], UI off, 2 shuffle partitions, rstreams registered)."""
    try:
        check_java()
    except JavaMissingError as error:
        pytest.fail(f"the Spark tests need Java: {error}", pytrace=False)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("rstreams-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
