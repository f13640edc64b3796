"""The net fuzz drivers' invariants, run briefly in CI (fuzz/fuzz_net.py and fuzz/fuzz_client.py
run them for long): any bytes, in any reads, into one connection of a real server leave the
server and its other clients working; any bytes from a server end a client's calls with their
value or an rstreams error, never a hang."""

from __future__ import annotations

import asyncio
import random
import time
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit import bound
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


@pytest.mark.timeout(60)
def test_a_bound_fails_a_wait_for_what_never_comes() -> None:
    """An idle loop waiting for an event never set: a hang, named, once the limit's own time passed."""

    async def wait() -> None:
        await driver.within(asyncio.Event().wait(), "an event never set", limit=0.2)

    with pytest.raises(AssertionError, match=r"^hang: waited 0.2 s of the loop's own time \(.*for an event"):
        asyncio.run(wait())


@pytest.mark.timeout(60)
def test_time_the_thread_waited_for_a_cpu_is_not_counted_but_the_hard_bound_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As if the thread had waited for a CPU all along (the machine's load): a wait 15 times
    longer than its limit ends with its result; one that never ends fails at the hard bound."""
    monkeypatch.setattr(bound, "_run_delay", time.monotonic)

    async def slow() -> str:
        await asyncio.sleep(0.3)
        return "done"

    monkeypatch.setattr(bound, "HARD", 10**6)
    assert asyncio.run(driver.within(slow(), "a slow answer", limit=0.02)) == "done"
    monkeypatch.setattr(bound, "HARD", 5)
    with pytest.raises(AssertionError, match=r"own time \(-?0.0 s; [.0-9]+ s in all\) for an event never"):
        asyncio.run(driver.within(asyncio.Event().wait(), "an event never set", limit=0.02))
