"""The fuzz harness's invariant, run briefly in CI (fuzz/fuzz_connection.py runs it for long)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_connection.py"
    spec = importlib.util.spec_from_file_location("fuzz_connection", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_connection"] = module
    spec.loader.exec_module(module)
    return module


harness = _load()


@pytest.mark.timeout(60)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_any_input_keeps_the_invariant(data: bytes) -> None:
    """Any input: valid events or our protocol error, well-formed output, a clean end."""
    harness.one_input(data)


@pytest.mark.timeout(60)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(harness._seeds()), st.integers(0, 2**32 - 1))
def test_mutated_conversations_keep_the_invariant(seed: bytes, salt: int) -> None:
    """Valid conversations, mutated (deep states: subscriptions, parts, goodbye)."""
    import random

    harness.one_input(harness._mutate(random.Random(salt), seed))


@pytest.mark.timeout(60)
def test_seeds_reach_deep_states() -> None:
    """The seeds are valid conversations: they run without a protocol error on the way."""
    for seed in harness._seeds():
        harness.one_input(seed)


@pytest.mark.timeout(60)
def test_pure_loop_runs() -> None:
    """The pure-Python driver (the documented fallback for atheris) runs a bounded batch."""
    assert harness.pure(2000, seed=1) == 2000
