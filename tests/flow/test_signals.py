"""Guarded delivery (rule 2.13) and the shape every flow module keeps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscriber, Subscription
from rstreams.errors import set_unhandled_error_hook
from rstreams.flow._signals import signal_subscribe, signal_terminal

FLOW = Path(rstreams.__file__).parent / "flow"


class _Raising(Subscriber[Any]):
    def on_subscribe(self, subscription: Subscription) -> None:
        raise RuntimeError("on_subscribe broke")

    def on_next(self, item: Any) -> None:
        raise RuntimeError("on_next broke")

    def on_error(self, error: BaseException) -> None:
        raise RuntimeError("on_error broke")

    def on_complete(self) -> None:
        raise RuntimeError("on_complete broke")


@pytest.fixture
def reported() -> Any:
    seen: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda error, where: seen.append((error, where)))
    yield seen
    set_unhandled_error_hook(previous)


def test_a_raising_terminal_signal_is_reported_not_raised(reported: list[tuple[BaseException, str]]) -> None:
    """Rule 2.13: on_complete/on_error that raise go to the unhandled-error hook, named."""
    signal_terminal(_Raising(), None)
    signal_terminal(_Raising(), ValueError("x"))
    assert [where for _, where in reported] == ["_Raising.on_complete", "_Raising.on_error"]


def test_a_raising_on_subscribe_is_reported_and_answered_false(
    reported: list[tuple[BaseException, str]],
) -> None:
    """The caller learns that the subscriber must be treated as cancelled."""

    class _Nothing(Subscription):
        def request(self, n: int) -> None:
            pass

        def cancel(self) -> None:
            pass

    assert signal_subscribe(_Raising(), _Nothing()) is False
    assert [where for _, where in reported] == ["_Raising.on_subscribe"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: rstreams.range(0, 3),
        lambda: rstreams.just(1, 2).map(str),
        lambda: rstreams.range(0, 3).concat_map(rstreams.just),
    ],
)
def test_sources_report_a_raising_subscriber(make: Any, reported: list[tuple[BaseException, str]]) -> None:
    """A source never lets a Subscriber's raise escape from subscribe()."""
    make().subscribe(_Raising())
    assert len(reported) == 1 and str(reported[0][0]) == "on_subscribe broke"
    assert reported[0][1].endswith(".on_subscribe")


class _RaisingOnNext(Subscriber[Any]):
    def on_subscribe(self, subscription: Subscription) -> None:
        subscription.request(10)

    def on_next(self, item: Any) -> None:
        raise RuntimeError("on_next broke")

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


@pytest.mark.parametrize(
    "operator",
    [
        lambda f: f.map(str),
        lambda f: f.filter(bool),
        lambda f: f.take(5),
        lambda f: f.tap(print),
        lambda f: f.map(str).filter(bool).take(5),
    ],
    ids=["map", "filter", "take", "tap", "chain"],
)
@pytest.mark.parametrize(
    "source",
    [lambda: rstreams.range(1, 3), lambda: rstreams.from_iterable(iter([1, 2]))],
    ids=["range", "iter"],
)
def test_a_raise_behind_operators_names_the_users_subscriber(
    operator: Any, source: Any, reported: list[tuple[BaseException, str]]
) -> None:
    """Rule 2.13's report names the Subscriber that raised, not the operator it came through."""
    operator(source()).subscribe(_RaisingOnNext())
    assert [where for _, where in reported] == ["_RaisingOnNext.on_next"]


def test_no_flow_module_reaches_into_asyncio_internals() -> None:
    """Only the public asyncio API: no ``asyncio._get_running_loop`` and friends."""
    offenders = [
        path.name for path in sorted(FLOW.glob("*.py")) if re.search(r"asyncio\._", path.read_text())
    ]
    assert offenders == []


def test_operators_keep_the_three_names() -> None:
    """One shape: inner subscribers say ``downstream``/``upstream``/``done``, never ``_downstream``.

    ``MulticastProcessor`` is public, so its own fields stay private.
    """
    offenders = [
        path.name
        for path in sorted(FLOW.glob("*.py"))
        if path.name != "_multicast.py"
        and re.search(r"self\._(downstream|upstream|done)\b", path.read_text())
    ]
    assert offenders == []
