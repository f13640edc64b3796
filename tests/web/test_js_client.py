"""rsio.js under Node: the codec against the protocol vectors, and end to end against a Python server.

Runs ``node --experimental-websocket --test tests/web/js/`` (Node 20's built-in WebSocket;
no npm packages) with the URLs of :class:`websupport.JsTestServer` in the environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from websupport import JsTestServer

JS_TESTS = Path(__file__).parent / "js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None, reason="node is not installed (Node 20+ runs the JS client's tests)"
)


@pytest.fixture
def server() -> Iterator[JsTestServer]:
    with JsTestServer() as running:
        yield running


def run_node(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    return subprocess.run(
        [NODE, "--experimental-websocket", "--no-warnings", "--test", "--test-timeout=20000", str(JS_TESTS)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )


def summary(output: str) -> dict[str, int]:
    return {
        key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", output, re.M)
    }


@pytest.mark.timeout(60)
def test_js_client_against_a_python_server(server: JsTestServer) -> None:
    """Every Node test passes, none skipped: codec vectors, streams, split, packed, backpressure, errors."""
    done = run_node(
        {"RSIO_URL": server.url, "RSIO_BAD_URL": server.bad_url, "RSIO_IDLE_URL": server.idle_url}
    )
    counts = summary(done.stdout)
    assert done.returncode == 0 and counts.get("fail") == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert counts["skipped"] == 0 and counts["pass"] >= 50, counts
    # the server subscribed to each connection's rstreams/probe: the browser client refuses, by name
    assert server.refusals and all("publishes nothing" in text for text in server.refusals), server.refusals
    # the misbehaving server got a goodbye naming the broken rule
    goodbyes = [message for message in server.bad_received if b"\x03" in message[:64]]
    for section in ("5.2", "4.4"):
        expected = f"(PROTOCOL.md \u00a7{section})".encode()
        assert any(message.endswith(expected) for message in goodbyes), server.bad_received
    assert server.counted and server.counted[0].stats["cancelled"]


@pytest.mark.timeout(60)
def test_js_codec_tests_run_without_a_server() -> None:
    """Without RSIO_URL the codec tests still run and the end-to-end ones skip, saying why."""
    done = run_node({})
    counts = summary(done.stdout)
    assert done.returncode == 0, done.stdout[-4000:]
    assert counts["skipped"] >= 10 and counts["pass"] >= 40, counts
