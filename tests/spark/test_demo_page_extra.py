"""run_demo(web=...) without the websockets package fails at once, before its replay server or
Spark starts, with a MissingExtraError naming the extra (it started the server, then failed
on the page's import)."""

from __future__ import annotations

import sys

import pytest

from testkit import patience
from testkit.imports import without_package

pytestmark = pytest.mark.timeout(120)

HIDE = (
    without_package("websockets")
    + """\
import io
from rstreams.errors import MissingExtraError
from rstreams.spark._demo import run_demo
said = io.StringIO()
try:
    run_demo(seconds=1, web="127.0.0.1:0", stream=said)
except MissingExtraError as missing:
    print(repr(said.getvalue()), missing)
"""
)


def test_the_live_pages_extra_is_checked_before_anything_starts() -> None:
    done = patience.run([sys.executable, "-c", HIDE], 110, capture_output=True, text=True)
    assert done.stdout.strip() == (
        "'' web= (the live page) needs the websockets extra: pip install 'rstreams[websockets]'"
    ), done.stdout + done.stderr
