"""The WebSocket transport's own protocol error, importable without the ``websockets`` extra
(rstreams.net exports it)."""

from __future__ import annotations

from rstreams.wire import FrameError

__all__ = ["TextMessageError"]


class TextMessageError(FrameError, ValueError):
    """The peer sent a text WebSocket message where RS.io uses binary ones (PROTOCOL.md §1): a
        protocol violation that ends the connection (this side closes the WebSocket with 1003, or with
    1007 for one that is not UTF-8, which the ``websockets`` library checks before it is read); the
        cause of the :class:`~rstreams.errors.ConnectionBrokenError` its streams end with."""

    section = "1"

    @property
    def reason(self) -> str:
        """The message, which cites §1 itself (it is also the broken connection's text)."""
        return str(self)
