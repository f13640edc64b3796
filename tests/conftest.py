from __future__ import annotations

import asyncio
import os
import shlex
import sys
import warnings
from typing import Any

import pytest

# Hypothesis' per-example deadline (200 ms) is a wall-clock assertion: on a loaded machine it
# fails properties that are correct. The suite checks behaviour, never speed (benchmarks/ does).
from hypothesis import settings

from testkit.groups import xdist_group

settings.register_profile("rstreams", deadline=None)
settings.load_profile("rstreams")


# -- on several workers: scripts/test.sh runs pytest -n (2 per core) --dist loadgroup (pytest-xdist) -
# Tests are handed out one at a time, except those that must not run beside each other: each group
# below runs on one worker, one test after another, while the others take everything else.
#   spark: the tests of the SparkSession JVM of each process (tests/spark/conftest.py's fixture
#          `spark`), so that one worker starts it, once;
#   spark-apart: the tests that start Spark in a process of their own (a Spark Connect server,
#          `rstreams demo`), beside the session's group but never beside each other: at most two
#          Spark JVMs share the cores. The tests in tests/spark that start no JVM have no group;
#   java:  `mvn test-compile` into java/target (the interop matrix, the polyglot fuzz run), which
#          two Maven builds at once in one directory would break.
@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: without it, never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups above; the largest group starts first.

    The groups are chosen by path, not by ``xdist_group`` marks: pytest-xdist 3.8 groups a
    marked test by renaming its node id, which pytest 9.2 no longer lets it do (the marks are
    then silently ignored); the scheduler sees the node ids and can group them itself."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupScheduling(LoadGroupScheduling):  # type: ignore[misc]  # xdist has no type information
        def _split_scope(self, nodeid: str) -> str:
            group = xdist_group(nodeid)
            return super()._split_scope(nodeid) if group is None else f"group {group}"

    return GroupScheduling(config, log)


# -- the event loop: RSTREAMS_TEST_LOOP=uvloop runs every test on uvloop ---------------------------
# The default loop otherwise. The environment reaches pytest-xdist's workers; the loop policy then
# makes every loop the tests make (pytest-asyncio's, asyncio.run's, asyncio.Runner's) a uvloop one.
# CI runs the default loop only, plus tests/net/test_uvloop.py.
def _test_loop() -> str:
    name = os.environ.get("RSTREAMS_TEST_LOOP", "asyncio")
    if name not in ("asyncio", "uvloop"):
        raise pytest.UsageError(f"RSTREAMS_TEST_LOOP is 'asyncio' (the default) or 'uvloop', got {name!r}")
    return name


def pytest_report_header(config: pytest.Config) -> str:
    return f"event loop: {_test_loop()} (RSTREAMS_TEST_LOOP)"


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers are new interpreters: they get the controller's ``-X dev`` (which
    scripts/test.sh gives: unclosed resources warn, hence fail, and asyncio checks its calls)."""
    if _test_loop() == "uvloop":
        import uvloop

        with warnings.catch_warnings():  # (loop policies are deprecated from Python 3.14 on)
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    tx = getattr(config.option, "tx", None)
    if sys.flags.dev_mode and tx and not hasattr(config, "workerinput"):
        python = f"{shlex.quote(sys.executable)} -X dev"
        config.option.tx = [f"{spec}//python={python}" if spec == "popen" else spec for spec in tx]
