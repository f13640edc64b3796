"""Subscribe metadata on asyncio (extension metadata, PROTOCOL.md §18).

The subscribing side gives ``conn.publisher(name, metadata={...})`` (or ``conn.request``);
:func:`entries` checks and encodes it once per publisher. The serving side sees the
metadata of the subscribe it is serving through :func:`subscribe_metadata`, a context
variable set while the ``authorize`` hook, the publisher factory (or callable offer) and
the Publisher's ``subscribe`` run for that subscribe, and on the serving stream itself.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping

from rstreams.wire._metadata import EMPTY, Metadata, encode_entries

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


ENCODED_KEPT = 64
"""Most metadata mappings remembered with their encoding (:func:`entries`). A subscriber that
sends the same entries again (``conn.request(name, metadata=headers)`` in a loop, or a new dict
with the same items) finds them encoded; one that sends new entries each time (a new
``traceparent`` per request) fills it and then simply encodes each time: after
``ENCODED_KEPT`` such misses in a row it looks a dict up only once in ``ENCODED_KEPT`` (a
lookup that finds it remembered looks every time again)."""
_encoded: dict[tuple[tuple[str, str | bytes], ...], bytes] = {}
_misses = 0
"""Lookups in a row that found nothing with no room left; from ENCODED_KEPT on, calls since
the last lookup (up to 2 * ENCODED_KEPT: then one lookup)."""


def entries(metadata: Mapping[str, str | bytes]) -> bytes:
    """``metadata`` checked and encoded (count and entries, §18.1); ``str`` values as UTF-8.

    The same items in the same order always encode to the same bytes, so a ``dict`` whose
    items were encoded before is one lookup (:data:`ENCODED_KEPT`).

    Raises:
        TypeError, ValueError: a key that is not 1..64 of a-z 0-9 ``-_.``, or a value that is
            neither ``str`` nor ``bytes``.
    """
    global _misses
    if type(metadata) is dict:
        if _misses >= ENCODED_KEPT:  # new items every time lately: a lookup would be in vain
            _misses = _misses + 1 if _misses < 2 * ENCODED_KEPT else ENCODED_KEPT - 1
            return encode_entries(metadata)  # checks every key and value as it encodes
        items = tuple(metadata.items())
        try:
            encoded = _encoded.get(items)
        except TypeError:  # an unhashable value (a bytearray): not remembered
            return encode_entries(metadata)
        if encoded is None:
            encoded = encode_entries(metadata)  # checks every key and value as it encodes
            if len(_encoded) < ENCODED_KEPT:
                _encoded[items] = encoded
            else:
                _misses += 1
        elif _misses:
            _misses = 0
        return encoded
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata is a mapping of str keys to str or bytes values, got {metadata!r}")
    return encode_entries(metadata)  # checks every key and value as it encodes
