"""Demand arithmetic, in one place (rules 2.5, 3.9, 3.17).

Every operator, source and sink in rstreams calls these; none redoes them.

* :data:`UNBOUNDED` is ``2**63 - 1``: demand that reaches it stays there, and a
  publisher may treat it as "send everything" (3.17). Python ints never overflow, so
  the cap is explicit: :func:`add` clamps instead of rejecting.
* :func:`invalid` tells whether a ``request(n)`` argument breaks rule 3.9 and returns
  the error to signal (never to raise, 3.16).
* :func:`sub` takes delivered elements off outstanding demand, keeping ``UNBOUNDED``.
* :func:`accept_subscription` implements "at most one active subscription" (2.5).
"""

from __future__ import annotations

from rstreams.api import Subscription
from rstreams.errors import InvalidDemandError

__all__ = ["UNBOUNDED", "accept_subscription", "add", "invalid", "sub"]

UNBOUNDED = 2**63 - 1
"""Java's Long.MAX_VALUE: the demand at which a stream is "effectively unbounded" (3.17)."""


def invalid(n: object) -> InvalidDemandError | None:
    """The rule-3.9 error for ``request(n)``, or ``None`` when ``n`` is a legal request.

    Legal means an ``int`` (not a ``bool``) greater than zero. Values above
    :data:`UNBOUNDED` are legal and mean unbounded.
    """
    if type(n) is int and n > 0:  # the common case, one check
        return None
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:  # int subclasses
        return None
    return InvalidDemandError(n)


def add(current: int, n: int) -> int:
    """``current + n``, saturated at :data:`UNBOUNDED` (3.17). Both must be >= 0."""
    total = current + n
    return UNBOUNDED if total >= UNBOUNDED else total


def sub(current: int, n: int) -> int:
    """``current - n`` floored at zero; :data:`UNBOUNDED` stays unbounded."""
    if current == UNBOUNDED:
        return UNBOUNDED
    rest = current - n
    return rest if rest > 0 else 0


def accept_subscription(current: Subscription | None, new: Subscription | None) -> bool:
    """Whether a Subscriber holding ``current`` may take ``new`` (rules 2.5 and 2.13).

    Raises ``TypeError`` for ``None`` (checked first, so a Subscriber that already
    holds a subscription still raises rather than calling ``None.cancel()``). Cancels
    ``new`` and returns ``False`` when a subscription is already held.
    """
    if new is None:
        raise TypeError("rule 2.13: on_subscribe(None) is illegal; pass a Subscription")
    if current is not None:
        new.cancel()
        return False
    return True
