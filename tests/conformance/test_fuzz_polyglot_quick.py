"""fuzz/fuzz_polyglot.py's invariants, run briefly in CI against the Java and the JavaScript
servers (real processes): any bytes, in any reads, into one TCP connection get well-formed RS.io
and a goodbye naming its section, the connection ends within the bound, the server stays up and
logs nothing, and a well-behaved Python client is still served."""

from __future__ import annotations

import asyncio
import os
import sys
from types import ModuleType

import pytest

from testkit.scripts import load_script


def _load(name: str) -> ModuleType:
    return load_script(f"fuzz/{name}.py")


polyglot = _load("fuzz_polyglot")
HANG = 900.0
"""Seconds after which a campaign counts as hung: a hang guard, not a speed check (each input has
the driver's own bounds). Its work is fixed (a JVM or Node server built and started, 100 or 200
inputs), so load only slows it."""


@pytest.mark.timeout(HANG)
@pytest.mark.parametrize("mode", sorted(polyglot.MODES))
def test_the_seeds_and_a_short_campaign_hold(mode: str) -> None:
    """Every seed as it is against one server, then a short campaign against another (the
    well-behaved client served after every few); with resume, fuzz_deployed's resume driver."""
    why = polyglot.unavailable(mode)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    assert asyncio.run(polyglot.replay(mode, *polyglot.MODES[mode][1]())) == []
    runs = 100 if mode.endswith("-resume") else 200
    assert asyncio.run(polyglot.campaign(mode, runs, 1, None)) == (runs, 0)


FAILING_SERVER = """
import asyncio, os, sys
import rstreams
from rstreams.net import serve

accepted = 0

def connected(conn):
    global accepted
    accepted += 1
    if accepted == 2:  # the first input's connection (the first is the well-behaved client's)
        print("a failure", file=sys.stderr, flush=True)
    if accepted == 3:
        os._exit(3)

async def main():
    numbers = rstreams.range(3).map(lambda n: bytes([n]))
    server = await serve("tcp://127.0.0.1:0", {"numbers": numbers}, on_connection=connected)
    print(f"serving on {server.url}", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.mark.timeout(60)
def test_the_checks_catch_a_server_that_logs_or_dies() -> None:
    """The driver fails an input after which the server wrote to stderr, and one after which it
    exited; it then starts the server again and goes on."""
    target = polyglot.PolyglotTarget("python", [sys.executable, "-c", FAILING_SERVER], every=1)
    goodbye = b"\x01\x00" + bytes((5, 3, 3, *b"bye", 0))  # a hello, then a goodbye

    async def inputs() -> list[list[tuple[str, str]]]:
        async with target.running():
            logged = await target.run(goodbye)
            died = await target.run(goodbye)
            await target.recover()
            again = await target.run(goodbye)
        return [logged, died, again]

    logged, died, again = asyncio.run(inputs())
    assert [what for what, _ in logged] == ["the server logged"] and "a failure" in logged[0][1]
    assert ("invariant", "AssertionError('the server exited with status 3')") in died
    assert target.restarts == 1
    assert [what for what, _ in again] == ["the server logged"]
