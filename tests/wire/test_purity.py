"""The wire core is sans-I/O: it and everything it imports pull in no I/O module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import rstreams

PACKAGE_DIR = str(Path(rstreams.__file__).parent)

# The package root re-exports the flow layer, which uses asyncio; the check therefore loads
# rstreams.wire under an empty stand-in for the root package, so that only wire and what it
# imports (errors, demand, api) run. Any I/O import among those fails the test.
CODE = f"""
import sys, types
for name in ('asyncio', 'socket', 'ssl', 'selectors'):
    sys.modules[name] = None  # importing any of them now raises ImportError
root = types.ModuleType('rstreams')
root.__path__ = [{PACKAGE_DIR!r}]
sys.modules['rstreams'] = root
import rstreams.wire as w
c = w.Connection(w.Side.CLIENT)
c.receive_data(w.encode(w.ServerHello()))
c.data_to_send()
print(sorted(m for m in sys.modules if m.startswith('rstreams')))
"""


def test_wire_imports_no_io() -> None:
    """Importing and using rstreams.wire succeeds with asyncio, socket, ssl and selectors blocked."""
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout)  # a printed list of module names
    assert "rstreams.wire.connection" in loaded
    assert not any(m.startswith(("rstreams.flow", "rstreams.net")) for m in loaded)
