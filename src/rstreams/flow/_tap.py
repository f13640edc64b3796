"""``tap`` and ``do_on_next`` / ``do_on_error`` / ``do_on_complete`` / ``do_on_cancel`` /
``do_on_request``: watch the signals that pass, change nothing.

One operator, :class:`TapFlow`, with a hook per signal (each ``do_on_*`` is ``tap`` with
one hook). Demand passes through untouched. Each hook runs before the signal goes on,
on the thread that carries it. A hook that raises (rule 2.13):

* ``on_next`` / ``on_request``: the upstream is cancelled and the downstream gets the
  hook's error instead (as with any user function in an operator). A ``request`` hook
  runs on the requesting thread, so that ``on_error`` may come from there.
* ``on_error``: the downstream gets the hook's error, chained to the original one.
* ``on_complete``: the downstream gets the hook's error instead of ``on_complete``.
* ``on_cancel``: the upstream is still cancelled; the error goes to the unhandled-error
  hook (:func:`rstreams.set_unhandled_error_hook`), since nobody listens any more.

A downstream whose ``on_subscribe`` or ``on_next`` raises has cancelled (rule 2.13):
``on_cancel`` runs, and the raise goes on to the source, which cancels the upstream and
reports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error

__all__ = ["Hooks", "TapFlow"]

T = TypeVar("T")


class Hooks:
    """The callables a :class:`TapFlow` runs; ``None`` where nothing is watched."""

    __slots__ = ("on_cancel", "on_complete", "on_error", "on_next", "on_request")

    def __init__(
        self,
        *,
        on_next: Callable[[Any], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        on_complete: Callable[[], object] | None = None,
        on_cancel: Callable[[], object] | None = None,
        on_request: Callable[[int], object] | None = None,
        operator: str = "tap",
    ) -> None:
        for name, hook in (
            ("on_next", on_next),
            ("on_error", on_error),
            ("on_complete", on_complete),
            ("on_cancel", on_cancel),
            ("on_request", on_request),
        ):
            if hook is not None:
                check_callable(operator, hook, name + "=")
        self.on_next = on_next
        self.on_error = on_error
        self.on_complete = on_complete
        self.on_cancel = on_cancel
        self.on_request = on_request


class TapFlow(OperatorFlow[T, T]):
    """``source.tap(...)`` and the ``do_on_*`` methods; see :meth:`rstreams.Flow.tap`."""

    __slots__ = ("hooks",)

    def __init__(self, source: Publisher[T], hooks: Hooks) -> None:
        super().__init__(source)
        self.hooks = hooks

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _TapSubscriber(downstream, self.hooks)


class _TapSubscriber(OperatorSubscriber[T, T]):
    __slots__ = ("hooks",)

    def __init__(self, downstream: Subscriber[T], hooks: Hooks) -> None:
        super().__init__(downstream)
        self.hooks = hooks

    def on_subscribe(self, subscription: Subscription) -> None:
        try:
            super().on_subscribe(subscription)
        except Exception:
            self._broken()
            raise

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        hook = self.hooks.on_next
        if hook is not None:
            try:
                hook(item)
            except Exception as error:
                self.fail(error)
                return
        try:
            self.downstream.on_next(item)
        except Exception:
            self._broken()
            raise

    def _broken(self) -> None:
        """The downstream raised (rule 2.13): the source that gets the raise treats the
        Subscriber as cancelled, so this is the downstream's cancel, and ``on_cancel`` runs."""
        if self.done:
            return  # it had cancelled (or the stream had ended) before it raised
        self.done = True
        hook = self.hooks.on_cancel
        if hook is not None:
            try:
                hook()
            except Exception as error:
                report_unhandled(error, "do_on_cancel: the hook raised")

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        hook = self.hooks.on_error
        if hook is not None:
            try:
                hook(error)
            except Exception as hook_error:
                if hook_error.__context__ is None and hook_error is not error:
                    hook_error.__context__ = error
                error = hook_error
        self.done = True
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        if self.done:
            return
        hook = self.hooks.on_complete
        self.done = True
        if hook is not None:
            try:
                hook()
            except Exception as error:
                self.downstream.on_error(error)  # the upstream has completed: nothing to cancel
                return
        self.downstream.on_complete()

    def request(self, n: int) -> None:
        hook = self.hooks.on_request
        if hook is not None and not self.done:
            try:
                hook(n)
            except Exception as error:
                self.fail(error)
                return
        super().request(n)

    def cancel(self) -> None:
        hook = self.hooks.on_cancel
        if hook is not None and not self.done:
            try:
                hook()
            except Exception as error:  # the upstream is cancelled all the same
                report_unhandled(error, "do_on_cancel: the hook raised")
        super().cancel()
