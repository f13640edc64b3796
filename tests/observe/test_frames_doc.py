"""docs/observability.md's debug switch, run as written: it prints frames the way the page shows."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from testkit import patience

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "observability.md"

SESSION = """
import asyncio
import rstreams
from rstreams.net import connect, serve

async def main():
    server = await serve("tcp://127.0.0.1:0", {"sensors/{id}": lambda params: rstreams.just(b"reading")})
    async with server, await connect(server.url) as conn:
        await conn.publisher("sensors/attic?n=1&token=hunter2").collect()

asyncio.run(main())
"""


def _switch_and_sample() -> tuple[str, list[str]]:
    found = re.search(
        r"`rstreams\.frames` at DEBUG.*?```python\n(.*?)```\s*```\n(.*?)```", DOC.read_text(), re.S
    )
    assert found, "docs/observability.md lost the rstreams.frames switch and its sample"
    sample = [line.strip() for line in found.group(2).splitlines() if line.strip()]
    return textwrap.dedent(found.group(1)), sample


def test_the_debug_switch_prints_frames_as_the_page_shows() -> None:
    switch, sample = _switch_and_sample()
    code = "import logging\n" + switch + SESSION
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = patience.run([sys.executable, "-c", code], 50, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    printed = done.stderr.splitlines()
    for line in sample:  # each sample line's side, connection, direction and frame type
        start = " ".join(line.split()[:5])
        assert any(p.startswith(start) for p in printed), f"no {start!r} line in:\n{done.stderr}"
    assert "token=<redacted>" in done.stderr and "hunter2" not in done.stderr
    assert re.search(r"OnNext subscriber=1 element=<7 bytes>", done.stderr), done.stderr
