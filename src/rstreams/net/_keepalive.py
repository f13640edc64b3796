"""Keepalive pings and the idle timeout for one connection (PROTOCOL.md §14), on one loop timer.

Theory of operation. The driver records the loop time of every read in
``conn.heard_at`` and of every write in ``conn.sent_at`` (one ``loop.time()`` per read or
write, nothing else on the hot path). A :class:`Keepalive` owns a single ``loop.call_at``
timer per connection, armed for the *next moment something could be due*, never
periodically:

* the idle deadline, ``max(heard_at, sent_at) + idle_timeout``: if nothing was read and
  nothing could be written since, the connection ends with goodbye ``idle timeout ...``
  (§14.2). Writes count so that a peer that only receives (a subscriber with unbounded
  demand, on an implementation without keepalive) is not cut off while its stream flows;
  a dead or non-reading peer stops taking writes once the buffers are full (high water),
  and is then idle like a silent one. On a *resumable* session (extension resume active,
  its token known, §16) the idle link is taken for broken instead: its transport is
  aborted, and the session's own recovery follows (the client resumes on a new transport,
  the server waits ``session_timeout`` for that resume), exactly as after a stalled link;
  the idle clock then restarts from the drop;
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
from typing import TYPE_CHECKING

from rstreams.wire import ConnectionState
from rstreams.wire.extensions import KEEPALIVE, KEEPALIVE_PAYLOAD_SIZE, PING, RESUME

if TYPE_CHECKING:
    from rstreams.net._connection import Connection

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_KEEPALIVE", "Keepalive", "check_interval"]

DEFAULT_KEEPALIVE = 15.0
"""Seconds without receiving anything after which a ping is sent (both sides, by default)."""

DEFAULT_IDLE_TIMEOUT = 60.0
"""Seconds without receiving anything after which a server ends a connection (clients: off).
Four keepalive intervals: a live peer pings (or answers our pings) well within it."""


def check_interval(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or a number of seconds > 0."""
    if value is not None and (type(value) not in (int, float) or not value > 0):  # type: ignore[operator]
        raise ValueError(f"{name} must be a number of seconds > 0, or None to turn it off; got {value!r}")


class Keepalive:
    """The timer of one connection; made by the driver when ``keepalive`` or ``idle_timeout`` is set."""

    __slots__ = (
        "_conn",
        "_idle_from",
        "_idle_timeout",
        "_interval",
        "_loop",
        "_pinged_at",
        "_pings",
        "_timer",
    )

    def __init__(self, conn: Connection, interval: float | None, idle_timeout: float | None) -> None:
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._interval = interval
        self._idle_timeout = idle_timeout
        self._pinged_at = 0.0
        self._idle_from = 0.0  # loop time a resumable session's idle link was dropped (§14.2)
        self._pings = 0
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Arm the timer (the transport is up; ``conn.heard_at`` is now)."""
        self._arm(self._loop.time())

    def stop(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _arm(self, now: float) -> None:
        deadlines = []
        heard = self._conn.heard_at
        if self._idle_timeout is not None:
            deadlines.append(max(heard, self._conn.sent_at, self._idle_from) + self._idle_timeout)
        interval = self._interval
        if interval is not None:
            state = self._conn.core.state
            if state is ConnectionState.AWAITING_HELLO:
                deadlines.append(now + interval)  # look again once the hellos are exchanged
            elif state is ConnectionState.OPEN and KEEPALIVE.id in self._conn.core.extensions:
                deadlines.append(max(heard, self._pinged_at) + interval)
        if deadlines:
            self._timer = self._loop.call_at(min(deadlines), self._fire)

    def _fire(self) -> None:
        self._timer = None
        conn = self._conn
        if conn.closed or conn.core.state is ConnectionState.CLOSED:
            return
        now = self._loop.time()
        idle = now - conn.heard_at
        idle_since = max(conn.heard_at, conn.sent_at, self._idle_from)
        if self._idle_timeout is not None and now - idle_since >= self._idle_timeout:
            if not self._drop_resumable_link():
                conn.close_now(
                    f"idle timeout: nothing received for {self._idle_timeout:g} s (PROTOCOL.md §14.2)"
                )
                return
            self._idle_from = now
        interval = self._interval
        if (
            interval is not None
            and idle >= interval
            and now - self._pinged_at >= interval
            and conn.core.state is ConnectionState.OPEN
            and KEEPALIVE.id in conn.core.extensions
        ):
            self._pings += 1
            conn.send_ping(PING, self._pings.to_bytes(KEEPALIVE_PAYLOAD_SIZE, "big"))
            self._pinged_at = now
        self._arm(now)

    def _drop_resumable_link(self) -> bool:
        """Idle on a resumable session: break its link, not the session (§14.2, §16.3).

        Returns False when the session cannot be resumed (no resume extension, no token yet,
        not open, closing): then the idle timeout ends it with a goodbye as usual. Aborting
        the link's transport takes the session's ordinary broken-link path (its
        ``connection_lost``): the client resumes, the server waits for the resume. While the
        session is between links (already recovering) there is nothing to drop.
        """
        conn = self._conn
        session = conn.resume_session
        if (
            session is None
            or session.token is None
            or session.is_closing()
            or conn.core.state is not ConnectionState.OPEN
            or RESUME.id not in conn.core.extensions
        ):
            return False
        link = session.link
        if link is not None and not link.transport.is_closing():
            link.transport.abort()
        return True
