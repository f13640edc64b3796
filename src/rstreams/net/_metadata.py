"""Subscribe metadata on asyncio (extension metadata, PROTOCOL.md §18).

The subscribing side gives ``conn.publisher(name, metadata={...})`` (or ``conn.request``);
:func:`entries` checks and encodes it once per publisher. The serving side sees the
metadata of the subscribe it is serving through :func:`subscribe_metadata`, a context
variable set while the ``authorize`` hook, the publisher factory (or callable offer) and
the Publisher's ``subscribe`` run for that subscribe, and on the serving stream itself.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping

from rstreams.wire._metadata import encode_entries

__all__ = ["CURRENT", "EMPTY", "Metadata", "entries", "subscribe_metadata"]


class Metadata(Mapping[str, bytes]):
    """Received metadata: a read-only mapping of key -> value bytes, in the order sent.

    ``text(key)`` gives a value decoded as UTF-8; :attr:`traceparent` the W3C Trace Context
    header, the entry this extension is mostly for.
    """

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, bytes] | None = None) -> None:
        self._entries: dict[str, bytes] = dict(entries or {})

    def __getitem__(self, key: str) -> bytes:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Metadata({self._entries!r})"

    def text(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` as text (UTF-8, undecodable bytes replaced), or ``default``."""
        value = self._entries.get(key)
        return default if value is None else value.decode("utf-8", "replace")

    @property
    def traceparent(self) -> str | None:
        """The ``traceparent`` entry (W3C Trace Context), or ``None``."""
        return self.text("traceparent")


EMPTY = Metadata()

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


def entries(metadata: Mapping[str, str | bytes]) -> bytes:
    """``metadata`` checked and encoded (count and entries, §18.1); ``str`` values as UTF-8.

    Raises:
        TypeError, ValueError: a key that is not 1..64 of a-z 0-9 ``-_.``, or a value that is
            neither ``str`` nor ``bytes``.
    """
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise TypeError(f"metadata is a mapping of str keys to str or bytes values, got {metadata!r}")
    return encode_entries(metadata)  # checks every key and value as it encodes
