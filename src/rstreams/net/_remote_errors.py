"""What a remote publisher's ``onError`` becomes locally: :class:`RemoteStreamError`, typed by
its error code when the peer sends one (extension error-codes, PROTOCOL.md §19).

::

    RemoteStreamError                        any onError; .code is None without the extension
    ├── UnknownPublisher (UnknownPublisherError, LookupError)   code 2
    ├── Unauthenticated                      code 3
    ├── Unauthorized                         code 4
    ├── InvalidDemand (ValueError)           code 5
    ├── ProtocolViolation                    code 6
    ├── LimitExceeded                        code 7
    ├── Unavailable                          code 8
    ├── InternalError                        code 9
    ├── Cancelled                            code 10
    └── TimedOut                             code 11

Code 1 (the publisher's own error) and codes this table does not know stay a plain
:class:`RemoteStreamError` with ``.code`` set. A local Publisher may signal one of these
classes itself (``on_error(Unavailable("overloaded"))``): the serving side then sends its
code instead of code 1, so a relay keeps the code it received.
"""

from __future__ import annotations

from typing import ClassVar

from rstreams.errors import ReactiveStreamsError
from rstreams.net._routes import UnknownPublisherError
from rstreams.wire._codes import ErrorCode

__all__ = [
    "CLASSES",
    "Cancelled",
    "InternalError",
    "InvalidDemand",
    "LimitExceeded",
    "ProtocolViolation",
    "RemoteStreamError",
    "TimedOut",
    "Unauthenticated",
    "Unauthorized",
    "Unavailable",
    "UnknownPublisher",
    "code_of",
    "remote_error",
]


class RemoteStreamError(ReactiveStreamsError):
    """The remote publisher signalled ``onError``; ``message`` is the text it sent.

    ``code`` is the error code the peer sent beside it (PROTOCOL.md §19.2), ``None`` when
    the peer does not speak extension error-codes. Subclasses name the codes.
    """

    CODE: ClassVar[int | None] = None
    """The code this class stands for (``None`` for the base class)."""

    def __init__(
        self, message: str, *, publisher: str = "", subscriber: int = 0, code: int | None = None
    ) -> None:
        text = f"remote publisher {publisher!r} failed: {message}" if publisher else message
        ReactiveStreamsError.__init__(self, text)
        self.message = message
        self.publisher = publisher
        self.subscriber = subscriber
        self.code = code if code is not None else type(self).CODE


class UnknownPublisher(RemoteStreamError, UnknownPublisherError):
    """The peer has no publisher of that name (code 2); also an :class:`UnknownPublisherError`."""

    CODE = ErrorCode.UNKNOWN_PUBLISHER

    def __init__(
        self, message: str, *, publisher: str = "", subscriber: int = 0, code: int | None = None
    ) -> None:
        super().__init__(message, publisher=publisher, subscriber=subscriber, code=code)
        self.name = publisher  # UnknownPublisherError's field


class Unauthenticated(RemoteStreamError):
    """The subscribe needs (valid) credentials (code 3, PROTOCOL.md §15.4)."""

    CODE = ErrorCode.UNAUTHENTICATED


class Unauthorized(RemoteStreamError):
    """The principal may not subscribe to that publisher (code 4, PROTOCOL.md §15.4)."""

    CODE = ErrorCode.UNAUTHORIZED


class InvalidDemand(RemoteStreamError, ValueError):
    """The peer found our demand illegal (code 5, rule 3.9, PROTOCOL.md §6.2)."""

    CODE = ErrorCode.INVALID_DEMAND


class ProtocolViolation(RemoteStreamError):
    """The peer ended the stream because a rule of the protocol was broken (code 6)."""

    CODE = ErrorCode.PROTOCOL_VIOLATION


class LimitExceeded(RemoteStreamError):
    """A limit of the serving side was exceeded (code 7, PROTOCOL.md §11)."""

    CODE = ErrorCode.LIMIT_EXCEEDED


class Unavailable(RemoteStreamError):
    """The publisher cannot serve now (code 8); trying again later may work."""

    CODE = ErrorCode.UNAVAILABLE


class InternalError(RemoteStreamError):
    """The serving side failed (code 9), e.g. its publisher factory raised."""

    CODE = ErrorCode.INTERNAL


class Cancelled(RemoteStreamError):
    """The serving side ended the stream on its own decision (code 10)."""

    CODE = ErrorCode.CANCELLED


class TimedOut(RemoteStreamError):
    """Something the serving side waited for did not happen in time (code 11)."""

    CODE = ErrorCode.TIMEOUT


CLASSES: dict[int, type[RemoteStreamError]] = {
    cls.CODE: cls
    for cls in (
        UnknownPublisher,
        Unauthenticated,
        Unauthorized,
        InvalidDemand,
        ProtocolViolation,
        LimitExceeded,
        Unavailable,
        InternalError,
        Cancelled,
        TimedOut,
    )
}
"""Error code -> the class an onError with that code becomes."""


def remote_error(message: str, *, publisher: str, subscriber: int, code: int | None) -> RemoteStreamError:
    """The exception for an onError with ``message`` and ``code`` (``None``: no code)."""
    cls = CLASSES.get(code, RemoteStreamError) if code is not None else RemoteStreamError
    return cls(message, publisher=publisher, subscriber=subscriber, code=code)


def code_of(error: BaseException) -> int:
    """The code a local Publisher's ``on_error(error)`` is sent with: a :class:`RemoteStreamError`'s
    own code (relayed, or raised on purpose), else 1, the publisher's own error."""
    if isinstance(error, RemoteStreamError) and error.code is not None:
        return error.code
    return ErrorCode.APPLICATION
