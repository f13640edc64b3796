"""The net fuzz drivers' invariants, run briefly in CI (fuzz/fuzz_net.py and fuzz/fuzz_client.py
run them for long): any bytes, in any reads, into one connection of a real server leave the
server and its other clients working; any bytes from a server end a client's calls with their
value or an rstreams error, never a hang."""

from __future__ import annotations

import asyncio
import random
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.scripts import load_script


def _load(name: str) -> ModuleType:
    return load_script(f"fuzz/{name}.py")


driver = _load("fuzz_net")
client_driver = _load("fuzz_client")
HANG = 600.0
"""Seconds after which a test here counts as hung: a hang guard, not a speed check (each input's
run has the drivers' own bounds). The campaigns' work is fixed (a number of inputs), so load
only slows them: at load 15-19 on 2 cores the seeds and short campaign took 43 s, a third of the
120 s these tests had."""
QUICK = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(HANG)
@QUICK
@given(st.binary(max_size=400))
def test_any_bytes_after_a_hello_leave_the_server_working(data: bytes) -> None:
    """After a clientHello listing every extension: our protocol error or a working connection,
    nothing escaping into the loop, nothing left behind, the other client served."""
    assert asyncio.run(driver.replay(b"\x01\x00" + data)) == []


@pytest.mark.timeout(HANG)
@QUICK
@given(st.sampled_from(driver._seeds()), st.integers(0, 2**32 - 1))
def test_mutated_conversations_leave_the_server_working(seed: bytes, salt: int) -> None:
    """Valid conversations (subscribes, metadata windows, messages, channels with split input,
    large elements cut across reads), mutated."""
    assert asyncio.run(driver.replay(driver._mutate(random.Random(salt), seed))) == []


@pytest.mark.timeout(HANG)
def test_the_seeds_and_a_short_campaign_hold() -> None:
    """Every seed as it is, then a short campaign against one server (the well-behaved client's
    message and channel checks included)."""
    for seed in driver._seeds():
        assert asyncio.run(driver.replay(seed)) == [], seed.hex()
    assert asyncio.run(driver.campaign(100, 1, None)) == (100, 0)


@pytest.mark.timeout(HANG)
@QUICK
@given(st.sampled_from(client_driver._seeds()), st.integers(0, 2**32 - 1))
def test_a_client_fed_any_bytes_ends_its_calls(seed: bytes, salt: int) -> None:
    """A server's answers, mutated: the client's request, stream and message each end with a
    value or an rstreams error within the bound, nothing escapes, nothing is left behind."""
    assert asyncio.run(client_driver.run(driver._mutate(random.Random(salt), seed))) == []


deployed = _load("fuzz_deployed")
BRIEF = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODES = sorted(deployed.MODES)


@pytest.mark.timeout(HANG)
@pytest.mark.parametrize("mode", MODES)
def test_the_deployed_servers_seeds_and_a_short_campaign_hold(mode: str) -> None:
    """Each deployed server (auth, resume, TLS, WebSocket): its seeds as they are, then a short
    campaign against one server."""
    assert asyncio.run(deployed.replay(mode, *deployed.MODES[mode][1]())) == []
    assert asyncio.run(deployed.campaign(mode, 20, 1, None)) == (20, 0)


@pytest.mark.timeout(HANG)
@pytest.mark.parametrize("mode", MODES)
def test_mutated_conversations_leave_the_deployed_servers_working(mode: str) -> None:
    """Each deployed server's conversations, mutated: before, during and after authentication;
    resumes with garbage tokens and positions, at the wrong time; garbage for a ClientHello;
    text and fragmented WebSocket messages, bad upgrades."""
    seeds = deployed.MODES[mode][1]()

    @BRIEF
    @given(st.sampled_from(seeds), st.integers(0, 2**32 - 1))
    def check(seed: bytes, salt: int) -> None:
        assert asyncio.run(deployed.replay(mode, driver._mutate(random.Random(salt), seed))) == []

    check()
