"""The layering: rstreams.replay (and serve/publish/subscribe on the command line) need no PySpark.

The three checks run in one child interpreter with pyspark and pyarrow unimportable, one after
the other (each prints under a line of its own, a failure its traceback, and the next goes on):
a child per check only started the interpreter and imported rstreams three times."""

from __future__ import annotations

import sys

import pytest

from testkit import patience

pytestmark = pytest.mark.timeout(60)

BLOCK = (
    "import sys\n_BLOCKED = ('pyspark', 'pyarrow')\nfor _name in _BLOCKED:\n    sys.modules[_name] = None\n"
)
"""Subprocess prelude: any import of pyspark or pyarrow (or a submodule) raises ImportError."""

CHECKS = {
    # `import rstreams.replay` (every module of it) works with pyspark and pyarrow unimportable;
    # first, so that nothing else has imported anything yet
    "imports": (
        "import pkgutil, importlib, rstreams.replay as r\n"
        "for m in pkgutil.iter_modules(r.__path__):\n"
        "    importlib.import_module('rstreams.replay.' + m.name)\n"
        "print(sorted(n for n, m in sys.modules.items() if m and n.partition('.')[0] in _BLOCKED))\n"
    ),
    # without PySpark, `import rstreams.spark` fails saying what to install; the rest imports
    "guard": (
        "import rstreams, rstreams.net, rstreams.cli, rstreams.replay\n"
        "try:\n    import rstreams.spark\nexcept ImportError as e:\n    print(e)\n"
    ),
    # a sink log served in-process, `rstreams publish` then `rstreams subscribe`
    "cli": (
        "import io\n"
        "from rstreams.cli import main\n"
        "from rstreams.replay import ReplayLog, ReplayServer\n"
        "with ReplayServer({}, sinks={'out': ReplayLog('out', evict=True)}) as server:\n"
        "    sys.stdin = io.TextIOWrapper(io.BytesIO(b'one\\ntwo\\n'))\n"
        "    assert main(['publish', server.url, 'out']) == 0\n"
        "    assert main(['subscribe', server.url, 'out?from=0&to=2']) == 0\n"
    ),
}
MARK = "=== check "
"""The line a check's output follows in the child's standard output."""

RUN = (
    "import traceback\n"
    "for _check, _code in CHECKS.items():\n"
    f"    print({MARK!r} + _check, flush=True)\n"
    "    try:\n"
    "        exec(_code, {'sys': sys, '_BLOCKED': _BLOCKED})\n"
    "    except BaseException:\n"
    "        traceback.print_exc(file=sys.stdout)\n"
    "    sys.stdout.flush()\n"
)


@pytest.fixture(scope="module")
def said() -> dict[str, str]:
    """Each check's standard output in the one child (its standard error, if any, under ``""``)."""
    done = patience.run(
        [sys.executable, "-c", f"{BLOCK}CHECKS = {CHECKS!r}\n{RUN}"],
        50,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = {"": done.stderr}
    for section in done.stdout.split(MARK)[1:]:
        check, _, output = section.partition("\n")
        outputs[check] = output
    assert set(outputs) == {"", *CHECKS}, done.stdout
    return outputs


def test_replay_imports_neither_pyspark_nor_pyarrow(said: dict[str, str]) -> None:
    """`import rstreams.replay` (every module of it) works with pyspark and pyarrow unimportable."""
    assert said["imports"].strip() == "[]", said["imports"]


def test_cli_serves_publishes_and_subscribes_without_pyspark(said: dict[str, str]) -> None:
    """A sink log served in-process, `rstreams publish` then `rstreams subscribe`, PySpark blocked."""
    assert said["cli"] == "one\ntwo\n", said["cli"]


def test_the_spark_guard_names_the_extra(said: dict[str, str]) -> None:
    """Without PySpark, `import rstreams.spark` fails saying what to install; the rest imports."""
    assert "pip install 'rstreams[spark]'" in said["guard"], said["guard"]
    # in a Spark worker the interpreter may not be the driver's: the message names it
    assert f"is missing in {sys.executable})" in said["guard"] and "PYSPARK_PYTHON" in said["guard"]
