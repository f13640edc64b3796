"""The layering: rstreams.replay (and serve/publish/subscribe on the command line) need no PySpark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from testkit import patience

pytestmark = pytest.mark.timeout(60)

BLOCK = (
    "import sys\n_BLOCKED = ('pyspark', 'pyarrow')\nfor _name in _BLOCKED:\n    sys.modules[_name] = None\n"
)
"""Subprocess prelude: any import of pyspark or pyarrow (or a submodule) raises ImportError."""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return patience.run([sys.executable, "-c", BLOCK + code], 50, capture_output=True, text=True, check=False)


def test_replay_imports_neither_pyspark_nor_pyarrow() -> None:
    """`import rstreams.replay` (every module of it) works with pyspark and pyarrow unimportable."""
    done = run(
        "import pkgutil, importlib, rstreams.replay as r\n"
        "for m in pkgutil.iter_modules(r.__path__):\n"
        "    importlib.import_module('rstreams.replay.' + m.name)\n"
        "print(sorted(n for n, m in sys.modules.items() if m and n.partition('.')[0] in _BLOCKED))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_cli_serves_publishes_and_subscribes_without_pyspark() -> None:
    """A sink log served in-process, `rstreams publish` then `rstreams subscribe`, PySpark blocked."""
    done = run(
        "import io\n"
        "from rstreams.cli import main\n"
        "from rstreams.replay import ReplayLog, ReplayServer\n"
        "with ReplayServer({}, sinks={'out': ReplayLog('out', evict=True)}) as server:\n"
        "    sys.stdin = io.TextIOWrapper(io.BytesIO(b'one\\ntwo\\n'))\n"
        "    assert main(['publish', server.url, 'out']) == 0\n"
        "    assert main(['subscribe', server.url, 'out?from=0&to=2']) == 0\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one\ntwo\n"


def test_the_spark_guard_names_the_extra() -> None:
    """Without PySpark, `import rstreams.spark` fails saying what to install; the rest imports."""
    done = run(
        "import rstreams, rstreams.net, rstreams.cli, rstreams.replay\n"
        "try:\n    import rstreams.spark\nexcept ImportError as e:\n    print(e)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'rstreams[spark]'" in done.stdout
    # in a Spark worker the interpreter may not be the driver's: the message names it
    assert f"is missing in {sys.executable})" in done.stdout and "PYSPARK_PYTHON" in done.stdout
