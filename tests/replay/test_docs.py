"""docs/replay.md's example sessions, run line by line against a ReplayServer set up as the doc says."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.net import RemoteStreamError, connect
from rstreams.replay import QUERY_KEYS, UPLOAD_NAME, ReplayLog, unpack
from rstreams.replay import _server as server_module

pytestmark = pytest.mark.timeout(60)

DOC = Path(__file__).parents[2] / "docs" / "replay.md"
DOC_EPOCHS = {"nums": "5f0c3a9e7d21b846", "out": "a1d7e02c94b35f68"}
"""The epochs docs/replay.md's sessions show (a log makes its own at random)."""
SESSION = re.compile(r"<!-- session -->\n```text\n(.*?)```", re.DOTALL)


def session_lines() -> list[str]:
    blocks = SESSION.findall(DOC.read_text())
    assert blocks, "docs/replay.md has no <!-- session --> blocks"
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def json_values(text: str) -> list[Any]:
    """Space-separated JSON values: `{"log": "out"} "a" "b"`."""
    decoder, values, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)
        while pos < len(text) and text[pos] == " ":
            pos += 1
    return values


async def answer(url: str, name: str, uploads: list[bytes] | None) -> Any:
    """What the doc's notation would show for ``name``: a JSON object, texts, packed texts or an error."""
    publishers = {UPLOAD_NAME: rstreams.from_iterable(uploads)} if uploads is not None else None
    conn = await connect(url, publishers=publishers)
    try:
        elements: list[bytes] = await asyncio.wait_for(conn.publisher(name).collect(), 10)
    except RemoteStreamError as error:
        return f"error: {error.message}"
    finally:
        await conn.aclose()
    if "pack" in name:
        return [[e.decode() for e in unpack(packed)] for packed in elements]
    if elements and elements[0].startswith(b"{"):
        assert len(elements) == 1, f"{name}: a JSON answer is one element, got {elements}"
        return json.loads(elements[0])
    return [e.decode() for e in elements]


def test_the_documented_sessions_are_what_the_server_answers(serve: Any) -> None:
    """Every request line of docs/replay.md, in order, gets exactly the answer written beside it."""
    nums = ReplayLog("nums", capacity=8).feed(rstreams.from_iterable([str(i).encode() for i in range(20)]))
    out = ReplayLog("out", capacity=100, evict=True)
    # The doc shows fixed epochs; a log's own is random: set them as the doc has them.
    nums._store.epoch, out._store.epoch = DOC_EPOCHS["nums"], DOC_EPOCHS["out"]
    server = serve({"nums": nums}, sinks={"out": out})
    uploads: list[bytes] | None = None
    for line in session_lines():
        if "<-" in line:
            publisher, _, elements = (part.strip() for part in line.partition("<-"))
            assert publisher == UPLOAD_NAME, line
            values = json_values(elements)
            uploads = [json.dumps(v).encode() if isinstance(v, dict) else v.encode() for v in values]
            continue
        name, _, expected = (part.strip() for part in line.partition("->"))
        got = asyncio.run(answer(server.url, name, uploads))
        uploads = None
        want = expected if expected.startswith("error: ") else json.loads(expected)
        assert got == want, f"docs/replay.md: {name}"


def test_the_sessions_use_every_query_parameter_the_server_takes() -> None:
    """The examples and the server's docstring show every parameter the server reads (QUERY_KEYS)."""
    used = {
        key
        for line in session_lines()
        if "->" in line
        for key in re.findall(r"[?&](\w+)", line.partition("->")[0])
    }
    assert used >= set(QUERY_KEYS), set(QUERY_KEYS) - used
    doc = server_module.__doc__ or ""
    assert all(re.search(rf"[?&]{key}\b", doc) for key in QUERY_KEYS), "rstreams.replay._server's docstring"


def test_the_first_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/replay.md's opening Python block, run as it stands, prints what its comments say."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert block is not None
    exec(compile(block.group(1), str(DOC), "exec"), {})
    url, fetched = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"tcp://127\.0\.0\.1:\d+", url)
    assert fetched == "[b'0', b'1', b'2']"
