"""The pump: one connection's transport handler, a short loop between the transport and the core.

Theory of operation. The :class:`Pump` is what the transport calls
(:class:`~rstreams.net._transport.TransportHandler`); it owns the connection's pieces and
joins them through the :class:`~rstreams.net._outbox.Outbox`:

* bytes in: ``data_received`` feeds the core and routes each event it yields through a
  table (event class -> the piece's method): elements to the subscription table, which
  hands them straight to the local Subscriber inside this callback (no queue, no task per
  element); subscribes, requests and cancels to the serving table; the end of the
  conversation to closing; extension messages to their handlers.
* bytes out: whatever makes the core produce output only marks the outbox dirty; one
  ``call_soon``-scheduled :meth:`Pump.flush` per loop turn sends the coalesced requests,
  refills the local publishers, hands their elements to the core and writes everything with
  one ``writelines``. That is the write coalescing the machine's syscall cost demands. A
  read's output goes out at the end of that read, not a turn later.
* demand to production: the refill asks local publishers for more only while the transport
  is writable, and only for the room left under the high-water mark (bytes unsent in the
  transport plus bytes produced this turn); ``pause_writing``/``resume_writing`` flip the
  writable state. A slow or non-reading peer therefore stops production, whatever demand it
  signalled. (One element asked for alone, on an open stream, is pulled in the read that
  asked for it, once a read and while writable: see :mod:`rstreams.net._serving`.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rstreams.errors import report_unhandled
from rstreams.net._auth import MESSAGE_TYPES as AUTH_MESSAGES
from rstreams.net._auth import AuthGate, ClientAuth, ServerAuth
from rstreams.net._channels import MESSAGE_TYPES as CHANNEL_MESSAGES
from rstreams.net._channels import ChannelFactory, Channels, check_channels
from rstreams.net._closing import Closing
from rstreams.net._codec import Codec
from rstreams.net._consuming import SubscriptionTable
from rstreams.net._intake import (
    DEFAULT_UNREAD_TIMEOUT,
    MAX_UNSENT,
    READ_TURN,
    UNREAD_MARK,
    UNREAD_POLL,
    UNREAD_POLL_MAX,
    Backlog,
    socket_ended,
    socket_unsent,
)
from rstreams.net._keepalive import Keepalive, check_interval
from rstreams.net._messages import MESSAGE_TYPES, Handler, Messages, check_handlers
from rstreams.net._metadata import EMPTY, Metadata
from rstreams.net._outbox import WRITE_LIMIT, Outbox
from rstreams.net._routes import Offer
from rstreams.net._serving import ServingTable
from rstreams.net._transport import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, Transport, check_water_marks
from rstreams.wire import (
    Answer,
    Cancel,
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    ErrorCode,
    Event,
    ExtensionReceived,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextBatch,
    OnNextPacked,
    OnSubscribe,
    Qualifier,
    Request,
    ServerHello,
    Side,
    StreamError,
    Subscribe,
)
from rstreams.wire import Connection as Core
from rstreams.wire._auth import Credentials
from rstreams.wire._channels import CHANNEL
from rstreams.wire.extensions import (
    AUTH,
    CHANNELS,
    CONTENT_TYPE,
    CONTENT_TYPES,
    ERROR_CODES,
    INPUT_PARTS,
    KEEPALIVE,
    MESSAGES,
    METADATA,
)

if TYPE_CHECKING:
    from rstreams.observe import ConnectionObserver

__all__ = ["Pump"]

_FEW = 16
"""Events from a part of a read that end the loop turn (as does any answer the core wrote
itself: pongs, refusals); below it, the next part is four times as long, so a read of large
elements is fed in a few big parts in one turn."""


_ignore: Callable[[Event], object] = id
"""The route of OnSubscribe and Goodbye, which need nothing here (the core keeps their state):
a builtin that does nothing with its argument, so that routing one costs no Python frame."""


class Pump:
    """One connection's transport handler and the owner of its pieces; see the module docstring."""

    def __init__(
        self,
        *,
        client: bool,
        offer: Offer | None = None,
        codec: Codec[Any] | None = None,
        config: ConnectionConfig | None = None,
        high_water: int = DEFAULT_HIGH_WATER,
        low_water: int = DEFAULT_LOW_WATER,
        on_made: Callable[[], object] | None = None,
        handshake_timeout: float | None = None,
        keepalive: float | None = None,
        idle_timeout: float | None = None,
        unread_timeout: float | None = DEFAULT_UNREAD_TIMEOUT,
        credentials: Credentials | None = None,
        server_auth: ServerAuth | None = None,
        handlers: Mapping[str, Handler] | None = None,
        channels: Mapping[str, ChannelFactory] | None = None,
        describe: Callable[[], str] = lambda: "<rstreams.net.Connection>",
        observer: ConnectionObserver | None = None,
    ) -> None:
        check_water_marks(high_water, low_water)
        check_interval("keepalive", keepalive)
        check_interval("idle_timeout", idle_timeout)
        check_interval("unread_timeout", unread_timeout)
        # Extensions (PROTOCOL.md §14, §15): keepalive is always listed (the core answers pings;
        # ``keepalive`` only decides whether we send them); auth when there is something to do.
        # Content types, metadata, error codes, messages, channels and split channel input
        # (§17-§21) are always offered, unless the config disables them.
        ids = {KEEPALIVE.id, MESSAGES.id, CONTENT_TYPES.id, METADATA.id, ERROR_CODES.id, CHANNELS.id}
        ids.add(INPUT_PARTS.id)
        if credentials is not None or (server_auth is not None and server_auth.authenticate is not None):
            ids.add(AUTH.id)
        config = config or ConnectionConfig()
        if not ids <= config.extensions or config.disabled_extensions & config.extensions:
            wanted = (config.extensions | ids) - config.disabled_extensions
            config = dataclasses.replace(config, extensions=frozenset(wanted))
        self.outbox = outbox = Outbox(
            Core(Side.CLIENT if client else Side.SERVER, config, batch_on_next=True, answers=True)
        )
        outbox.install_flush(self.flush, self._check_backlog)
        outbox.observer = observer
        if observer is not None:
            observer.transferred = self._transferred
        self._mark = outbox.ledger.mark = min(low_water, UNREAD_MARK)  # unsent replies (_intake)
        self._clock: Callable[[], float] = outbox.loop.time
        self._high = high_water
        self._low = low_water
        # Reading (rstreams.net._intake): the rest of a read left for the next turn, and why
        # reading from the transport is paused.
        self._held: memoryview | None = None
        self._held_eof = False  # the peer's end of input came while a read was held
        self._backed_up = False  # our replies to the peer back up: not reading it
        self._flooding = False  # a read left a rest held: later reads wait for a turn too
        self._held_read = False  # what is held is a whole read (not the rest of one)
        self._backlog = Backlog.of(outbox.loop)  # the loop's held reads, told when others are busy
        self._unread_timeout = unread_timeout
        self._unread_timer: Any = None
        self._look: Any = None  # while not reading for what the socket holds: the next look at it
        self._look_after = UNREAD_POLL  # seconds until that look (doubling)
        self._on_made = on_made  # called once the transport is up (a TLS handshake succeeded)
        self._task: object = None  # a transport's own task (WebSocket), kept referenced
        self.closing = Closing(outbox, handshake_timeout)
        self.serving = ServingTable(outbox, offer, codec)
        self.subscriptions = SubscriptionTable(outbox, describe)
        self.keepalive = (
            Keepalive(outbox, keepalive, idle_timeout)
            if keepalive is not None or idle_timeout is not None
            else None
        )
        self.gate = (
            AuthGate(outbox, self.serving, server_auth, handshake_timeout)
            if server_auth is not None and not client
            else None
        )
        self.client_auth = ClientAuth(outbox, credentials) if credentials is not None and client else None
        self.extension_handlers: dict[int, Callable[[int, bytes], object]] = {}
        """Extension message type -> ``handler(type, payload)``, called for each one received."""
        auth = self.gate or self.client_auth
        if auth is not None:
            for message_type in AUTH_MESSAGES:
                self.extension_handlers[message_type] = auth.received
        self.messages = Messages(outbox, check_handlers(handlers), self.gate)
        for message_type in MESSAGE_TYPES:
            self.extension_handlers[message_type] = self.messages.received
        self.channels = Channels(outbox, self.subscriptions, self.serving, check_channels(channels), codec)
        for message_type in CHANNEL_MESSAGES:
            self.extension_handlers[message_type] = self.channels.received
        self._after_dispatch: list[Callable[[], object]] = []  # run once the current read is handled
        subscriptions = self.subscriptions
        self._routes: dict[type, Callable[[Any], object]] = {
            OnNextBatch: subscriptions.on_next_batch,
            Answer: subscriptions.on_answer,
            OnNext: subscriptions.on_next,
            OnNextPacked: subscriptions.on_next_packed,
            OnComplete: subscriptions.on_complete,
            OnError: subscriptions.on_error,
            Subscribe: self.serving.received if self.gate is None else self._subscribe,
            Request: self.serving.request if self.gate is None else self._request,
            Cancel: self._cancel,
            StreamError: self._stream_error,
            ConnectionClosed: self._conversation_over,
            ExtensionReceived: self._extension,
            Qualifier: self._qualifier,
            Metadata: self.serving.held_metadata.append,  # for the Subscribe next (a C call: no frame)
            ClientHello: self._hello,
            ServerHello: self._hello,
            OnSubscribe: _ignore,
            Goodbye: _ignore,
        }
        self.closing.on_end.append(self._end)

    def keep(self, task: object) -> None:
        """Hold a reference to the transport's task so that it is not garbage-collected."""
        self._task = task

    def defer(self, call: Callable[[], object]) -> None:
        """Run ``call()`` once the current read's events are handled (or on the next turn)."""
        if self.outbox.reading:
            self._after_dispatch.append(call)
        else:
            self.outbox.loop.call_soon(call)

    # -- TransportHandler ------------------------------------------------------------------
    def connection_made(self, transport: Transport) -> None:
        outbox = self.outbox
        outbox.transport = transport
        outbox.heard_at = outbox.loop.time()
        self.closing.start()
        if self.keepalive is not None:
            self.keepalive.start()
        on_made, self._on_made = self._on_made, None
        if on_made is not None:
            try:
                on_made()
            except Exception as error:
                report_unhandled(error, "a connection's on_connection callback")
        outbox.flush_now()  # our hello (the core queued it when it was made), and whatever on_made sent

    def data_received(self, data: memoryview) -> None:
        # The conversation is over only once the streams ended (closing sets ``ended`` first):
        # a plain field on the hot path, the call only then.
        outbox = self.outbox
        if outbox.ended is not None and self.closing.discarding(len(data)):
            return  # after the goodbyes: nothing more is read (a lingering close discards it, bounded)
        held = self._held
        if held is not None:  # a read already under way when reading paused (WebSocket)
            self._held = memoryview(held.tobytes() + data.tobytes())
            return
        if self._flooding:  # its reads outrun its turns: every read waits for a turn (_hold)
            self._hold(data)
            self._held_read = True  # a whole read: see _go_on
            return
        self._backlog.busy = True  # a read handled as it came: the backlog's parts wait (_intake)
        # The first part of the read, READ_TURN bytes of small messages or large elements whole (all
        # of most reads), with _part, _dispatch and _answer inlined: a read costs one Python call
        # here, not four. A read of many small messages goes on in _further. The keepalive's
        # clock is read once, here.
        if self.keepalive is not None:
            outbox.heard_at = self._clock()
        outbox.in_read = True
        core = outbox.core
        outbox.wrote_through = False
        size = rest = len(data)
        try:
            events = core.receive(data, READ_TURN) if size > READ_TURN else core.receive(data)
            observer = outbox.observer
            if observer is not None:  # counting: a plain field, read when scraped
                taken = size if size <= READ_TURN else core.taken
                outbox.bytes_read += taken
                if observer.frames is not None:
                    observer.read(data if taken == size else data[:taken])
            outbox.reading = True
            try:
                routes = self._routes
                for event in events:
                    routes[event.__class__](event)
                if self._after_dispatch:
                    self._run_after_dispatch()
            finally:
                outbox.reading = False
            if size > READ_TURN and core.taken < size:  # many messages, perhaps: a part at a time
                rest = self._further(data, core.taken, len(events), READ_TURN)  # (fairness, _intake)
        finally:  # what the read caused is written now: nothing else schedules it (mark_dirty)
            try:  # (the peer's requests leave streams waiting for a refill, without mark_dirty)
                output = core.output  # core.has_data_to_send, inlined: the core's own answers
                serving = self.serving
                if (
                    outbox.flush_scheduled
                    or serving.refills
                    or output.buf
                    or output.chunks
                    or output.backlogs
                ):
                    transport = outbox.transport
                    if outbox.flush_handle is not None:
                        outbox.flush_now()
                    elif (
                        not output.buf
                        or output.chunks
                        or output.backlogs
                        or serving.refills
                        or serving.packs
                        or self.subscriptions.requests
                        or transport is None
                    ):
                        self.flush()
                    else:  # only frames the read made (an answer, an element): flush's steps that apply
                        outbox.flush_scheduled = False
                        if outbox.write_buffered(transport) and outbox.writable:
                            outbox.mark_dirty()  # (a goodbye of the backlog check)
            finally:
                outbox.in_read = False
        if rest < size:
            self._hold(data[rest:])
            self._held_read = False
            self._flooding = True

    def _consume(self, data: memoryview, first: int) -> bool:
        """Handle the first parts of a held read that may hold many small messages (fairness,
        :mod:`rstreams.net._intake`); hold the rest for a later turn, not reading meanwhile.
        Returns whether a rest is held. The keepalive's clock is read once, here."""
        outbox = self.outbox
        if self.keepalive is not None:
            outbox.heard_at = outbox.loop.time()
        outbox.in_read = True
        try:
            events, taken = self._part(data, first)
            start = self._further(data, taken, events, first)
        finally:
            self._answer()
        if start >= len(data):
            return False
        self._hold(data[start:])
        self._held_read = False
        return True

    def _further(self, data: memoryview, start: int, events: int, part: int) -> int:
        """After a part of ``data`` that ended at ``start`` with ``events`` events, the next
        parts while they are few messages; returns where the parts stopped (``len(data)``: all
        of it taken, or a goodbye came and the linger discards the rest)."""
        outbox = self.outbox
        size = len(data)
        while True:
            if start >= size or outbox.ended is not None:
                return size
            if events >= _FEW or outbox.core.has_data_to_send:
                return start  # small messages, or ones the core answers itself: a part per turn
            # Few messages: feed more at once; all the rest when this part did not even
            # complete a message (the core holds the start of a long one).
            part = size if not events else part * 4
            # A part: whole messages in about ``part`` bytes (large elements whole, so that
            # none is cut in two and copied twice).
            events, taken = self._part(data[start:], part)
            start += taken

    def _hold(self, data: memoryview) -> None:
        """Keep ``data`` to be handled a part at a time; read nothing meanwhile."""
        self._held = data  # valid until reading resumes (the transport seam's promise)
        outbox = self.outbox
        transport = outbox.transport
        if transport is not None:
            transport.pause_reading()
        if not self._backed_up:
            self._next_part()

    def _next_part(self) -> None:
        """The next part of what is held waits for the next loop turn (:meth:`_turn`)."""
        self.outbox.loop.call_soon(self._turn)

    def _turn(self) -> None:
        """A peer that took its replies (it had a turn to read them) gets a READ_TURN part of what
        it sent, as a connection read as its bytes come, so the backlog's parts wait; one whose
        replies wait unsent waits for the backlog's ration (:mod:`rstreams.net._intake`)."""
        if self._held is None or self._backed_up:
            return
        if self._replies_taken():
            self._backlog.busy = True
            self._go_on(READ_TURN)
        else:
            self._backlog.add(self._go_on)

    def _replies_taken(self) -> bool:
        """Whether at most a quarter of the mark of our replies wait unsent (in the transport or its
        socket): the test that reads a stopped peer again. A look at the socket (a system call)
        only when more replies than that were written since the last look found them sent."""
        ledger = self.outbox.ledger
        quarter = self._mark // 4
        if ledger.unconfirmed <= quarter:
            return True
        transport = self.outbox.transport
        if transport is None:
            return False
        unsent = transport.get_write_buffer_size() + socket_unsent(transport)
        return ledger.unsent_replies(unsent) <= quarter

    def _go_on(self, part: int) -> None:
        """Handle the next ``part`` bytes of what is held (its turn came)."""
        held, self._held = self._held, None
        if held is None or self._backed_up:
            self._held = held
            return
        if self.closing.discarding(len(held)):
            self._resume()
            return
        if self._held_read:  # a whole read: if it fits the part, its peer keeps to its turns again
            self._held_read = False
            if len(held) <= part:
                self._flooding = False
        if not self._consume(held, part):
            self._resume()

    def _transferred(self) -> tuple[int, int]:
        """``(bytes sent, bytes received)`` so far: what the observer reads when scraped."""
        outbox = self.outbox
        return outbox.ledger.written, outbox.bytes_read

    def _resume(self) -> None:
        """Nothing held: read again (unless replies back up), then take a held end of input."""
        if self._held is None and not self._backed_up:
            transport = self.outbox.transport
            if transport is not None:
                transport.resume_reading()
            if self._held_eof:
                self._held_eof = False
                self.eof_received()

    def _part(self, data: memoryview, limit: int) -> tuple[int, int]:
        """Feed about ``limit`` bytes of ``data`` to the core (whole messages) and route their
        events; returns how many events, and how many bytes the core took."""
        outbox = self.outbox
        core = outbox.core
        outbox.wrote_through = False
        taken = core.receive_data(data, limit)
        observer = outbox.observer
        if observer is not None:  # what the core took: the rest comes in a later part
            outbox.bytes_read += taken
            if observer.frames is not None:
                observer.read(data[:taken])
        events = core.events_received()
        outbox.reading = True
        try:
            self._dispatch(events)
        finally:
            outbox.reading = False
        return len(events), taken

    def _answer(self) -> None:
        """Write what the read caused now, in one write, rather than on the next loop turn: a
        turn (an epoll_wait) less per request/response. What the events made us send
        scheduled a flush; the core may also have answered by itself (a cancel's
        acknowledgement, a goodbye)."""
        outbox = self.outbox
        try:  # (the peer's requests leave streams waiting for a refill, without mark_dirty)
            if outbox.flush_scheduled or self.serving.refills or outbox.core.has_data_to_send:
                outbox.flush_now()
        finally:
            outbox.in_read = False  # later writes (of a flush, a task) stamp their own time

    def eof_received(self) -> None:
        if self.closing.eof_while_lingering():
            return
        if self._held is not None:
            self._held_eof = True  # after the held part of the input
            return
        core = self.outbox.core
        core.receive_eof()
        self._dispatch(core.events_received())
        self.outbox.flush_now()
        self.closing.input_over()  # a goodbye for this end of input lingers for nothing

    def connection_lost(self, error: BaseException | None) -> None:
        if self.keepalive is not None:
            self.keepalive.stop()
        self._stop_holding()
        self.closing.lost(error)

    def pause_writing(self) -> None:
        self.outbox.writable = False
        if self.outbox.observer is not None:
            self.outbox.observer.socket_paused()

    def resume_writing(self) -> None:
        outbox = self.outbox
        outbox.writable = True
        if outbox.observer is not None:
            outbox.observer.socket_resumed()
        if self._backed_up and self._look is None:  # our replies drained: the peer reads again
            self._drained()
        if outbox.on_writable:
            calls, outbox.on_writable = outbox.on_writable, []
            for call in calls:
                call()
        if self.serving.refills or outbox.core.has_data_to_send:
            outbox.mark_dirty()

    # -- input backpressure (rstreams.net._intake) ---------------------------------------------
    def _check_backlog(self) -> None:
        """Replies may back up: stop reading the peer if the unsent ones (the transport's and its
        socket's) pass the mark."""
        outbox = self.outbox
        transport = outbox.transport
        if transport is None or outbox.ended is not None or self._backed_up:
            return
        unsent = transport.get_write_buffer_size()
        if unsent > MAX_UNSENT:
            outbox.close_now(
                f"peer not reading: more than {MAX_UNSENT} bytes unsent to it (MAX_UNSENT)",
                ErrorCode.LIMIT_EXCEEDED,
            )
            return
        mark = self._mark
        if outbox.ledger.unsent_replies(unsent + socket_unsent(transport)) <= mark:
            return
        self._backed_up = True
        transport.pause_reading()
        if self._unread_timeout is not None:
            self._unread_timer = outbox.loop.call_later(self._unread_timeout, self._unread_expired)
        if unsent > mark:
            # Hear when the replies drain: marks this low make the transport say "not writable"
            # now (it holds more than the mark) and "writable" again below a quarter of it.
            transport.set_write_buffer_limits(mark, mark // 4)
        else:  # the socket holds them, and says nothing when it drains: look again
            self._look_after = UNREAD_POLL
            self._look = outbox.loop.call_later(UNREAD_POLL, self._look_again)

    def _look_again(self) -> None:
        """Not reading for the replies the socket holds: read again once a quarter of the mark is
        left, or once the socket failed or hung up (a peer that reset it: the read ends the
        connection with the socket's error; its queue would go on counting what it held)."""
        self._look = None
        outbox = self.outbox
        transport = outbox.transport
        if not self._backed_up or transport is None:
            return
        unsent = transport.get_write_buffer_size() + socket_unsent(transport)
        if outbox.ledger.unsent_replies(unsent) > self._mark // 4 and not socket_ended(transport):
            self._look_after = wait = min(self._look_after * 2, UNREAD_POLL_MAX)
            self._look = outbox.loop.call_later(wait, self._look_again)
        else:
            self._drained()

    def _drained(self) -> None:
        """Our replies drained: the peer reads again, so do we."""
        self._backed_up = False
        timer, self._unread_timer = self._unread_timer, None
        if timer is not None:
            timer.cancel()
        outbox = self.outbox
        transport = outbox.transport
        if transport is not None:
            transport.set_write_buffer_limits(self._high, self._low)
        if self._held is not None:
            self._next_part()
        elif transport is not None:
            transport.resume_reading()

    def _unread_expired(self) -> None:
        self._unread_timer = None
        if self._backed_up:
            self.outbox.close_now(
                f"peer not reading: replies left unread for {self._unread_timeout:g} s (unread_timeout)",
                ErrorCode.LIMIT_EXCEEDED,
            )

    def _stop_holding(self) -> None:
        """The transport is gone: drop held input; stop waiting for the peer to read."""
        self._held = None
        self._held_eof = False
        self._read_again()

    def _read_again(self) -> None:
        """The streams ended: stop waiting for the peer to take its replies; read again, and go
        on with a held read where there is one. After our goodbye the peer's answer is still to
        be read, in the held read or after it: dropping the held rest would also cut the input
        inside a message. A lingering close, or the conversation's end, discards what follows."""
        timer, self._unread_timer = self._unread_timer, None
        if timer is not None:
            timer.cancel()
        look, self._look = self._look, None
        if look is not None:
            look.cancel()
        if self._backed_up:
            self._backed_up = False
            transport = self.outbox.transport
            if transport is not None:
                transport.set_write_buffer_limits(self._high, self._low)
                if self._held is not None:
                    self._next_part()
                else:
                    transport.resume_reading()

    # -- once per turn -----------------------------------------------------------------------
    def flush(self) -> None:
        """Send coalesced requests, refill local publishers, write: once per loop turn."""
        if self._held is None:  # another connection's than the backlog's: its parts wait (_intake)
            self._backlog.busy = True
        outbox = self.outbox
        outbox.flush_handle = None
        outbox.wrote_through = False
        outbox.flush_scheduled = True  # what the steps below produce goes out in this very write
        subscriptions, serving = self.subscriptions, self.serving
        if subscriptions.requests:
            subscriptions.send_requests()
        transport = outbox.transport
        if transport is None:
            outbox.flush_scheduled = False
            return
        refills = serving.refills
        if refills or serving.packs:
            if refills and outbox.writable:
                room = self._high - transport.get_write_buffer_size()  # the room left
                if len(refills) == 1 and room > 0:  # one stream waits (an open stream): all the room
                    [stream] = refills
                    refills.clear()
                    stream.refill(room)
                else:  # several: fair shares (or no room: they stay queued)
                    serving.refill(room)
                if subscriptions.requests:  # a local publisher that relays a remote one
                    subscriptions.send_requests()
            if serving.packs:  # (what a refill brought, the refill sent)
                serving.flush_packs()
        outbox.flush_scheduled = False
        core = outbox.core
        data = core.data_to_send(WRITE_LIMIT)
        more = outbox.write(transport, data) if data else core.has_data_to_send  # split parts left
        if (serving.refills or more) and outbox.writable:
            outbox.mark_dirty()  # room or the write limit was used up this turn: go on next turn

    # -- events from the core --------------------------------------------------------------------
    def _dispatch(self, events: list[Event]) -> None:
        """Route each event through the table; then the after-dispatch calls."""
        routes = self._routes
        for event in events:
            routes[event.__class__](event)
        if self._after_dispatch:
            self._run_after_dispatch()

    def _run_after_dispatch(self) -> None:
        """The calls deferred until the read's events were routed (:meth:`defer`), and theirs."""
        while self._after_dispatch:
            calls, self._after_dispatch = self._after_dispatch, []
            for call in calls:
                try:
                    call()
                except Exception as error:
                    report_unhandled(error, "a call after handling a read")

    def _subscribe(self, event: Subscribe) -> None:
        """A subscribe with an auth gate, which holds it until authenticated (routed to the
        serving table alone without one)."""
        held = self.serving.held_metadata
        metadata = held.pop() if held else EMPTY  # a subscribeMetadata right before (§18)
        if self.outbox.core.state is not ConnectionState.CLOSED and not self.outbox.closing:
            assert self.gate is not None
            self.gate.subscribe(event.publisher, event.subscriber, event.initial_demand, metadata)

    def _request(self, event: Request) -> None:
        """A request with an auth gate (routed to the serving table alone without one): the gate
        holds the requests of the subscribes it holds."""
        if not self.serving.request(event):
            assert self.gate is not None
            self.gate.request(event.subscriber, event.demand)

    def _cancel(self, event: Cancel) -> None:
        # The core has acknowledged it (§5.4), unless the auth gate holds answers (§15.3).
        self.serving.cancel(event.subscriber)
        if self.gate is not None:
            self.gate.cancel(event.subscriber)

    def _stream_error(self, event: StreamError) -> None:  # the core already sent onError / cancel
        if event.publishing:
            self.serving.cancel(event.subscriber)
        else:
            self.subscriptions.stream_error(event.subscriber, event.error)

    def _conversation_over(self, event: ConnectionClosed) -> None:
        self.closing.conversation_over(event.error, event.reason, event.code)

    def _qualifier(self, event: Qualifier) -> None:
        """What an extension message says about the signal routed next (PROTOCOL.md §17, §19)."""
        if event.type == CONTENT_TYPE:
            self.subscriptions.content_type(event.subscriber, event.value)  # type: ignore[arg-type]
        elif event.type == CHANNEL:  # the subscribe routed next opens a channel (§21.3)
            self.serving.channel_marks.add(event.subscriber)
        else:
            self.subscriptions.qualified[event.type] = event.value

    def _extension(self, event: ExtensionReceived) -> None:
        handler = self.extension_handlers.get(event.type)
        if handler is not None:
            handler(event.type, event.payload)

    def _hello(self, event: ClientHello | ServerHello) -> None:
        if self.closing.hello_received():  # it said a goodbye waiting for the hello (a refusal)
            return
        outbox = self.outbox
        if self.gate is not None:
            reason = self.gate.hello(AUTH.id in outbox.core.extensions)
            if reason is not None:
                outbox.close_now(reason, ErrorCode.UNAUTHENTICATED)
            else:
                self.messages.hello()
                self.subscriptions.release_deferred()  # channels this side opened (§21)
            return
        if self.client_auth is not None and not self.client_auth.hello():
            return
        self.messages.hello()
        self.subscriptions.release_deferred()

    def _end(self, error: BaseException) -> None:
        """Every open stream ends with ``error`` (closing calls this once)."""
        self._read_again()
        if self.gate is not None:
            self.gate.close()
        self.serving.stop_all()
        self.subscriptions.end(error)
        self.messages.close(error)
        self.channels.close(error)
