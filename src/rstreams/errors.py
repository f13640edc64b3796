"""Every exception rstreams raises or signals, and the runtime's error channel.

::

    ReactiveStreamsError                    root; never raised itself
    ├── InvalidDemandError (ValueError)     rule 3.9: request(n) with n <= 0; sent via on_error
    ├── OverflowStrategyError               a push source ran out of buffer ("buffer then error")
    ├── AlreadySubscribedError (RuntimeError)  a one-subscriber Publisher subscribed again (1.9)
    ├── NoEventLoopError (RuntimeError)     subscribed outside a running loop and without loop=
    ├── LoopClosedError (RuntimeError)      the loop or executor a stream runs on was closed
    ├── BlockingInLoopError (RuntimeError)  a blocking result() on a running loop's own thread
    ├── RuleViolationError (RuntimeError)   a local Publisher or Subscription broke a rule (1.1, 3.16)
    ├── NoneElementError (TypeError)        a source or an operator's function produced None (2.13)
    ├── MissingExtraError (ModuleNotFoundError)  an optional dependency is missing: pip install 'rstreams[X]'
    ├── ProtocolError                       RS.io: .subscriber is the stream id, None = connection
    │   ├── LocalProtocolError              you called the wire core wrong; raised at once
    │   └── RemoteProtocolError             the peer broke the protocol; becomes a goodbye
    ├── ResourceClosedError                 you closed it and then used it
    ├── ConnectionBrokenError               peer or network failure; __cause__ holds why
    │   ├── TLSRefusedError                 TLS ended before the server's first word (mutual TLS?)
    │   ├── HandshakeTimeoutError           no hello from the server within handshake_timeout
    │   └── AuthenticationError             the client's authentication ended it (PROTOCOL.md §15)
    │       ├── AuthNotOfferedError         credentials given; the server does not offer auth (§15.2)
    │       ├── AuthRequiredError           no credentials given; the server requires them (§15.2)
    │       ├── AuthRefusedError            the server refused the credentials (§15.3)
    │       └── AuthTimeoutError            the server did not settle them in time (§15.3)
    │
    │   defined beside the code that raises them, all below this root:
    ├── net: RemoteStreamError, UnknownPublisherError (LookupError), ElementSizeError
    │        (ValueError); wire: the RemoteProtocolError kinds (FrameError, HandshakeError, ...)
    ├── observe: MetricsExpositionError (OSError), MetricsOffError (RuntimeError),
    │            StatsIntervalError (ValueError)
    ├── replay: TrimmedError (LookupError), StagingFullError, RemoteLogError (RuntimeError),
    │           LogRequestError (ValueError), LogLookupError (LookupError), LogEndedError (RuntimeError),
    │           ServerNotRunningError (RuntimeError), ServerAlreadyRunningError (RuntimeError),
    │           ReplayTimeoutError (TimeoutError), ServerUnavailableError (ConnectionError),
    │           AccessDeniedError (PermissionError)
    │           └── TLSHandshakeError        the TLS handshake failed (not the credentials)
    │               └── CertificateRefusedError  the server refused the client certificate (or none)
    ├── web: UnknownStaticFileError (KeyError), StaticFileMissingError (FileNotFoundError),
    │        PageNotRunningError (RuntimeError)
    ├── spark: ElementError (ValueError), JavaMissingError (RuntimeError), DemoQueryError (RuntimeError)
    ├── tck: TCKFailure (AssertionError), SkipTest (unittest.SkipTest), InjectedError
    └── cli: PublishersSpecError (ValueError), PublisherParameterError (ValueError); conformance:
             CaseFailure (AssertionError)

``except ReactiveStreamsError`` catches everything rstreams raises or signals; each class
keeps the stdlib base a caller would expect (tests/test_surface.py walks every class).

Two kinds of failure are kept apart: *you called me wrong* raises at once, locally
(``TypeError``/``ValueError``/``LocalProtocolError``); *something failed downstream of
a rule* travels through ``on_error`` or, when nobody can receive it (a Subscriber's
own ``on_next`` raised, rule 2.13), through :func:`report_unhandled`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = [
    "AlreadySubscribedError",
    "AuthNotOfferedError",
    "AuthRefusedError",
    "AuthRequiredError",
    "AuthTimeoutError",
    "AuthenticationError",
    "BlockingInLoopError",
    "ConnectionBrokenError",
    "HandshakeTimeoutError",
    "InvalidDemandError",
    "LocalProtocolError",
    "LoopClosedError",
    "MissingExtraError",
    "NoEventLoopError",
    "NoneElementError",
    "OverflowStrategyError",
    "ProtocolError",
    "ReactiveStreamsError",
    "RemoteProtocolError",
    "ResourceClosedError",
    "RuleViolationError",
    "TLSRefusedError",
    "report_unhandled",
    "set_unhandled_error_hook",
]

_log = logging.getLogger("rstreams")


class ReactiveStreamsError(Exception):
    """Root of rstreams' own exceptions."""


class InvalidDemandError(ReactiveStreamsError, ValueError):
    """``request(n)`` was called with a non-positive or non-integer ``n`` (rule 3.9).

    Delivered through ``on_error``, never raised from ``request`` (rule 3.16).
    """

    def __init__(self, n: object) -> None:
        self.n = n
        super().__init__(
            f"rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got {n!r}"
        )


class OverflowStrategyError(ReactiveStreamsError):
    """A producer that cannot be slowed down outran its buffer (the "error" strategy)."""


class AlreadySubscribedError(ReactiveStreamsError, RuntimeError):
    """A Publisher that serves one Subscriber was subscribed again: a group of ``group_by`` or a
    window, an async iterator given to ``from_async_iterable``, an iterator (consumed once, unlike
    a list or a range) given to ``from_iterable``. The second Subscriber gets ``on_subscribe``
    then this through ``on_error`` (rule 1.9); never raised from ``subscribe``."""


class NoEventLoopError(ReactiveStreamsError, RuntimeError):
    """An operator that runs on an asyncio event loop (a clock, an async iterable) was subscribed
    outside a running loop and given no ``loop=``. Signalled through ``on_error`` after
    ``on_subscribe`` (rule 1.9); the message names the operator and how to pass its loop."""


class LoopClosedError(ReactiveStreamsError, RuntimeError):
    """The event loop or executor a stream runs on was closed or shut down while the stream
    still needed it (a delivery could not be scheduled, a pulling task was cancelled), so the
    stream ends with this rather than waiting forever; ``__cause__`` is the loop's own error."""


class BlockingInLoopError(ReactiveStreamsError, RuntimeError):
    """A call that blocks until a stream ends (``SinkResult.result()``: ``flow.collect().result()``
    and the other sinks') was made on the thread of a running asyncio event loop before the
    stream ended: blocking there would stop the loop the stream may need. Raised at once, never
    signalled; the message names the call and the ``await`` to use instead."""


class RuleViolationError(ReactiveStreamsError, RuntimeError):
    """A Publisher or Subscription of this process broke a rule of the specification while
    rstreams served it (its message begins with the rule: ``rule 1.1:`` elements nobody
    requested, ``rule 3.16:`` a ``request`` that raised). Signalled through ``on_error`` to the
    Subscriber it was serving (over RS.io: the remote one, error code 1); never raised."""


class NoneElementError(ReactiveStreamsError, TypeError):
    """A source or an operator's function produced ``None``, which is never a stream element
    (rule 2.13): an iterable, an async iterable or an Observable yielded it, a ``map`` or ``scan``
    function returned it. Signalled through ``on_error`` after the elements before it, the
    upstream cancelled; the message names the operator. (``on_next(None)`` called directly is a
    plain ``TypeError``, raised on the caller's stack.)"""


class MissingExtraError(ReactiveStreamsError, ModuleNotFoundError):
    """A feature needs an optional dependency that is not installed: ``ws://`` and ``wss://``
    the websockets package, the ``MSGPACK`` codec msgpack, ``serve(metrics='host:port')``
    prometheus_client, ``from_observable`` and ``to_observable`` reactivex, ``import rstreams.spark``
    PySpark (4.2 or newer) and pyarrow. The message names the extra to install
    (``pip install 'rstreams[websockets]'``); ``name`` is the missing module and ``__cause__``
    the import's own error (none for a PySpark older than 4.2, which is there but too old)."""


class ProtocolError(ReactiveStreamsError):
    """An RS.io protocol violation. ``subscriber`` is the stream's id, ``None`` for the connection."""

    def __init__(self, message: str, *, subscriber: int | None = None) -> None:
        super().__init__(message)
        self.subscriber = subscriber


class LocalProtocolError(ProtocolError):
    """This side tried to do something the protocol forbids; raised at the call site."""


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol; reported (goodbye / on_error), never raised out of the core."""


class ResourceClosedError(ReactiveStreamsError):
    """The object was closed by this side and then used."""


class ConnectionBrokenError(ReactiveStreamsError):
    """The connection failed (peer went away, network error); ``__cause__`` says why.

    ``code`` is the goodbye's error code (PROTOCOL.md §19.2) when the peer said goodbye with
    one, or when this side found a violation with extension error-codes active; else ``None``.
    """

    def __init__(self, *args: object, code: int | None = None) -> None:
        super().__init__(*args)
        self.code = code


class TLSRefusedError(ConnectionBrokenError):
    """The server ended the TLS session before its first word: after the TLS handshake, before
    its RS.io hello on ``tls://``, before the HTTP response of the WebSocket handshake on
    ``wss://`` (the message ends with the same words on both schemes); or it reset the
    connection inside the TLS handshake (``__cause__`` is then a ``ConnectionResetError``).

    A server that requires a client certificate (mutual TLS) and got none it trusts does this
    on every connection: the first way with TLS 1.3, the second with TLS 1.2 when it is
    Python's asyncio (other TLS 1.2 servers send an alert, an ``ssl.SSLError``, which is not
    this error). A server killed at that moment does it once. A caller that retries tells the
    two apart by whether a second connection, made at once, ends the same way (the replay
    client does). ``__cause__`` says how the session ended, as for any
    :class:`ConnectionBrokenError`.
    """


class HandshakeTimeoutError(ConnectionBrokenError):
    """A client's peer said no RS.io hello within ``connect(handshake_timeout=...)`` (PROTOCOL.md
    §4.1): the transport came up, or a ``tls://``, ``ws://`` or ``wss://`` opening (TCP connect,
    TLS handshake, HTTP upgrade) was still under way, and the peer said nothing an RS.io server
    says first. The client said goodbye ``handshake timeout (no serverHello within N s)`` where
    the transport was up; ``connect`` raises it for an opening that took that long, and every
    stream of a connection whose serverHello did not come fails with it. The message names the
    URL, the seconds waited and that the peer may not be an RS.io server (an HTTP server waits
    for a request like this). Not retried by rstreams' own clients (the replay client,
    ``rstreams publish``): a server that accepted and stayed silent that long is no restart.

    A :class:`ConnectionBrokenError`, as before it had a type of its own, and not a
    ``TimeoutError``: that is an ``OSError`` too, and ``except TimeoutError`` around a caller's
    own deadline (``asyncio.timeout``) would take it for that deadline (as
    :class:`AuthTimeoutError`, the server's handshake timeout for credentials, is not either).
    ``__cause__`` is the opening's ``TimeoutError`` when the opening took too long, else ``None``.
    """


class AuthenticationError(ConnectionBrokenError):
    """A client's connection ended for a reason of extension auth (PROTOCOL.md §15.2, §15.3):
    one of the subclasses, each told by what the client knows (the credentials it was given,
    the extensions both hellos list, whether ``authenticated`` arrived) and the goodbye's code,
    never by the goodbye's words, which are the message as for any
    :class:`ConnectionBrokenError`. Raised on the client side only; ``__cause__`` is ``None``.
    """


class AuthNotOfferedError(AuthenticationError):
    """The client was given credentials and the server's hello does not list extension auth:
    the client sent no credentials and said goodbye itself (PROTOCOL.md §15.2)."""


class AuthRequiredError(AuthenticationError):
    """The client was given no credentials, the server's hello lists extension auth, and the
    server said goodbye with code 3 (unauthenticated) or without a code, as servers that require
    authentication do to a clientHello without auth (PROTOCOL.md §15.2; rstreams' servers and the
    other bindings send that goodbye without a code)."""


class AuthRefusedError(AuthenticationError):
    """The server said goodbye after the client's authenticate and before its ``authenticated``,
    with code 3 (unauthenticated), or without a code from a server that sends none (PROTOCOL.md
    §15.3: ``authentication failed``)."""


class AuthTimeoutError(AuthenticationError):
    """The server said goodbye with code 11 (timeout) after the client's authenticate and before
    its ``authenticated``: it did not settle the credentials within its handshake timeout
    (PROTOCOL.md §15.3)."""


UnhandledErrorHook = Callable[[BaseException, str], None]


def _log_unhandled(error: BaseException, context: str) -> None:
    _log.error("unhandled error in %s", context, exc_info=error)


_hook: UnhandledErrorHook = _log_unhandled


def set_unhandled_error_hook(hook: UnhandledErrorHook | None) -> UnhandledErrorHook:
    """Route errors nobody can receive to ``hook(error, context)``; returns the previous hook.

    ``None`` restores the default, which logs on the ``rstreams`` logger at ERROR level.
    Such errors are spec violations by user code, typically a Subscriber whose
    ``on_next`` raised: its subscription is cancelled and the error comes here (2.13).
    """
    global _hook
    previous = _hook
    _hook = _log_unhandled if hook is None else hook
    return previous


def report_unhandled(error: BaseException, context: str) -> None:
    """Hand an error that no Subscriber can receive to the runtime's error channel."""
    try:
        _hook(error, context)
    except Exception:  # a broken hook must not break the stream machinery
        _log.exception("the unhandled-error hook raised while reporting %r", error)
