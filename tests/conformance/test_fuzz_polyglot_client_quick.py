"""fuzz/fuzz_polyglot_client.py's invariants, run briefly in CI against the Java and the
JavaScript clients (real processes): any bytes, in any reads, from a server end every call of
the client with its value or one of the binding's stream errors, the client closes within the
bound, writes well-formed RS.io (a goodbye of its own naming its section), stays up and logs
nothing."""

from __future__ import annotations

import asyncio
import os
import sys
from types import ModuleType

import pytest

from testkit.scripts import load_script

clients: ModuleType = load_script("fuzz/fuzz_polyglot_client.py")
HANG = 600.0
"""Seconds after which a campaign counts as hung: a hang guard, not a speed check (each input has
the driver's own bounds). Its work is fixed (a JVM or Node client started, 100 inputs)."""
RUNS = 100


@pytest.mark.timeout(HANG)
@pytest.mark.parametrize("mode", ["java", "js"])
def test_the_seeds_and_a_short_campaign_hold(mode: str) -> None:
    why = clients.unavailable(mode)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    assert asyncio.run(clients.replay(mode, *clients.fuzz_client._seeds())) == []
    assert asyncio.run(clients.campaign(mode, RUNS, 1, None)) == (RUNS, 0)


BROKEN_CLIENT = """
import json, socket, sys
print("ready", flush=True)
for n, line in enumerate(sys.stdin):
    host, port = line.strip().removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"\\x01\\x00\\x00" + b"\\x03\\x04oops")  # a hello, a goodbye naming no section
        while sock.recv(4096):
            pass
    if n == 0:
        print(json.dumps({"calls": [{"name": "TypeError", "message": "x is undefined"}]}), flush=True)
    elif n == 1:
        print("a failure", file=sys.stderr, flush=True)
        print(json.dumps({"calls": [{"ok": True}]}), flush=True)
    else:
        sys.exit(3)
"""


@pytest.mark.timeout(60)
def test_the_checks_catch_a_client_that_fails_logs_or_dies() -> None:
    """A call ended with an error of no stream type, a goodbye naming no section, stderr, an exit."""
    target = clients.ClientTarget("js", [sys.executable, "-c", BROKEN_CLIENT])

    async def inputs() -> list[list[tuple[str, str]]]:
        async with target.running():
            found = [await target.run(b"")]
            found.append(await target.run(b""))
            found.append(await target.run(b""))
            await target.recover()
        return found

    crashed, logged, died = asyncio.run(inputs())
    assert ("crash", "a call ended with TypeError: x is undefined") in crashed
    assert ("invariant", "goodbye 'oops' names no section") in crashed
    assert [what for what, _ in logged if what != "invariant"] == ["the client logged"]
    assert ("crash", "the client exited with status 3") in died
    assert target.restarts == 1
