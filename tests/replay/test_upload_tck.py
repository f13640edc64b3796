"""The output of a sink log's upload channel (``NAME?stage=T``, PROTOCOL.md §21.8) under the TCK.

``_StagedCount`` is the Publisher the replay server's channel factory returns: it stages its
input's packed rows and is then one element, ``{"count": N}``, and complete; an input that
fails makes it signal ``onError``. Driven here in process, without a connection, the input an
ordinary Publisher, as the channel's serving side receives it.
"""

from __future__ import annotations

import itertools
from typing import Any

import rstreams
from rstreams.api import Publisher
from rstreams.replay import ReplayLog
from rstreams.replay import _server as server_module
from rstreams.replay import _staging as staging_module
from rstreams.replay._cursor import pack
from rstreams.tck import PublisherVerification, SkipTest, TestEnvironment

_tokens = itertools.count()


def _output(rows: Publisher[bytes]) -> Publisher[Any]:
    """A new upload's output over ``rows``, under a token of its own in a staging area of its own."""
    staging = staging_module.Staging(ReplayLog("out", capacity=10), 1 << 20)
    return server_module._StagedCount(staging, f"t{next(_tokens)}", None, rows)


class TestUploadChannelOutput(PublisherVerification):
    def create_publisher(self, elements: int) -> Publisher[Any]:
        if elements != 1:  # max_elements_from_publisher() skips the cases that need more
            raise SkipTest("an upload channel's output is always one element, the count")
        return _output(rstreams.just(pack([b"a", b"bc"]), pack([b"d"])))

    def create_failed_publisher(self) -> Publisher[Any]:
        return _output(rstreams.error(RuntimeError("the input failed on purpose")))

    def max_elements_from_publisher(self) -> int:
        return 1

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=2.0, default_no_signals_timeout=0.05)


def test_the_output_counts_the_rows_it_staged() -> None:
    """Outside the TCK: the one element is the JSON count of the rows, and they are staged."""
    staging = staging_module.Staging(ReplayLog("out", capacity=10), 1 << 20)
    output = server_module._StagedCount(staging, "t", None, rstreams.just(pack([b"a", b"bc"]), pack([b"d"])))
    assert rstreams.from_publisher(output).collect().result(5) == [b'{"count": 3}']
    assert staging.staged_bytes == 4
