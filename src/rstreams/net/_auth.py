"""The auth extension on asyncio (PROTOCOL.md §15): the server's gate and the client's part.

Theory of operation (client). A :class:`ClientAuth` holds the credentials given to
``connect(url, auth=...)``. When the serverHello arrives it sends ``authenticate`` (or, if
the server does not offer extension auth, says goodbye); ``authenticated`` from the server
sets :attr:`ClientAuth.authenticated`. Subscribes with their own credentials wait for the
hello in the subscription table (:mod:`rstreams.net._consuming`). When the connection ends for
a reason of auth, its streams end with a subclass of
:class:`~rstreams.errors.AuthenticationError`, told by that state and the goodbye's code
(:func:`goodbye_error`; :meth:`ClientAuth.refusal` for the client's own goodbye), never by the
goodbye's words.

Theory of operation (server). A :class:`ServerAuth` holds the application's hooks:
``authenticate(credentials) -> principal`` (sync or async; ``None`` or an exception
refuses) and ``authorize(principal, publisher_name) -> bool`` (sync). Each connection gets
an :class:`AuthGate`, through which every subscribe passes:

* every subscribe is appended to ``held`` (in arrival order) and the gate drains it while it
  is *open*: not waiting for the connection's authenticate (``pending``) and not waiting for
  an async check (``busy``). Draining checks one subscribe at a time, so an async check
  holds back the later subscribes and the order of answers is the order of arrival (§15.3);
* a held subscribe keeps collecting demand (request); a cancel marks it cancelled, and its
  acknowledging onComplete (§5.4) is sent when its turn comes, after ``authenticated``, in
  order with the answers to the other held subscribes (never when authentication fails: the
  goodbye ends it). The server's core leaves cancels unanswered for that
  (``acknowledge_cancels`` off); a cancel of a subscribe that is no longer held is
  acknowledged at once;
* the connection's authenticate settles ``pending``: accepted -> ``authenticated`` is sent,
  then the held subscribes are checked with its principal; refused -> goodbye.

Nothing secret is ever formatted: refusals name the publisher, hook failures are reported by
exception type only (an exception's text could quote the credentials).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rstreams.demand import add
from rstreams.errors import (
    AuthNotOfferedError,
    AuthRefusedError,
    AuthRequiredError,
    AuthTimeoutError,
    ConnectionBrokenError,
)
from rstreams.net._metadata import CURRENT, EMPTY, Metadata
from rstreams.net._outbox import Outbox
from rstreams.net._serving import ServingTable
from rstreams.wire import Connection as Core
from rstreams.wire import ConnectionState, ErrorCode, ExtensionError, Side
from rstreams.wire._auth import (
    Credentials,
    decode_credentials,
    decode_subscribe_credentials,
    encode_credentials,
)
from rstreams.wire.extensions import AUTH, AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS

__all__ = [
    "MESSAGE_TYPES",
    "AuthGate",
    "Authenticate",
    "Authorize",
    "ClientAuth",
    "ServerAuth",
    "goodbye_error",
]

MESSAGE_TYPES = (AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS)
"""The extension's message types: the pump routes them to the gate (server) or ClientAuth (client)."""

_log = logging.getLogger("rstreams.net.auth")

Authenticate = Callable[[Credentials], Any]
"""``authenticate(credentials) -> principal``, or an awaitable of it; ``None`` or raising refuses."""
Authorize = Callable[[Any, str], bool]
"""``authorize(principal, publisher_name) -> bool``; ``principal`` is ``None`` when unauthenticated."""


@dataclasses.dataclass(frozen=True, slots=True)
class ServerAuth:
    """A server's authentication settings (from ``serve(authenticate=..., authorize=...)``)."""

    authenticate: Authenticate | None
    authorize: Authorize | None
    required: bool


class _Held:
    __slots__ = ("cancelled", "demand", "metadata", "name")

    def __init__(self, name: str, demand: int, metadata: Metadata) -> None:
        self.name = name
        self.demand = demand
        self.metadata = metadata
        self.cancelled = False


class AuthGate:
    """One server connection's authentication state; see the module docstring."""

    def __init__(
        self, outbox: Outbox, serving: ServingTable, auth: ServerAuth, timeout: float | None
    ) -> None:
        self._outbox = outbox
        self._serving = serving
        self._auth = auth
        self._timeout = timeout  # seconds from the hello to settle the authenticate
        self._timer: asyncio.TimerHandle | None = None
        self.principal: Any = None
        """What ``authenticate`` returned for the connection's credentials (``None``: none)."""
        self.pending = False  # the clientHello listed auth; its authenticate is not settled yet
        self._authenticated = False
        self._busy = False  # an async check is running
        self._held: dict[int, _Held] = {}
        self._credentials: dict[int, Credentials] = {}  # per-subscribe credentials, by subscriber id
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_settled: list[Callable[[], object]] = []
        """Called once the connection's authenticate is accepted (messages held meanwhile, §20.4)."""
        outbox.core.acknowledge_cancels = False  # a held subscribe's cancel waits its turn (§15.3)

    # -- the hello -----------------------------------------------------------------------
    def hello(self, offered: bool) -> str | None:
        """The clientHello arrived; ``offered``: both hellos list auth. Returns a goodbye reason or None."""
        if offered:
            self.pending = True
            if self._timeout is not None:
                self._timer = self._outbox.loop.call_later(self._timeout, self._expired)
            return None
        if self._auth.required:
            return (
                "authentication required: this server needs extension auth (id 2), which the "
                "clientHello does not list (PROTOCOL.md §15.2)"
            )
        return None

    # -- subscribes ---------------------------------------------------------------------
    def subscribe(self, name: str, sid: int, demand: int, metadata: Metadata = EMPTY) -> None:
        self._held[sid] = _Held(name, demand, metadata)
        self._drain()

    def request(self, sid: int, demand: int) -> bool:
        """Add demand to a held subscribe; ``False`` if ``sid`` is not held."""
        held = self._held.get(sid)
        if held is None:
            return False
        held.demand = add(held.demand, demand)
        return True

    def cancel(self, sid: int) -> None:
        """The client cancelled ``sid``: a held subscribe is acknowledged in its turn, any other
        subscription (served, or ended meanwhile) at once."""
        self._credentials.pop(sid, None)
        held = self._held.get(sid)
        if held is not None:
            held.cancelled = True
        else:
            self._acknowledge(sid)

    def _acknowledge(self, sid: int) -> None:
        self._outbox.core.acknowledge_cancel(sid)
        self._outbox.mark_dirty()

    def _expired(self) -> None:
        self._timer = None
        if self.pending:
            self._outbox.close_now(
                f"authentication timeout (not settled within {self._timeout:g} s of the hello) "
                "(PROTOCOL.md §15.3)",
                ErrorCode.TIMEOUT,
            )

    def _drain(self) -> None:
        while self._held and not self.pending and not self._busy and self._outbox.ended is None:
            sid = next(iter(self._held))
            credentials = self._credentials.pop(sid, None)
            if self._held[sid].cancelled:
                del self._held[sid]
                self._acknowledge(sid)
            elif credentials is None:
                self._decide(sid, self.principal, refused=False)
            else:
                self._check(credentials, self._decider(sid))

    def _decider(self, sid: int) -> Callable[[Any], None]:
        def decide(principal: Any) -> None:
            self._decide(sid, principal, refused=principal is None)

        return decide

    def _decide(self, sid: int, principal: Any, *, refused: bool) -> None:
        held = self._held.pop(sid, None)
        if held is None or self._outbox.ended is not None:
            return
        if held.cancelled:  # cancelled while its credentials were checked
            self._acknowledge(sid)
            return
        name = held.name
        path = name.partition("?")[0]  # quoted as PATH is in §5.5, the same in every binding
        if refused or (principal is None and self._auth.required):
            self._serving.refuse(
                sid,
                f"unauthenticated: subscribe to '{path}' needs valid credentials (PROTOCOL.md §15.4)",
                ErrorCode.UNAUTHENTICATED,
                name,
            )
            return
        authorize = self._auth.authorize
        if authorize is not None:
            try:
                token = CURRENT.set(held.metadata)  # subscribe_metadata() in the hook (§18)
                try:
                    allowed = authorize(principal, name) is True
                finally:
                    CURRENT.reset(token)
            except Exception as error:
                _log.error(
                    "the authorize hook raised %s; subscribe to %r refused", type(error).__name__, name
                )
                allowed = False
            if not allowed:
                self._serving.refuse(
                    sid,
                    f"unauthorized: subscribe to '{path}' is not allowed for this principal "
                    "(PROTOCOL.md §15.4)",
                    ErrorCode.UNAUTHORIZED,
                    name,
                )
                return
        self._serving.subscribe(name, sid, held.demand, held.metadata)
        self._outbox.mark_dirty()

    def check_message(self, name: str) -> str | None:
        """Why a message to handler ``name`` is refused (extension messages, §20.4), or ``None``:
        the same principal and ``authorize`` hook as a subscribe."""
        principal = self.principal
        if principal is None and self._auth.required:
            return "unauthenticated"
        authorize = self._auth.authorize
        if authorize is None:
            return None
        try:
            allowed = authorize(principal, name) is True
        except Exception as error:
            _log.error("the authorize hook raised %s; message to %r refused", type(error).__name__, name)
            allowed = False
        return None if allowed else "unauthorized"

    # -- extension messages ---------------------------------------------------------------
    def received(self, message_type: int, payload: bytes) -> None:
        """An auth message from the client (the pump routes them here)."""
        try:
            if message_type == AUTH_AUTHENTICATE:
                self._authenticate(decode_credentials(payload))
            elif message_type == AUTH_SUBSCRIBE_CREDENTIALS:
                sid, credentials = decode_subscribe_credentials(payload)
                if (
                    sid not in self._credentials
                    and len(self._credentials) >= self._outbox.core.config.max_subscriptions
                ):
                    self._outbox.close_now(
                        "more subscribeCredentials held than max_subscriptions (PROTOCOL.md §15.4)",
                        ErrorCode.LIMIT_EXCEEDED,
                    )
                    return
                self._credentials[sid] = credentials
            else:
                raise ExtensionError("authenticated (0x85) sent to a server", section="15.5")
        except ExtensionError as error:
            self._outbox.close_now(error.reason, ErrorCode.PROTOCOL_VIOLATION)

    def _authenticate(self, credentials: Credentials) -> None:
        if not self.pending or self._authenticated:
            raise ExtensionError("authenticate sent twice", section="15.5")
        self._authenticated = True
        self._check(credentials, self._settled)

    def _settled(self, principal: Any) -> None:
        timer, self._timer = self._timer, None  # the timer bounds the hook too, not only the client
        if timer is not None:
            timer.cancel()
        if principal is None:
            self._held.clear()
            self._outbox.close_now("authentication failed (PROTOCOL.md §15.3)", ErrorCode.UNAUTHENTICATED)
            return
        if self._outbox.core.state is not ConnectionState.OPEN:
            return  # a violation later in the same read closed it: nothing may be sent
        self.principal = principal
        self.pending = False
        self._outbox.send_extension(AUTH_OK, b"")
        self._drain()
        for call in self.on_settled:
            call()

    # -- running the hook -------------------------------------------------------------------
    def _check(self, credentials: Credentials, then: Callable[[Any], None]) -> None:
        """Run ``authenticate(credentials)``; call ``then(principal or None)``, now or when it is done."""
        hook = self._auth.authenticate
        if hook is None:
            then(None)
            return
        try:
            result = hook(credentials)
        except Exception as error:
            _log.error("the authenticate hook raised %s; credentials refused", type(error).__name__)
            then(None)
            return
        if not inspect.isawaitable(result):
            then(result)
            return
        self._busy = True
        task = asyncio.get_running_loop().create_task(self._await(result, then))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if inspect.iscoroutine(result):  # a task cancelled before it ran never awaits it: close it
            coroutine = result
            task.add_done_callback(lambda _: coroutine.close())

    async def _await(self, result: Awaitable[Any], then: Callable[[Any], None]) -> None:
        try:
            principal = await result
        except Exception as error:
            _log.error("the authenticate hook raised %s; credentials refused", type(error).__name__)
            principal = None
        finally:
            self._busy = False
        if self._outbox.ended is not None:
            return
        then(principal)
        self._drain()
        self._outbox.mark_dirty()

    def close(self) -> None:
        """The connection ended: drop what is held, stop running checks."""
        self._held.clear()
        self._credentials.clear()
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        for task in self._tasks:
            task.cancel()


class ClientAuth:
    """A client connection's credentials and whether the server accepted them (§15.2, §15.3)."""

    __slots__ = ("_outbox", "authenticated", "credentials", "refused")

    def __init__(self, outbox: Outbox, credentials: Credentials) -> None:
        self._outbox = outbox
        self.credentials = credentials
        self.authenticated = False
        """Whether the server answered ``authenticated`` (§15.3)."""
        self.refused = False
        """Whether this side said goodbye because the server does not offer extension auth (§15.2)."""

    def hello(self) -> bool:
        """The serverHello arrived: send ``authenticate``; ``False`` if the server cannot take it
        (then the connection is closing, and its streams end with :meth:`refusal`)."""
        if AUTH.id not in self._outbox.core.extensions:
            self.refused = True
            self._outbox.close_now(
                "authentication not possible: the server does not offer extension auth (id 2) "
                "(PROTOCOL.md §15.2)"
            )
            return False
        self._outbox.send_extension(AUTH_AUTHENTICATE, encode_credentials(self.credentials))
        return True

    def refusal(self, message: str) -> AuthNotOfferedError | None:
        """What the streams end with when this side says goodbye with ``message``: an
        :class:`~rstreams.errors.AuthNotOfferedError` when :meth:`hello` refused the server,
        else ``None`` (the usual :class:`~rstreams.errors.ResourceClosedError`)."""
        return AuthNotOfferedError(message) if self.refused else None

    def received(self, message_type: int, payload: bytes) -> None:
        """An auth message from the server (the pump routes them here)."""
        if message_type == AUTH_OK and not self.authenticated and not payload:
            self.authenticated = True
            return
        if message_type != AUTH_OK:
            reason = (
                f"message type 0x{message_type:02x}, which only a client sends, received by the "
                "client (PROTOCOL.md §15.5)"
            )
        elif payload:
            reason = (
                f"authenticated (0x85) received by the client with a payload of {len(payload)} "
                "byte(s); its payload is empty (PROTOCOL.md §15.1, §15.5)"
            )
        else:
            reason = "authenticated (0x85) without an authenticate received by the client (PROTOCOL.md §15.5)"
        self._outbox.close_now(reason, ErrorCode.PROTOCOL_VIOLATION)


def goodbye_error(
    core: Core, client_auth: ClientAuth | None, message: str, code: int | None
) -> ConnectionBrokenError:
    """The error a connection's streams end with when the peer said goodbye first (``message``
    says so; ``code`` is the goodbye's, PROTOCOL.md §19.2): on a client, a subclass of
    :class:`~rstreams.errors.AuthenticationError` when the goodbye ended its authentication,
    told by what the client knows (``client_auth``: its part when it was given credentials)
    and the code, since the words of §15.2's and §15.3's goodbyes are the peer's to choose:

    * this client's hello does not list auth (it has no credentials), the server's does, code 3
      or none: the server requires authentication (§15.2),
      :class:`~rstreams.errors.AuthRequiredError`;
    * authenticate sent, ``authenticated`` not received, code 3 or none (a server without
      extension error-codes sends none): refused (§15.3),
      :class:`~rstreams.errors.AuthRefusedError`; code 11: not settled in time (§15.3),
      :class:`~rstreams.errors.AuthTimeoutError`.

    Any other goodbye is a plain :class:`~rstreams.errors.ConnectionBrokenError`.
    """
    hello = core.peer_hello
    kind: type[ConnectionBrokenError] = ConnectionBrokenError
    if core.side is not Side.CLIENT or hello is None:
        pass
    elif AUTH.id not in core.config.extensions:
        if AUTH.id in hello.extensions and code in (None, ErrorCode.UNAUTHENTICATED):
            kind = AuthRequiredError
    elif client_auth is not None and AUTH.id in core.extensions and not client_auth.authenticated:
        if code is None or code == ErrorCode.UNAUTHENTICATED:
            kind = AuthRefusedError
        elif code == ErrorCode.TIMEOUT:
            kind = AuthTimeoutError
    return kind(message, code=code)
