"""Argument checks the specification demands on the caller's stack (rules 1.9, 2.13).

Java's ``null`` is Python's ``None``: each check raises :class:`TypeError` with the rule
and the right call, synchronously, before anything is queued or scheduled.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["check_error", "check_item", "check_subscriber"]

T = TypeVar("T")


def check_subscriber(subscriber: T | None) -> T:
    """Rule 1.9: ``subscribe(None)`` raises ``TypeError``."""
    if subscriber is None:
        raise TypeError("rule 1.9: subscribe(None) is illegal; pass a Subscriber")
    return subscriber


def check_item(item: T | None) -> T:
    """Rule 2.13: ``on_next(None)`` raises ``TypeError``; ``None`` is never an element."""
    if item is None:
        raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
    return item


def check_error(error: BaseException | None) -> BaseException:
    """Rule 2.13: ``on_error(None)`` raises ``TypeError``."""
    if error is None:
        raise TypeError("rule 2.13: on_error(None) is illegal; pass the exception")
    return error
