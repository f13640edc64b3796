"""Without the websockets package, connect() and serve() on ws:// say which extra to install,
as metrics='host:port' does for prometheus_client (they raised a bare "No module named
'websockets'"); so does the MSGPACK codec without msgpack. The error is a MissingExtraError."""

from __future__ import annotations

import sys

import pytest

from testkit import patience
from testkit.imports import without_package

pytestmark = pytest.mark.timeout(60)

HIDE = (
    without_package("websockets")
    + """\
import asyncio
import rstreams
async def main():
    try:
        await rstreams.%s
    except ImportError as missing:
        print(type(missing).__name__, missing)
asyncio.run(main())
"""
)


@pytest.mark.parametrize("call", ["connect('ws://127.0.0.1:1/x')", "serve('ws://127.0.0.1:0/x', {})"])
def test_the_missing_extra_is_named(call: str) -> None:
    done = patience.run([sys.executable, "-c", HIDE % call], 50, capture_output=True, text=True)
    assert "pip install 'rstreams[websockets]'" in done.stdout, done.stdout + done.stderr
    assert "MissingExtraError" in done.stdout, done.stdout


HIDE_MSGPACK = (
    without_package("msgpack")
    + """\
from rstreams.errors import MissingExtraError
from rstreams.net import MSGPACK
for call in (lambda: MSGPACK.encode({"a": 1}), lambda: MSGPACK.decode(b"\\x80")):
    try:
        call()
    except MissingExtraError as missing:
        assert isinstance(missing, ModuleNotFoundError) and missing.name == "msgpack"
        print(missing)
"""
)


def test_the_msgpack_codec_names_its_extra() -> None:
    done = patience.run([sys.executable, "-c", HIDE_MSGPACK], 50, capture_output=True, text=True)
    said = done.stdout.splitlines()
    assert said == ["the MSGPACK codec needs the msgpack extra: pip install 'rstreams[msgpack]'"] * 2, (
        done.stdout + done.stderr
    )
