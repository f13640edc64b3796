"""Guarded signal delivery: the one place a Subscriber's raise is caught (rule 2.13).

Rule 2.13 says ``on_subscribe``, ``on_next``, ``on_error`` and ``on_complete`` must
return normally; a Subscriber that raises anyway is treated as having cancelled its
subscription, and its error goes to :func:`rstreams.errors.report_unhandled` (the
runtime's error channel), never swallowed. Every source, boundary and drain loop in
:mod:`rstreams.flow` delivers through these functions so that the rule is worded once.

Operators that only pass signals on (``map``, ``filter``, ...) do not guard: a raise
travels back to the source that called them, which guards here.

Also here: the internal batch signal. A Subscriber inside rstreams may offer
``on_next_many(items)``: ``items`` is a non-empty list, handed over (the receiver may
keep or change it, so the sender counts it before the call and never looks at it again),
and the call means exactly ``on_next(x)`` for each ``x`` in order.
Demand counts elements, never calls. Sources and operators look it up once per
subscription with :func:`next_many` and fall back to ``on_next`` when it is missing, so
any Subscriber from outside sees plain ``on_next`` calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rstreams.api import Subscriber, Subscription
from rstreams.errors import report_unhandled

__all__ = [
    "CHUNK",
    "NONE_ITEM",
    "NextMany",
    "next_many",
    "report_broken",
    "signal_subscribe",
    "signal_terminal",
    "subscriber_name",
]

T = TypeVar("T")

NONE_ITEM = "rule 2.13: on_next(None) is illegal; None is never a stream element"
"""The ``TypeError`` message for ``on_next(None)``."""

CHUNK = 128
"""Most elements a source hands on in one ``on_next_many`` call. Within demand already
granted, an operator may run its function up to this many elements ahead of its
downstream; a bound keeps that small while costing under 1% per element."""

NextMany = Callable[[list[Any]], None]


def next_many(subscriber: Subscriber[Any]) -> NextMany | None:
    """``subscriber.on_next_many`` when it offers the batch signal, else ``None``."""
    many = getattr(subscriber, "on_next_many", None)
    return many if callable(many) else None


def subscriber_name(subscriber: object) -> str:
    """The class name of the Subscriber a raise from ``subscriber`` came from: behind an operator's
    inner subscriber (``map``, ``filter``, ``take``, ``tap``, ... which pass signals on without
    guarding them), the first one downstream that is not such an operator (the user's)."""
    return type(_behind_operators(subscriber)).__name__


def _behind_operators(subscriber: object) -> object:
    for _ in range(1000):  # bounded: a chain is never that long, a cycle would be a bug
        if not type(subscriber).__module__.startswith("rstreams.flow."):
            break
        downstream = getattr(subscriber, "downstream", None)
        if downstream is None:
            break
        subscriber = downstream
    return subscriber


def report_broken(error: BaseException, subscriber: Subscriber[Any], method: str) -> None:
    """Report that ``subscriber.method`` raised (rule 2.13); the caller treats it as cancelled.
    Named is the user's Subscriber behind any operators (whose batch signal became its
    ``on_next`` calls)."""
    user = _behind_operators(subscriber)
    if method == "on_next_many" and not callable(getattr(user, "on_next_many", None)):
        method = "on_next"
    report_unhandled(error, f"{type(user).__name__}.{method}")


def signal_subscribe(subscriber: Subscriber[T], subscription: Subscription) -> bool:
    """``on_subscribe(subscription)``; ``False`` (and reported) when it raised (rule 2.13)."""
    try:
        subscriber.on_subscribe(subscription)
    except Exception as exc:
        report_broken(exc, subscriber, "on_subscribe")
        return False
    return True


def signal_terminal(subscriber: Subscriber[Any], error: BaseException | None) -> None:
    """``on_error(error)``, or ``on_complete()`` for ``None``; a raise is reported (rule 2.13)."""
    try:
        if error is None:
            subscriber.on_complete()
        else:
            subscriber.on_error(error)
    except Exception as exc:
        report_broken(exc, subscriber, "on_complete" if error is None else "on_error")
