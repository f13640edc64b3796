"""Subscribe metadata on asyncio (extension metadata, PROTOCOL.md §18).

The subscribing side gives ``conn.publisher(name, metadata={...})`` (or ``conn.request``);
:func:`entries` (the wire's ``encode_entries``, which remembers entries sent again) checks
and encodes it once per publisher or request. The serving side sees the metadata of the
subscribe it is serving through :func:`subscribe_metadata`, a context
variable set while the ``authorize`` hook, the publisher factory (or callable offer) and
the Publisher's ``subscribe`` run for that subscribe, and on the serving stream itself.
"""

from __future__ import annotations

import contextvars

from rstreams.wire._metadata import EMPTY, Metadata
from rstreams.wire._metadata import encode_entries as entries

__all__ = ["CURRENT", "EMPTY", "Metadata", "entries", "subscribe_metadata"]

CURRENT: contextvars.ContextVar[Metadata] = contextvars.ContextVar(
    "rstreams_subscribe_metadata", default=EMPTY
)
"""The metadata of the subscribe being served (empty outside one, or when it carried none)."""


def subscribe_metadata() -> Metadata:
    """The metadata of the subscribe being served: call it in an ``authorize`` hook, a
    publisher factory, a callable offer or a Publisher's ``subscribe`` (PROTOCOL.md §18).

    A read-only mapping of key -> ``bytes``; ``.text(key)`` decodes one, ``.traceparent`` is
    the W3C Trace Context entry. Empty when the subscriber sent none (or does not speak the
    extension), and outside those calls.
    """
    return CURRENT.get()
