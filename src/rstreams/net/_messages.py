"""The messages extension on asyncio (PROTOCOL.md §20): one-way messages to named handlers.

Theory of operation. Each connection has one :class:`Messages` piece, both ends alike:

* receiving: once the peer's hello shows the extension active, it grants the peer
  ``max_messages_in_flight`` credits (one ``messageCredit``). Every message takes one; a
  message beyond the credit is a connection error (goodbye citing §20.3). The handler is
  found like a publisher (exact names, then ``{field}`` patterns, :class:`NameTable`) and
  called with a :class:`Message` inside the read; a handler that returns an awaitable
  runs as a task. The credit goes back (one ``messageCredit`` per loop turn, whatever
  number finished) when the handler has returned, or its awaitable has finished, or the
  message was dropped: unknown handler, refused by ``authorize``, a query key given twice
  (§5.5), handler raised. So a
  slow async handler holds its credit and the peer's next sends wait: at most
  ``max_messages_in_flight`` messages are ever held, never a queue.
* sending: :meth:`Messages.send` takes one credit and writes the message. Without credit
  it waits in line (``wait=True``, first come first served; a credit granted is reserved
  for the waiter it wakes) or raises :class:`MessageCreditError` (``wait=False``). Before
  the peer's hello it waits for the hello; after a hello without the extension it raises.
* authorization (a server with ``authorize``/``authenticate``): a message is checked like
  a subscribe, ``authorize(principal, name)``; messages that arrive while the client's
  authenticate is being checked wait (their credit held) until it is settled.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rstreams.errors import ConnectionBrokenError, LocalProtocolError, ReactiveStreamsError, report_unhandled
from rstreams.net._auth import AuthGate
from rstreams.net._outbox import Outbox
from rstreams.net._routes import NameTable
from rstreams.wire import ConnectionState, ErrorCode, ExtensionError
from rstreams.wire._messages import (
    MESSAGE,
    MESSAGE_CREDIT,
    Credit,
    decode_credit,
    decode_message,
    encode_credit,
    encode_message,
)
from rstreams.wire.extensions import MESSAGES

__all__ = ["MESSAGE_TYPES", "Handler", "Message", "MessageCreditError", "Messages", "check_handlers"]

MESSAGE_TYPES = tuple(sorted(MESSAGES.message_types))
"""The extension's message types, the reserved ones too: the pump routes them to :meth:`Messages.received`."""

_log = logging.getLogger("rstreams.net.messages")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A message received by a handler: ``serve(..., handlers={"events/{kind}": handler})``."""

    name: str
    """The name it was sent to, as sent (``events/click?x=1``)."""
    params: dict[str, str]
    """The query parameters and the fields the handler's pattern matched (``{"kind": "click", "x": "1"}``)."""
    payload: bytes
    """The body, as the sender gave it."""


Handler = Callable[[Message], Any]
"""``handler(message)``; may return an awaitable, which then holds the message's credit until done."""


class MessageCreditError(ReactiveStreamsError):
    """``conn.send(..., wait=False)`` found no message credit: the peer's handlers still hold
    every message it allowed (PROTOCOL.md §20.3). Retry later, or send with ``wait=True``."""


def check_handlers(handlers: Mapping[str, Handler] | None) -> NameTable[Handler]:
    """The handler table for ``handlers=``; ``TypeError`` for a key or value of the wrong kind."""
    if handlers is None:
        return NameTable({})
    if not isinstance(handlers, Mapping):
        raise TypeError(f"handlers must be a mapping of names or patterns to callables, got {handlers!r}")
    for key, handler in handlers.items():
        if not callable(handler):
            raise TypeError(f"handler {key!r} must be callable (handler(message)), got {handler!r}")
    return NameTable(handlers)


class Messages:
    """One connection's messages, sent and received; see the module docstring."""

    def __init__(self, outbox: Outbox, handlers: NameTable[Handler], gate: AuthGate | None) -> None:
        self._outbox = outbox
        self._handlers = handlers
        self._gate = gate
        self._window = outbox.core.config.max_messages_in_flight
        self._peer_may_send = Credit()  # what we granted and the peer has not used
        self._returned = 0  # credits freed since the last messageCredit
        self._return_scheduled = False
        self._held: list[tuple[str, bytes]] = []  # received while the client's authenticate is checked
        self._tasks: set[asyncio.Task[None]] = set()
        self._may_send = Credit()  # what the peer granted us
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._hello = False
        if gate is not None:
            gate.on_settled.append(self._release_held)

    @property
    def active(self) -> bool:
        return MESSAGES.id in self._outbox.core.extensions

    # -- the hello and the end --------------------------------------------------------------
    def hello(self) -> None:
        """The peer's hello arrived: grant credit if the extension is active; wake the senders."""
        self._hello = True
        if self.active:
            if self._outbox.core.state is not ConnectionState.OPEN:
                return  # a violation later in the same read closed it
            self._peer_may_send.grant(self._window)
            self._outbox.send_extension(MESSAGE_CREDIT, encode_credit(self._window))
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(self._not_active())

    def close(self, error: BaseException) -> None:
        """The connection ended: senders waiting for credit fail, running handlers are cancelled."""
        self._held.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(self._broken(error))
        for task in self._tasks:
            task.cancel()

    # -- sending ----------------------------------------------------------------------------
    async def send(self, name: str, payload: bytes | bytearray | memoryview, wait: bool) -> None:
        """Send ``payload`` to the peer's handler ``name``; see :meth:`Connection.send`."""
        if not isinstance(name, str):
            raise TypeError(f"handler names are str such as 'events/click', got {name!r}")
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise TypeError(f"a message's payload is bytes, got {type(payload).__name__}")
        encoded = encode_message(name, bytes(payload))
        limit = self._outbox.core.config.max_string_length
        if len(encoded) > limit:
            raise ValueError(
                f"message of {len(encoded)} bytes (name and payload) above max_string_length = {limit}: "
                "an extension message's payload is limited by it (PROTOCOL.md §20.2)"
            )
        outbox = self._outbox
        if outbox.ended is not None:
            raise self._broken(outbox.ended)
        if self._hello and not self.active:
            raise self._not_active()
        if not self._waiters and self._may_send.take():
            self._write(encoded)
            return
        if not wait:
            why = "the peer's handlers hold all of it" if self._hello else "its hello has not arrived"
            raise MessageCreditError(
                f"no message credit to send to {name!r}: {why} (PROTOCOL.md §20.3); "
                "send(..., wait=True) waits for it"
            )
        waiter: asyncio.Future[None] = outbox.loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # resolved with a credit reserved for us
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._may_send.grant(1)  # woken, then cancelled before sending: pass the credit on
                self._wake()
            raise
        self._write(encoded)

    def _write(self, encoded: bytes) -> None:
        outbox = self._outbox
        if outbox.ended is not None or outbox.core.state is not ConnectionState.OPEN:
            raise self._broken(outbox.ended)
        outbox.send_extension(MESSAGE, encoded)

    def _wake(self) -> None:
        """Hand credits to waiting senders, in order, each one reserved."""
        waiters = self._waiters
        while waiters and self._may_send.available:
            waiter = waiters.popleft()
            if not waiter.done() and self._may_send.take():
                waiter.set_result(None)

    # -- receiving --------------------------------------------------------------------------
    def received(self, message_type: int, payload: bytes) -> None:
        """A message or messageCredit from the peer (the pump routes them here)."""
        try:
            if message_type == MESSAGE_CREDIT:
                self._may_send.grant(decode_credit(payload))
                self._wake()
                return
            if message_type != MESSAGE:
                raise ExtensionError(f"message type 0x{message_type:02x} is reserved", section="20.2")
            if not self._peer_may_send.take():
                raise ExtensionError(
                    f"message beyond the granted message credit ({self._window} in flight at most)",
                    section="20.3",
                )
            name, body = decode_message(payload)
        except ExtensionError as error:
            self._outbox.close_now(error.reason, ErrorCode.PROTOCOL_VIOLATION)
            return
        gate = self._gate
        if gate is not None and gate.pending:
            self._held.append((name, body))  # bounded: each holds one of our credits
            return
        self._deliver(name, body)

    def _release_held(self) -> None:
        held, self._held = self._held, []
        for name, body in held:
            self._deliver(name, body)

    def _deliver(self, name: str, body: bytes) -> None:
        if self._outbox.ended is not None:
            return
        refused = self._refused(name)
        if refused is not None:
            _log.warning("message to '%s' dropped: %s (PROTOCOL.md §20.4)", name, refused)
            self._give_back()
            return
        found = self._handlers.lookup(name)
        if found is None:
            _log.warning("message to '%s' dropped: no such handler (PROTOCOL.md §20.4)", name)
            self._give_back()
            return
        handler, params, fault = found
        if fault is not None:  # a malformed name (§5.5): dropped, not half understood
            _log.warning("message to '%s' dropped: its name %s (PROTOCOL.md §5.5)", name, fault)
            self._give_back()
            return
        try:
            result = handler(Message(name=name, params=params, payload=body))
        except Exception as error:
            report_unhandled(error, f"the message handler for {name!r}")
            self._give_back()
            return
        if not inspect.isawaitable(result):
            self._give_back()
            return
        task = self._outbox.loop.create_task(self._run(name, result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, name: str, result: Awaitable[Any]) -> None:
        try:
            await result
        except asyncio.CancelledError:
            return  # the connection ended
        except Exception as error:
            report_unhandled(error, f"the message handler for {name!r}")
        self._give_back()

    def _refused(self, name: str) -> str | None:
        """Why the server's auth refuses this message, or ``None``."""
        gate = self._gate
        if gate is None:
            return None
        return gate.check_message(name)

    def _give_back(self) -> None:
        """One message's credit is free: grant it again with this turn's messageCredit."""
        self._returned += 1
        if not self._return_scheduled:
            self._return_scheduled = True
            self._outbox.loop.call_soon(self._grant_returned)

    def _grant_returned(self) -> None:
        self._return_scheduled = False
        count, self._returned = self._returned, 0
        if count and self._outbox.ended is None and self._outbox.core.state is ConnectionState.OPEN:
            self._peer_may_send.grant(count)
            self._outbox.send_extension(MESSAGE_CREDIT, encode_credit(count))

    # -- errors ------------------------------------------------------------------------------
    @staticmethod
    def _not_active() -> LocalProtocolError:
        return LocalProtocolError(
            f"can't send a message: the peer does not offer extension {MESSAGES} "
            "(PROTOCOL.md §20.1); its hello does not list it"
        )

    @staticmethod
    def _broken(cause: BaseException | None) -> ConnectionBrokenError:
        error = ConnectionBrokenError("the RS.io connection is closed: the message was not sent")
        error.__cause__ = cause
        return error
