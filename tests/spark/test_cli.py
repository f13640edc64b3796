"""``rstreams demo``: its Java check (no Spark started). The other commands: tests/replay/test_cli.py."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from rstreams.spark import JavaMissingError, check_java
from testkit import patience

pytestmark = pytest.mark.timeout(60)


def test_demo_without_java_says_what_to_install(tmp_path: Any) -> None:
    """No usable Java: exit status 2 and the exact install command, before Spark is touched."""
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    done = patience.run(
        [sys.executable, "-m", "rstreams.cli", "demo"], 50, env=env, capture_output=True, text=True
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
