"""Keepalive pings and the idle timeout for one connection (PROTOCOL.md §14), on one loop timer.

Theory of operation. The pump records the loop time of every read in
``outbox.heard_at``, and, when there is an idle timeout, the outbox that of every write made
outside a read in ``outbox.sent_at`` (a write that answers a read happens at ``heard_at``):
at most one ``loop.time()`` per read and per write of its own, nothing else on the hot path.
A :class:`Keepalive` owns a single ``loop.call_at`` timer per connection, armed for the *next
moment something could be due*, never periodically:

* the idle deadline, ``max(heard_at, sent_at) + idle_timeout``: if nothing was read and
  nothing could be written since, the connection ends with goodbye ``idle timeout ...``
  (§14.2). Writes count so that a peer that only receives (a subscriber with unbounded
  demand, on an implementation without keepalive) is not cut off while its stream flows;
  a dead or non-reading peer stops taking writes once the buffers are full (high water),
  and is then idle like a silent one. Before that goodbye the :attr:`Keepalive.on_idle_link`
  hook is asked: a *resumable* session (:mod:`rstreams.net._resume_session`) takes the idle
  link for broken instead and drops it, and its own recovery follows (the client resumes
  on a new transport, the server waits for that resume), exactly as after a stalled link;
  the idle clock then restarts from the drop, and again when a transport takes the session
  over (the session sets ``heard_at`` then: the resume, or its answer, was heard on it);
* the ping deadline, ``max(heard_at, pinged_at) + interval``: if nothing was heard for
  ``interval`` and no ping went out in that time, a ping goes out (only once extension
  keepalive is active: the peer's hello listed it).

When the timer fires on a busy connection it finds ``heard_at`` recent and simply re-arms
for the new deadline, so a connection costs one timer callback per ``interval`` (15 s by
default) whatever its traffic, and an idle one the same: 10,000 connections are about 700
cheap callbacks a second, with no task and no per-read timer work. Pongs need no handling:
receiving one updates ``heard_at`` like any other read (the core answers pings itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rstreams.net._outbox import Outbox
from rstreams.wire import ConnectionState, ErrorCode, ExtensionMessage
from rstreams.wire.extensions import KEEPALIVE, KEEPALIVE_PAYLOAD_SIZE, PING

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_KEEPALIVE", "Keepalive", "check_interval"]

DEFAULT_KEEPALIVE = 15.0
"""Seconds without receiving anything after which a ping is sent (both sides, by default)."""

_SLACK = 1e-6
"""Seconds by which a timer may run early and still count as due (the loop's clock resolution)."""

DEFAULT_IDLE_TIMEOUT = 60.0
"""Seconds without receiving anything after which a server ends a connection (clients: off).
Four keepalive intervals: a live peer pings (or answers our pings) well within it."""


def check_interval(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or a number of seconds > 0."""
    if value is not None and (type(value) not in (int, float) or not value > 0):  # type: ignore[operator]
        raise ValueError(f"{name} must be a number of seconds > 0, or None to turn it off; got {value!r}")


class Keepalive:
    """The timer of one connection; made by the pump when ``keepalive`` or ``idle_timeout`` is set."""

    __slots__ = (
        "_idle_from",
        "_idle_timeout",
        "_interval",
        "_loop",
        "_outbox",
        "_pinged_at",
        "_pings",
        "_timer",
        "on_idle_link",
    )

    def __init__(self, outbox: Outbox, interval: float | None, idle_timeout: float | None) -> None:
        self._outbox = outbox
        self._loop = outbox.loop
        self._interval = interval
        self._idle_timeout = idle_timeout
        outbox.stamps_sent = idle_timeout is not None  # only the idle deadline reads sent_at
        self._pinged_at = 0.0
        self._idle_from = 0.0  # loop time a resumable session's idle link was dropped (§14.2)
        self._pings = 0
        self._timer: asyncio.TimerHandle | None = None
        self.on_idle_link: Callable[[], bool] | None = None
        """Asked before the idle timeout's goodbye: ``True`` means it dropped the idle link
        instead (a resumable session), and the idle clock restarts from now."""

    def start(self) -> None:
        """Arm the timer (the transport is up; ``outbox.heard_at`` is now)."""
        self._arm(self._loop.time())

    def stop(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _arm(self, now: float) -> None:
        deadlines = []
        outbox = self._outbox
        heard = outbox.heard_at
        if self._idle_timeout is not None:
            deadlines.append(max(heard, outbox.sent_at, self._idle_from) + self._idle_timeout)
        interval = self._interval
        if interval is not None:
            state = outbox.core.state
            if state is ConnectionState.AWAITING_HELLO:
                deadlines.append(now + interval)  # look again once the hellos are exchanged
            elif state is ConnectionState.OPEN and KEEPALIVE.id in outbox.core.extensions:
                deadlines.append(max(heard, self._pinged_at) + interval)
        if deadlines:
            self._timer = self._loop.call_at(min(deadlines), self._fire)

    def _fire(self) -> None:
        self._timer = None
        outbox = self._outbox
        core = outbox.core
        if outbox.ended is not None or core.state is ConnectionState.CLOSED:
            return
        # Due means the deadline _arm computed has come, by the same sums (so that rounding
        # cannot make a timer that fired look early and re-arm itself for the same moment);
        # the loop may run a timer up to its clock resolution early, hence the slack (in the
        # checks only: what is recorded, and so the next deadlines, is the clock's own time).
        at = self._loop.time()
        now = at + _SLACK
        idle_since = max(outbox.heard_at, outbox.sent_at, self._idle_from)
        if self._idle_timeout is not None and now >= idle_since + self._idle_timeout:
            hook = self.on_idle_link
            if hook is None or not hook():
                outbox.close_now(
                    f"idle timeout: nothing received for {self._idle_timeout:g} s (PROTOCOL.md §14.2)",
                    ErrorCode.TIMEOUT,
                )
                return
            self._idle_from = at
        interval = self._interval
        if (
            interval is not None
            and now >= max(outbox.heard_at, self._pinged_at) + interval
            and core.state is ConnectionState.OPEN
            and KEEPALIVE.id in core.extensions
        ):
            self._pings += 1
            ping = self._pings.to_bytes(KEEPALIVE_PAYLOAD_SIZE, "big")
            core.send(ExtensionMessage(type=PING, payload=ping))
            outbox.write_now(activity=False)  # a ping must not make a silent peer look alive
            self._pinged_at = at
        self._arm(at)
