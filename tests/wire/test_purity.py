"""The wire core is sans-I/O: importing it, root package included, pulls in no I/O module."""

from __future__ import annotations

import sys

import pytest

from testkit import patience

# A fresh interpreter with the I/O modules blocked: any import of them, by rstreams.wire or
# by the root package it runs first, raises ImportError and fails the test.
CODE = """
import sys
for name in ('asyncio', 'socket', 'ssl', 'selectors'):
    sys.modules[name] = None  # importing any of them now raises ImportError
import rstreams.wire as w
c = w.Connection(w.Side.CLIENT)
c.receive_data(w.encode(w.ServerHello()))
c.data_to_send()
print(sorted(m for m in sys.modules if m.startswith('rstreams')))
"""


@pytest.mark.timeout(120)  # (above its child's 60 s of own time)
def test_wire_imports_no_io() -> None:
    """`import rstreams.wire` (through the real root package) works with asyncio, socket, ssl blocked."""
    out = patience.run([sys.executable, "-c", CODE], 60, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout)  # a printed list of module names
    assert "rstreams.wire.connection" in loaded
    assert not any(m.startswith(("rstreams.flow", "rstreams.net")) for m in loaded)
