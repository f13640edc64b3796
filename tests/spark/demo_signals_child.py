"""``rstreams demo`` with a stand-in for Spark, for tests/spark/test_demo_signals.py to signal.

    python demo_signals_child.py held|failing OUT

Runs ``rstreams demo --no-web --out OUT`` in this process, with Spark's start and the query's
start replaced (no JVM starts):

* ``held``: starting the session prints ``starting Spark's session`` and waits for a line on
  standard input (a signal meanwhile is held, :func:`rstreams.spark._demo._session`), then
  gives a stand-in session.
* ``failing``: the session is a stand-in at once, whose "JVM" is a child process in this
  process's group; starting the query prints ``starting the query`` and waits, as a call
  into the JVM does (its frame is Py4J's: :func:`rstreams.spark._demo._in_py4j`), until that
  child ends, then fails as the call does when the JVM has gone (``ConnectionRefusedError``):
  what a signal to every process of the demo (a service manager's stop) does to the real one.
"""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

from rstreams import cli
from rstreams.spark import _demo


class _Context:
    def __init__(self, jvm: subprocess.Popen[bytes] | None) -> None:
        self._gateway = types.SimpleNamespace(proc=jvm)

    def setLogLevel(self, level: str) -> None:
        pass


class _Session:
    """What the demo asks of a SparkSession before its query starts, and while it stops."""

    def __init__(self, jvm: subprocess.Popen[bytes] | None = None) -> None:
        self.sparkContext = _Context(jvm)
        self.conf: dict[str, str] = {}
        self.dataSource = types.SimpleNamespace(register=lambda source: None)
        self.streams = types.SimpleNamespace(active=[])


def _held_start(conf: Any, log: str) -> _Session:
    print("starting Spark's session", flush=True)
    sys.stdin.readline()
    return _Session()


_JVM_CALL = """
def start_query(jvm, *args):
    print("starting the query", flush=True)
    jvm.wait()
    raise ConnectionRefusedError(111, "Connection refused")
"""


def main() -> int:
    mode, out = sys.argv[1:3]
    if mode == "held":
        _demo._start = _held_start
    else:
        jvm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        py4j = types.ModuleType("py4j_stand_in")
        exec(_JVM_CALL, py4j.__dict__)
        _demo._start = lambda conf, log: _Session(jvm)
        _demo._start_query = lambda *args: py4j.start_query(jvm, *args)
    return cli.main(["demo", "--no-web", "--seconds", "600", "--out", out])


if __name__ == "__main__":
    sys.exit(main())
