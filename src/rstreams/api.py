"""The four Reactive Streams interfaces, in Python (specification rules 1.1-4.2).

These are :class:`typing.Protocol` classes: any object with the right methods is a
Publisher, Subscriber, Subscription or Processor, whichever library made it. Classes in
rstreams also inherit from them explicitly, so ``isinstance`` works with them and the
intent is visible.

How Java's contract maps onto Python:

* Java's ``null`` is Python's ``None``. ``subscribe(None)``, ``on_subscribe(None)``,
  ``on_next(None)`` and ``on_error(None)`` raise :class:`TypeError` on the caller's
  stack (rules 1.9 and 2.13). ``None`` is therefore never an element of a stream.
* ``request(n)`` with ``n <= 0`` (or a bool, or a non-int) never raises: the
  subscription signals ``on_error(InvalidDemandError)``, a :class:`ValueError` whose
  message names rule 3.9 (rules 3.9 and 3.16).
* Demand is an ``int`` summed with saturation at ``2**63 - 1``, which means
  "unbounded" (rule 3.17; see :mod:`rstreams.demand`).
* Every method here is synchronous and must not block: "non-obstructing" in the
  specification's glossary. Asynchronous work is scheduled, never awaited, from here.

This module imports nothing from the rest of rstreams; everything else builds on it.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

__all__ = ["Processor", "Publisher", "Subscriber", "Subscription"]

T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


@runtime_checkable
class Subscription(Protocol):
    """The one-to-one link between a Subscriber and a Publisher (rules 3.1-3.17).

    Made by the Publisher and handed to the Subscriber in ``on_subscribe``; only that
    Subscriber calls its methods (3.1). Both methods may be called from any thread,
    from inside ``on_next`` (bounded re-entrancy, 3.3), and after the stream ended,
    when they do nothing (3.6, 3.7). Neither ever raises (3.16).
    """

    __slots__ = ()

    def request(self, n: int) -> None:
        """Ask for ``n`` more elements (3.8); demand adds up and saturates at ``2**63 - 1``.

        ``n <= 0`` is signalled as ``on_error(ValueError)`` naming rule 3.9, not raised.
        May be called synchronously from ``on_subscribe`` and ``on_next`` (3.2).
        """
        ...

    def cancel(self) -> None:
        """Ask the Publisher to stop signalling; idempotent and thread-safe (3.5, 3.7).

        Signals already in flight may still arrive (3.12); the Publisher eventually
        drops its reference to the Subscriber (3.13).
        """
        ...


@runtime_checkable
class Subscriber(Protocol[T_contra]):
    """Receives a stream: ``on_subscribe on_next* (on_error | on_complete)?``.

    The Publisher calls these methods serially (1.3), never concurrently, and after a
    terminal signal never again (1.7). They must return quickly and must not raise,
    except :class:`TypeError` for a ``None`` argument (2.13).
    """

    __slots__ = ()

    def on_subscribe(self, subscription: Subscription) -> None:
        """Called first, exactly once per ``subscribe`` call (1.9, 2.5).

        The Subscriber must call ``subscription.cancel()`` on a second subscription
        while it already holds an active one (2.5). No element arrives until the
        Subscriber signals demand with ``subscription.request(n)`` (2.1).
        """
        ...

    def on_next(self, item: T_contra) -> None:
        """One element, never more than requested (1.1). ``item`` is never ``None``."""
        ...

    def on_error(self, error: BaseException) -> None:
        """The stream failed; terminal. Called even without demand (1.4, 2.10).

        Must not call ``request``/``cancel`` on the Subscription from here (2.3).
        """
        ...

    def on_complete(self) -> None:
        """The stream ended normally; terminal. Called even without demand (1.5, 2.9).

        Must not call ``request``/``cancel`` on the Subscription from here (2.3).
        """
        ...


@runtime_checkable
class Publisher(Protocol[T_co]):
    """A source of a possibly unbounded sequence of elements, sent as demanded.

    ``subscribe`` may be called many times, each call starting a new Subscription
    (1.10, 1.11). The Publisher signals ``on_subscribe`` before anything else (1.9)
    and then sends at most as many elements as were requested (1.1).
    """

    __slots__ = ()

    def subscribe(self, subscriber: Subscriber[T_co]) -> None:
        """Start a new subscription for ``subscriber``; raises ``TypeError`` for ``None`` (1.9).

        Any other failure (including rejecting the subscriber) is signalled with
        ``on_subscribe`` followed by ``on_error``, never raised.
        """
        ...


@runtime_checkable
class Processor(Subscriber[T_contra], Publisher[R_co], Protocol[T_contra, R_co]):
    """A processing stage: a Subscriber upstream and a Publisher downstream (4.1).

    It obeys the contracts of both (4.1). It may recover from an upstream error, in
    which case it must consider its upstream subscription cancelled; otherwise it
    passes the error on to its Subscribers at once (4.2).
    """

    __slots__ = ()
