"""The example operator in rstreams.flow._operator's docstring works as written."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

import rstreams
from rstreams.api import Publisher, Subscriber
from rstreams.flow import _operator
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM
from testkit import patience
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber


def _example() -> Any:
    """Run the docstring's code block; return its ``MapIndexedFlow``."""
    doc = _operator.__doc__ or ""
    block = doc.split("runs this very example under the TCK)::", 1)[1].split("\n\nAn operator that drops", 1)[
        0
    ]
    names: dict[str, Any] = {
        "OperatorFlow": OperatorFlow,
        "OperatorSubscriber": OperatorSubscriber,
        "check_callable": check_callable,
        "NONE_ITEM": NONE_ITEM,
        "Publisher": Publisher,
        "Subscriber": Subscriber,
        "Callable": Callable,
        "T": Any,
        "R": Any,
    }
    exec(textwrap.dedent(block), names)  # the docstring's own example, on purpose
    return names["MapIndexedFlow"]


def test_the_example_maps_with_the_index() -> None:
    """Elements in order, each with its index; the chain goes on from it."""
    flow = rstreams.from_publisher(_example()(rstreams.range(10, 14), lambda i, x: (i, x)))
    assert patience.result(flow.collect()) == [(0, 10), (1, 11), (2, 12), (3, 13)]


def test_the_example_fails_like_every_operator() -> None:
    """A raising fn cancels upstream and signals the error once (rule 2.13)."""

    def fn(i: int, x: int) -> int:
        if i == 1:
            raise ValueError("bad")
        return x

    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    _example()(source, fn).subscribe(s)
    source.emit(7, 8, 9)
    assert s.items == [7] and str(s.error) == "bad" and source.cancelled == 1


def test_the_example_passes_the_publisher_tck() -> None:
    """The whole PublisherVerification, with nothing but the base's help."""
    from rstreams.tck import verify_publisher

    example = _example()
    report = verify_publisher(
        lambda n: example(rstreams.range(0, n), lambda i, x: x),
        create_failed_publisher=lambda: example(rstreams.error(RuntimeError("failed")), lambda i, x: x),
    )
    assert report.ok, str(report)
