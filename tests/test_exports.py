"""The public surface is a curated list; this pins it so changes are deliberate."""

from __future__ import annotations

import subprocess
import sys

import rstreams

PUBLIC = {
    # the specification's interfaces and constants
    "Processor",
    "Publisher",
    "Subscriber",
    "Subscription",
    "UNBOUNDED",
    # errors and the unhandled-error channel
    "InvalidDemandError",
    "OverflowStrategyError",
    "ReactiveStreamsError",
    "set_unhandled_error_hook",
    # the fluent base and the sources
    "Flow",
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


def test_importing_rstreams_pulls_in_no_optional_dependency() -> None:
    """`import rstreams` needs no extra: reactivex, pyspark, websockets stay unimported."""
    code = (
        "import sys, rstreams; "
        "extras = ('reactivex', 'pyspark', 'websockets', 'pyarrow', 'msgpack'); "
        "bad = [m for m in extras if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
