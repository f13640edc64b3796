"""The public surface is a curated list; this pins it so changes are deliberate."""

from __future__ import annotations

import sys

import pytest

import rstreams
from testkit import patience

PUBLIC = {
    # the specification's interfaces and constants
    "Processor",
    "Publisher",
    "Subscriber",
    "Subscription",
    "UNBOUNDED",
    # errors and the unhandled-error channel
    "InvalidDemandError",
    "NoSuchElementError",
    "OverflowStrategyError",
    "StreamTimeoutError",
    "ReactiveStreamsError",
    "set_unhandled_error_hook",
    # the fluent base and the sources
    "Flow",
    "GroupedFlow",
    "empty",
    "error",
    "from_async_iterable",
    "from_iterable",
    "from_observable",
    "from_publisher",
    "from_push",
    "interval",
    "just",
    "merge",
    "range",
    # functions that combine several Publishers
    "amb",
    "combine_latest",
    "concat",
    "race",
    "zip",
    "timer",
    "OverflowStrategy",
    "PushSource",
    # processors, sinks and adapters
    "MulticastProcessor",
    "SinkResult",
    "to_observable",
    # RS.io: the network (rstreams.net holds the rest: codecs, Server, Connection)
    "serve",
    "connect",
    "connect_pipe",
    "Resume",
    "Token",
    "UserPassword",
}


def test_all_is_exactly_the_documented_api() -> None:
    """`rstreams.__all__` equals the documented list and every name resolves."""
    assert set(rstreams.__all__) == PUBLIC
    for name in rstreams.__all__:
        assert getattr(rstreams, name) is not None


def test_the_operators_errors_are_caught_by_their_public_names() -> None:
    """The errors the README names for `first()` and `timeout()`, and `group_by`'s groups'
    type, are `rstreams.` names."""
    with pytest.raises(rstreams.NoSuchElementError):
        rstreams.empty().first().result(5)
    assert issubclass(rstreams.NoSuchElementError, LookupError)
    assert issubclass(rstreams.StreamTimeoutError, TimeoutError)
    assert rstreams.NoSuchElementError.__module__ == rstreams.StreamTimeoutError.__module__ == "rstreams"
    group = rstreams.just(1, 2).group_by(lambda x: x % 2).first().result(5)
    assert type(group) is rstreams.GroupedFlow and group.key == 1


@pytest.mark.timeout(120)  # (above its child's 60 s of own time)
def test_importing_rstreams_pulls_in_no_optional_dependency() -> None:
    """`import rstreams` needs no extra: reactivex, pyspark, websockets stay unimported."""
    code = (
        "import sys, rstreams; "
        "extras = ('reactivex', 'pyspark', 'websockets', 'pyarrow', 'msgpack'); "
        "bad = [m for m in extras if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = patience.run([sys.executable, "-c", code], 60, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(120)  # (above its child's 60 s of own time)
def test_importing_rstreams_is_light_and_names_load_on_first_use() -> None:
    """`import rstreams` loads no asyncio, ssl or socket; touching `rstreams.connect` loads the net layer."""
    code = (
        "import sys, rstreams\n"
        "heavy = ('asyncio', 'ssl', 'socket', 'rstreams.flow', 'rstreams.net')\n"
        "before = [m for m in heavy if m in sys.modules]\n"
        "rstreams.connect, rstreams.Flow\n"
        "after = [m for m in heavy if m in sys.modules]\n"
        "print(before, after)\n"
    )
    out = patience.run([sys.executable, "-c", code], 60, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    before, after = out.stdout.strip().split("] [")
    assert before == "[", f"import rstreams loaded {before}]"
    assert "'rstreams.net'" in after and "'rstreams.flow'" in after


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    """The lazy loader keeps Python's usual error for a name rstreams does not have."""
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = rstreams.nope
