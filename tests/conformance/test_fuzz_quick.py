"""The fuzz harness's invariant, run briefly in CI (fuzz/fuzz_connection.py runs it for long)."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.scripts import load_script


def _load() -> ModuleType:
    return load_script("fuzz/fuzz_connection.py")


harness = _load()
HANG = 600.0
"""Seconds after which a test here counts as hung: a hang guard, not a speed check. The work is
fixed (a number of inputs, all CPU), so load only slows it: at load 15-19 on 2 cores the pure
loop took 23 s, under the 60 s these tests had."""


@pytest.mark.timeout(HANG)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_any_input_keeps_the_invariant(data: bytes) -> None:
    """Any input: valid events or our protocol error, well-formed output, a clean end."""
    harness.one_input(data)


@pytest.mark.timeout(HANG)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(harness._seeds()), st.integers(0, 2**32 - 1))
def test_mutated_conversations_keep_the_invariant(seed: bytes, salt: int) -> None:
    """Valid conversations, mutated (deep states: subscriptions, parts, goodbye)."""
    import random

    harness.one_input(harness._mutate(random.Random(salt), seed))


@pytest.mark.timeout(HANG)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 255),
    st.integers(0, 255),
    st.lists(st.tuples(st.integers(0, 6), st.binary(min_size=3, max_size=3)), max_size=5),
)
def test_large_elements_and_metadata_windows_in_any_reads(
    head: int, mode: int, ops: list[tuple[int, bytes]]
) -> None:
    """Large elements cut anywhere (the parser's large path, views of read buffers, limits),
    subscribeMetadata in a remembered window, reads of a frame repeated and reads joined: the
    same events as fed whole, or our error."""
    body = bytearray()
    for op, args in ops:
        body += (
            bytes((harness.LARGE_OP,)) + args,
            bytes((harness.METADATA_OP,)) + args[:2],
            b"\x00",
            b"\xff",
            bytes((harness.REPEAT_OP, args[0], 3)) + args,
            bytes((harness.JOIN_OP, args[0] & 7)),
            b"\x03" + args,
        )[op]
    harness.one_input(bytes((head, mode)) + bytes(body))


@pytest.mark.timeout(HANG)
def test_seeds_reach_deep_states() -> None:
    """The seeds are valid conversations: they run to their end without a protocol error (the
    extensions' seeds too: windows, codes, content types, messages, channels, input parts)."""
    for seed in harness._seeds():
        head, mode, chunks = harness.parse_input(seed)
        run = harness._Run(head, mode, reference=True)
        if head & 4:
            ids = tuple(sorted(harness.ALL_EXTENSIONS)) if mode & 1 else ()
            hello = harness.ClientHello(extensions=ids) if head & 1 else harness.ServerHello(extensions=ids)
            chunks.insert(0, harness.encode(hello))
        for step, chunk in enumerate(chunks):
            if run.closed():  # a goodbye in the seed
                break
            run.step(chunk, step)
        errors = [
            e for e in run.events if isinstance(e, harness.ConnectionClosed | harness.StreamError) and e.error
        ]
        assert not [e for e in errors if "input ended" not in str(e.error)], (seed.hex(), errors)
        harness.one_input(seed)


@pytest.mark.timeout(HANG)
def test_pure_loop_runs() -> None:
    """The pure-Python driver (the documented fallback for atheris) runs a bounded batch."""
    assert harness.pure(2000, seed=1) == (2000, 0)
