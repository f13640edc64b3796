"""An event loop on a daemon thread, as :class:`rstreams.replay.ReplayServer` and
:class:`rstreams.web.LivePage` run theirs: a loop is closed by ``stop()``, and by the owner's
collection when it never ran (built and never started), not left for ``-X dev`` to report
as an unclosed event loop."""

from __future__ import annotations

import asyncio
import threading
import weakref


def loop_thread(owner: object, name: str) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """A new event loop and the daemon thread that is to run it; the loop is closed when
    ``owner`` is collected with the loop idle (a running loop is its thread's to close)."""
    loop = asyncio.new_event_loop()
    weakref.finalize(owner, close_idle, loop)
    return loop, threading.Thread(target=loop.run_forever, name=name, daemon=True)


def close_idle(loop: asyncio.AbstractEventLoop) -> None:
    """Close ``loop`` unless it runs or is closed already."""
    if not loop.is_running() and not loop.is_closed():
        loop.close()
