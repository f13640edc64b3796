"""The ``rstreams`` command: the Java check of ``demo`` and ``subscribe`` (no Spark started)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from typing import Any

import pytest

from rstreams.cli import main
from rstreams.spark import JavaMissingError, ReplayLog, check_java
from rstreams.spark._remote import fetch_range, request_json

pytestmark = pytest.mark.timeout(60)


def test_demo_without_java_says_what_to_install(tmp_path: Any) -> None:
    """No usable Java: exit status 2 and the exact install command, before Spark is touched."""
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = subprocess.run(
        [sys.executable, "-m", "rstreams.cli", "demo"], env=env, capture_output=True, text=True, timeout=50
    )
    assert done.returncode == 2
    assert "apt-get install openjdk-17-jre-headless" in done.stderr and "JAVA_HOME" in done.stderr


def test_old_java_is_refused(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Java 11 on JAVA_HOME is named and refused."""
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaMissingError, match="is Java 11"):
        check_java()


def test_subscribe_prints_elements(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """rstreams subscribe URL NAME --limit N prints N elements, one per line."""
    log = ReplayLog("words", capacity=10)
    log.append([b"alpha", b"beta", b"gamma"])
    server = serve({"words": log})
    assert main(["subscribe", server.url, "words?from=1", "--limit", "2"]) == 0
    assert capsys.readouterr().out == "beta\ngamma\n"


def test_serve_reads_standard_input_only_as_the_log_has_room() -> None:
    """rstreams serve: lines become positions; a 5-element log reads 5 lines until a commit."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", "tcp://127.0.0.1:0", "lines", "--capacity", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=False,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(b"line %d\n" % i for i in range(20)))
        server.stdin.flush()
        url = server.stdout.readline().decode().split(" on ")[-1].strip()
        assert fetch_range(url, "lines", 0, 2) == [b"line 0", b"line 1"]
        assert request_json(url, "lines?latest")["end"] == 5  # room for 5: no more was read
        request_json(url, "lines?commit=5")
        assert fetch_range(url, "lines", 5, 10, timeout=10) == [b"line %d" % i for i in range(5, 10)]
    finally:
        server.terminate()
        server.wait(20)
        for pipe in (server.stdin, server.stdout):
            if pipe is not None:
                pipe.close()


def test_publish_stages_then_publishes_standard_input(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """rstreams publish URL NAME: every line of standard input, once, in order."""
    out = ReplayLog("out", capacity=10, evict=True)
    server = serve({}, sinks={"out": out})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\nthree\n")))
    assert main(["publish", server.url, "out"]) == 0
    assert fetch_range(server.url, "out", 0, 3) == [b"one", b"two", b"three"]


def test_core_never_imports_spark_and_the_guard_names_the_extra() -> None:
    """`import rstreams` (and the CLI) work without PySpark; rstreams.spark says what to install."""
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import rstreams, rstreams.net, rstreams.cli\n"
        "try:\n    import rstreams.spark\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=50, check=True
    )
    assert "pip install 'rstreams[spark]'" in done.stdout
