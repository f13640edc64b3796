"""The channels extension on asyncio (PROTOCOL.md §21): subscriptions that carry an input stream.

Theory of operation. A channel is an ordinary subscription (the *output*: subscribe,
onSubscribe, request, onNext, cancel, onComplete/onError, all through the core and the
subscription/serving tables as usual) plus an *input* stream flowing the other way on the
same subscriber id, carried by this extension's messages. One :class:`Channels` piece per
connection does both ends:

* opening (``conn.channel(name, input)``, a :class:`ChannelPublisher`): each subscribe
  makes an :class:`InputRelay` and asks the subscription table to open ``name`` with a
  *prelude*: after the peer's hello, just before the subscribe, the relay sends the
  ``channel`` mark and subscribes to the local input Publisher. It requests from it exactly
  what the peer granted with ``inputRequest`` (rule-exact), pulled the way the serving side
  pulls a publisher's elements: only while the transport is writable, at most
  :data:`~rstreams.net._outbox.WRITE_LIMIT` bytes (by the sizes seen so far, one element
  while none is known) and :data:`INPUT_WINDOW` elements per loop turn, and sends each as
  ``inputNext``, or, when it is larger than the split threshold and the peer offers
  extension input-parts (§21.6), as ``inputNextPart``s ending with an ``inputNext``; its
  completion or failure as ``inputComplete``/``inputError``.
* serving: a ``channel`` mark qualifies the subscribe that comes right after it: the core
  holds it and drops it with that subscribe if it refuses it, and an accepted one reaches
  the pump as a qualifier just before it (§21.3). The serving table hands that subscribe to
  :meth:`Channels.open`, which finds the factory in the ``channels=`` table (exact names,
  then ``{field}`` patterns), calls ``factory(input, params)`` with a :class:`ChannelInput`
  (an ordinary Publisher, subscribable once) and serves the returned Publisher as the
  output. The input's Subscriber's ``request(n)`` becomes ``inputRequest``, its ``cancel``
  ``inputCancel``; ``inputNext`` beyond what it requested is a connection error (§21.4), so
  nothing is ever buffered but the parts of one split input element per channel, joined by
  the core's assembler under the connection's split-element limits (§21.6).
* the tie: both ends watch the output through :class:`_Tied` (a pass-through around the
  output's Subscriber). When the output ends (completed, failed or cancelled, or the
  connection ended) the input ends too: the opener cancels its input Publisher, the server
  fails its input's Subscriber if it is still running. Either direction may otherwise end
  on its own: the input may complete while the output goes on, and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import LocalProtocolError, ReactiveStreamsError, ResourceClosedError, report_unhandled
from rstreams.flow._flow import Flow
from rstreams.flow._signals import subscriber_name
from rstreams.net._codec import Codec, decode_failed, encode_failed
from rstreams.net._consuming import SubscriptionTable
from rstreams.net._outbox import WRITE_LIMIT, Outbox
from rstreams.net._routes import NameTable, failed_message, malformed_message
from rstreams.net._serving import ServingTable
from rstreams.rules import check_error, check_subscriber
from rstreams.wire import ConnectionState, ErrorCode, ExtensionError, ExtensionMessage, LimitExceededError
from rstreams.wire._channels import (
    CHANNEL,
    INPUT_CANCEL,
    INPUT_COMPLETE,
    INPUT_ERROR,
    INPUT_NEXT,
    INPUT_NEXT_PART,
    INPUT_REQUEST,
    NAMES,
    decode_channel_message,
    encode_channel_message,
    encode_input_parts,
)
from rstreams.wire.extensions import CHANNELS, INPUT_PARTS

__all__ = [
    "INPUT_WINDOW",
    "MESSAGE_TYPES",
    "ChannelFactory",
    "ChannelInputError",
    "ChannelPublisher",
    "Channels",
    "check_channels",
]

MESSAGE_TYPES = tuple(sorted(CHANNELS.message_types | INPUT_PARTS.message_types))
"""The message types of extensions channels and input-parts, the reserved ones too: the pump
routes them to :meth:`Channels.received`."""

INPUT_WINDOW = 64
"""Most input elements the opener requests from its local input Publisher per event-loop turn,
and only while the transport is writable: the peer's ``inputRequest`` is a permission, not a
reason to fill the write buffer, as for the elements a serving side produces. Bytes bound a
turn too: elements are requested while those sent this turn plus those requested times the
size estimate (the largest recent element) stay within ``WRITE_LIMIT``, and one at a time
while no size is known, so a large grant of large elements (§21.6) queues about one write's
worth per turn, never the grant at once (which would pass ``MAX_UNSENT`` and close the
opener's own connection)."""

ChannelFactory: TypeAlias = Callable[[Publisher[Any], dict[str, str]], Publisher[Any] | None]
"""``factory(input, params) -> output``: ``input`` is the opener's stream, ``params`` the name's;
``None`` means "no such channel" (code 2, PROTOCOL.md §21.3)."""

_OPEN = ConnectionState.OPEN


class ChannelInputError(ReactiveStreamsError):
    """The opener's input Publisher failed: what the channel's input Subscriber receives
    (the message is the opener's ``inputError`` text, PROTOCOL.md §21.3)."""


def check_channels(channels: Mapping[str, ChannelFactory] | None) -> NameTable[ChannelFactory]:
    """The factory table for ``channels=``; ``TypeError`` for a key or value of the wrong kind."""
    if channels is None:
        return NameTable({})
    if not isinstance(channels, Mapping):
        raise TypeError(f"channels must be a mapping of names or patterns to factories, got {channels!r}")
    for key, factory in channels.items():
        if not callable(factory):
            raise TypeError(
                f"channel {key!r} must map to a factory (input, params) -> Publisher, got {factory!r}"
            )
    return NameTable(channels)


def _not_active() -> LocalProtocolError:
    return LocalProtocolError(
        f"can't open a channel: the peer does not offer extension {CHANNELS} (PROTOCOL.md §21.1); "
        "its hello does not list it"
    )


class Channels:
    """One connection's channels, opened and served; see the module docstring."""

    def __init__(
        self,
        outbox: Outbox,
        subscriptions: SubscriptionTable,
        serving: ServingTable,
        factories: NameTable[ChannelFactory],
        codec: Codec[Any] | None,
    ) -> None:
        self.outbox = outbox
        self.subscriptions = subscriptions
        self._serving = serving
        self._factories = factories
        self._codec = codec
        self.relays: dict[int, InputRelay] = {}  # channels we opened, by our subscriber id
        self.inputs: dict[int, ChannelInput] = {}  # channels the peer opened, by its subscriber id
        serving.open_channel = self.open
        serving.offer_channels(factories)  # a plain subscribe to a channel: refused saying so

    def send(self, message_type: int, sid: int, rest: bytes | int = b"") -> None:
        """Queue one of this extension's messages (when the connection can still take it)."""
        self.send_encoded(message_type, encode_channel_message(message_type, sid, rest))

    def send_encoded(self, message_type: int, payload: bytes) -> None:
        """:meth:`send` for a payload :mod:`rstreams.wire._channels` encoded already (queued only
        while the connection can still take it)."""
        outbox = self.outbox
        if outbox.ended is None and outbox.core.state is _OPEN:
            outbox.core.send(ExtensionMessage(type=message_type, payload=payload))
            outbox.mark_dirty()

    # -- from the peer (the pump routes this extension's messages here) -------------------------
    def received(self, message_type: int, payload: bytes) -> None:
        try:
            sid, value = decode_channel_message(message_type, payload)
            # (channel marks never get here: the core holds each for the subscribe that comes
            # next and passes it on only with that subscribe, if it accepts it; §21.3)
            if message_type in (INPUT_REQUEST, INPUT_CANCEL):
                relay = self.relays.get(sid)
                if relay is not None:  # else: it crossed the end of the channel (§21.5)
                    if message_type == INPUT_REQUEST:
                        relay.granted(value)  # type: ignore[arg-type]  # the decoder's int
                    else:
                        relay.end()
            else:
                channel_input = self.inputs.get(sid)
                if channel_input is not None:  # else: it crossed the end of the channel (§21.5)
                    channel_input.received(message_type, value)
        except ExtensionError as error:
            self.outbox.close_now(error.reason, ErrorCode.PROTOCOL_VIOLATION)
        except LimitExceededError as error:  # max_parts_in_flight, max_reassembly_bytes (§21.6)
            self.outbox.close_now(error.reason, ErrorCode.LIMIT_EXCEEDED)

    # -- serving a channel the peer opened ---------------------------------------------------------
    def open(self, name: str, sid: int, initial_demand: int) -> None:
        """The peer's marked subscribe: find the factory, call it with the input, serve its output."""
        serving = self._serving
        found = self._factories.lookup(name)
        unknown = f"no channel named '{name.partition('?')[0]}' (PROTOCOL.md §21.3)"  # path as written
        if found is None:
            serving.refuse(sid, unknown, ErrorCode.UNKNOWN_PUBLISHER, name)
            return
        factory, params, fault = found
        if fault is not None:  # a malformed name (§5.5): refused, not half understood
            serving.refuse(sid, malformed_message(name, fault, "channel"), ErrorCode.APPLICATION, name)
            return
        codec = self._codec
        channel_input = ChannelInput(self, sid, codec.decode if codec is not None else None, name)
        self.inputs[sid] = channel_input
        try:
            output = factory(channel_input, params)
            if output is None:  # "no such channel", as a publisher router's None (§21.3)
                self.inputs.pop(sid, None)
                channel_input.end(None)
                serving.refuse(sid, unknown, ErrorCode.UNKNOWN_PUBLISHER, name)
                return
            if not callable(getattr(output, "subscribe", None)):
                raise TypeError(f"the channel factory returned {type(output).__name__}, not a Publisher")
        except Exception as error:
            self.inputs.pop(sid, None)
            channel_input.end(None)
            report_unhandled(error, f"the channel factory for {name!r}")
            serving.refuse(sid, failed_message(name, kind="channel"), ErrorCode.INTERNAL, name)
            return
        outbox = self.outbox
        tied = _TiedPublisher(output, lambda: outbox.run_on_loop(channel_input.output_ended))
        label = self._factories.key(name) if outbox.observer is not None else None  # counting
        serving.attach(name, sid, initial_demand, tied, codec, pattern=label)

    def close(self, error: BaseException) -> None:
        """The connection ended: every input ends (the outputs end through their tables)."""
        relays, self.relays = self.relays, {}
        for relay in relays.values():
            relay.end()
        inputs, self.inputs = self.inputs, {}
        for channel_input in inputs.values():
            channel_input.end(error)


# -- the opener's side ------------------------------------------------------------------------------
class ChannelPublisher(Flow[Any]):
    """The output of the peer's channel ``name`` fed by ``input``; made by ``conn.channel``.

    Each subscribe opens a new channel and subscribes to ``input`` again.
    """

    __slots__ = ("_channels", "_decode", "_encode", "_input", "name")

    def __init__(
        self, channels: Channels, name: str, source: Publisher[Any], codec: Codec[Any] | None
    ) -> None:
        self._channels = channels
        self.name = name
        self._input = source
        self._decode = codec.decode if codec is not None else None
        self._encode = codec.encode if codec is not None else None

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)
        relay = InputRelay(self._channels, self._input, self._encode)
        outbox = self._channels.outbox
        tied = _Tied(subscriber, lambda: outbox.run_on_loop(relay.end))
        table = self._channels.subscriptions
        table.outbox.run_on_loop(table.open, self.name, tied, self._decode, None, None, relay.open)

    def __repr__(self) -> str:
        return f"<ChannelPublisher {self.name!r} on {self._channels.subscriptions.describe()}>"


class InputRelay(Subscriber[Any]):
    """Subscribes to the opener's input Publisher and sends what the peer asks for."""

    def __init__(
        self, channels: Channels, source: Publisher[Any], encode: Callable[[Any], bytes] | None
    ) -> None:
        self._channels = channels
        self._outbox = channels.outbox
        self._source = source
        self._encode = encode
        self.sid = -1
        self._remote = 0  # input demand the peer granted and we have not used
        self._outstanding = 0  # requested from the input Publisher, not yet received
        self._upstream: Subscription | None = None
        self._done = False  # ended: terminal sent, cancelled by the peer, or the output ended
        self._waiting = False  # for the transport to be writable, or for the next loop turn
        self._turn = 0  # elements requested since the last wait: at most INPUT_WINDOW per turn
        self._sent = 0  # bytes of input sent since the last wait: at most about WRITE_LIMIT per turn
        self._estimate = 0  # bytes of an element (the largest recent one); 0: none seen yet

    def open(self, sid: int) -> Exception | None:
        """The subscription table's prelude: mark the subscribe as a channel, subscribe to the input."""
        channels = self._channels
        if CHANNELS.id not in self._outbox.core.extensions:
            self._done = True
            return _not_active()
        self.sid = sid
        channels.relays[sid] = self
        channels.send(CHANNEL, sid)
        self._outbox.loop.call_soon(self._start)  # after the subscribe, which the table queues next
        return None

    def _start(self) -> None:
        """Subscribe to the input Publisher (its signals must follow the channel's subscribe)."""
        if self._done:
            return
        try:
            self._source.subscribe(self)
        except Exception as error:
            report_unhandled(error, f"{type(self._source).__name__}.subscribe (a channel's input)")
            self._terminate(INPUT_ERROR, f"{type(error).__name__}: {error}")

    # -- from the peer ------------------------------------------------------------------------
    def granted(self, n: int) -> None:
        self._remote = demand.add(self._remote, n)
        self._pull()

    def end(self) -> None:
        """The peer cancelled the input, or the output ended: cancel the input Publisher."""
        if self._done:
            return
        self._done = True
        if self._channels.relays.get(self.sid) is self:
            del self._channels.relays[self.sid]
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            try:
                upstream.cancel()
            except Exception as error:
                report_unhandled(error, f"{type(upstream).__name__}.cancel")

    def _pull(self) -> None:
        """Request from the input what the peer allows, within this turn's bytes, while writable."""
        upstream = self._upstream
        if upstream is None or self._done:
            return
        want = self._allowed(self._sent, self._turn)
        outbox = self._outbox
        if want <= 0:
            if self._remote <= self._outstanding or self._allowed(0, 0) <= 0:
                return  # the peer's inputRequest, or what is requested arriving, calls this again
            if not self._waiting:  # the turn's elements or bytes are used: its write goes out first
                self._waiting = True
                outbox.loop.call_soon(self._writable)
            return
        if not outbox.writable:
            if not self._waiting:
                self._waiting = True
                outbox.on_writable.append(self._writable)
            return
        self._turn += want
        self._outstanding += want
        try:
            upstream.request(want)
        except Exception as error:
            report_unhandled(error, f"{type(upstream).__name__}.request")
            self.end()

    def _allowed(self, sent: int, turn: int) -> int:
        """Elements to request now, after ``sent`` bytes and ``turn`` elements this turn."""
        outstanding = self._outstanding
        estimate = self._estimate
        if estimate:  # within WRITE_LIMIT by the estimate, and one element a turn at least
            fits = (WRITE_LIMIT - sent) // estimate
            if fits < 1 and sent == 0:
                fits = 1
        else:  # no size known: one element, which teaches it
            fits = 1
        if fits > INPUT_WINDOW:
            fits = INPUT_WINDOW
        # (what is outstanding counts against the grant, the bytes and the window)
        return min(min(self._remote, fits) - outstanding, INPUT_WINDOW - turn)

    def _writable(self) -> None:
        self._waiting = False
        self._turn = 0
        self._sent = 0
        self._pull()

    def _terminate(self, message_type: int, text: str = "") -> None:
        if self._done:
            return
        self._channels.send(message_type, self.sid, text.encode())
        self._done = True
        self._upstream = None
        self._channels.relays.pop(self.sid, None)

    # -- Subscriber (the input Publisher calls these, from any thread) ------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None) is illegal; pass a Subscription")
        self._outbox.run_on_loop(self._subscribed, subscription)

    def _subscribed(self, subscription: Subscription) -> None:
        if self._done or self._upstream is not None:
            subscription.cancel()  # rule 2.5
            return
        self._upstream = subscription
        self._pull()

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        self._outbox.run_on_loop(self._next, item)

    def _next(self, item: Any) -> None:
        if self._done:
            return
        encode = self._encode
        try:
            element = encode(item) if encode is not None else item
        except Exception as error:  # the input ends with it, as with a too large element
            failure = encode_failed(encode, item, error)  # type: ignore[arg-type]
            self._refuse(f"{type(failure).__name__}: {failure}")
            return
        core = self._outbox.core
        limit = core.config.max_string_length - 10
        raw = isinstance(element, bytes | bytearray | memoryview)
        split = INPUT_PARTS.id in core.extensions
        if not raw or (len(element) > limit and not split):
            what = f"{len(element)} bytes" if raw else "not bytes"
            self._refuse(
                f"an input element of {what}: inputNext holds bytes of at most "
                f"max_string_length - 10 = {limit} (PROTOCOL.md §21.2)"
                + (f"; larger ones need extension {INPUT_PARTS}, not offered by the peer" if raw else "")
            )
            return
        self._remote -= 1 if self._remote != demand.UNBOUNDED else 0
        self._outstanding -= 1
        size = len(element)
        self._sent += size
        estimate = self._estimate
        self._estimate = size if size > estimate // 2 else estimate // 2  # up at once, down by halves
        part_size = min(limit, core.config.split_threshold)
        if split and size > part_size:  # inputNextPart ... inputNext (§21.6)
            *parts, last = encode_input_parts(self.sid, element, part_size)
            send = self._channels.send_encoded
            for payload in parts:
                send(INPUT_NEXT_PART, payload)
            send(INPUT_NEXT, last)
        else:
            self._channels.send(INPUT_NEXT, self.sid, bytes(element))
        if self._outstanding <= INPUT_WINDOW // 2:
            self._pull()

    def _refuse(self, reason: str) -> None:
        """End the input with inputError ``reason`` and cancel the element's source."""
        upstream = self._upstream
        self._terminate(INPUT_ERROR, reason)
        if upstream is not None:
            upstream.cancel()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        self._outbox.run_on_loop(self._terminate, INPUT_ERROR, f"{type(error).__name__}: {error}")

    def on_complete(self) -> None:
        self._outbox.run_on_loop(self._terminate, INPUT_COMPLETE)


# -- the serving side -------------------------------------------------------------------------------
class ChannelInput(Publisher[Any]):
    """The opener's input stream, as the channel factory receives it: subscribable once.

    Its Subscriber's ``request(n)`` becomes ``inputRequest`` (coalesced per loop turn), its
    ``cancel`` ``inputCancel``; ``inputNext`` calls ``on_next`` inside the read. An element the
    server's codec cannot decode cancels the input and ends the Subscriber with ``DecodeError``
    naming the channel (PROTOCOL.md §17).
    """

    def __init__(
        self, channels: Channels, sid: int, decode: Callable[[bytes], Any] | None, name: str
    ) -> None:
        self._channels = channels
        self._outbox = channels.outbox
        self.sid = sid
        self._decode = decode
        self.name = name  # the channel's name as opened, for errors
        self._subscriber: Subscriber[Any] | None = None
        self._subscribed = False
        self._granted = 0  # input demand sent to the peer, not yet used
        self._pending = 0  # requested by the Subscriber, not yet sent
        self._scheduled = False
        self._ended: BaseException | bool | None = False  # False: running; None: completed; else why

    def __repr__(self) -> str:
        return f"<ChannelInput of subscriber {self.sid}>"

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        check_subscriber(subscriber)
        self._outbox.run_on_loop(self._subscribe, subscriber)

    def _subscribe(self, subscriber: Subscriber[Any]) -> None:
        if self._subscribed:
            subscriber.on_subscribe(_Nothing())
            subscriber.on_error(ResourceClosedError("a channel's input can be subscribed to once (rule 1.9)"))
            return
        self._subscribed = True
        self._subscriber = subscriber
        subscriber.on_subscribe(_InputSubscription(self))
        if self._ended is not False and self._subscriber is not None:
            self._deliver_end()

    # -- the Subscriber's demand and cancel (loop thread) ---------------------------------------
    def request(self, n: int) -> None:
        if self._subscriber is None or self._ended is not False:
            return
        problem = demand.invalid(n)
        if problem is not None:
            subscriber = self._subscriber
            self.cancel()
            subscriber.on_error(problem)
            return
        self._pending = demand.add(self._pending, n)
        if not self._scheduled:
            self._scheduled = True
            self._outbox.loop.call_soon(self._send_request)

    def _send_request(self) -> None:
        self._scheduled = False
        n, self._pending = self._pending, 0
        if n and self._ended is False and self._subscriber is not None:
            self._granted = demand.add(self._granted, n)
            self._channels.send(INPUT_REQUEST, self.sid, min(n, demand.UNBOUNDED))

    def cancel(self) -> None:
        if self._subscriber is None:
            return
        self._subscriber = None
        if self._ended is False:
            self._ended = True
            self._outbox.core.input_parts.drop_input(self.sid)
            self._channels.send(INPUT_CANCEL, self.sid)

    # -- from the peer ------------------------------------------------------------------------
    def received(self, message_type: int, value: Any) -> None:
        if self._ended is not False:
            return  # in flight when we cancelled (§21.5)
        parts = self._outbox.core.input_parts
        if message_type in (INPUT_NEXT, INPUT_NEXT_PART):
            if not parts.input_unfinished(self.sid):  # an element's first part takes its demand
                if self._granted <= 0:
                    raise ExtensionError(
                        f"{NAMES[message_type]} for subscriber {self.sid} beyond the input demand of 0",
                        section="21.4",
                    )
                if self._granted != demand.UNBOUNDED:
                    self._granted -= 1
            try:
                value = parts.add_input(self.sid, value, message_type == INPUT_NEXT)
            except LimitExceededError as error:
                if error.limit != "max_element_size":
                    raise
                self._too_large(error)
                return
            if value is None:
                return  # more parts to come (§21.6)
            observer = self._outbox.observer
            if observer is not None:  # counting (rstreams.observe): once per element, joined
                observer.input_received(self.sid)
            subscriber = self._subscriber
            if subscriber is None:
                return
            decode = self._decode
            if decode is not None:
                try:
                    value = decode(value)
                except Exception as error:  # bad data, not the Subscriber's fault: cancel, tell it
                    self._fail(decode_failed(self.name, decode, error))
                    return
            try:
                subscriber.on_next(value)
            except Exception as error:  # rule 2.13: the Subscriber broke; cancel its input
                report_unhandled(error, f"{subscriber_name(subscriber)}.on_next (a channel's input)")
                self.cancel()
            return
        if parts.input_unfinished(self.sid):
            if message_type == INPUT_COMPLETE:
                raise ExtensionError(
                    f"inputComplete for subscriber {self.sid} with an unfinished split input element",
                    section="21.6",
                )
            parts.drop_input(self.sid)
        self._ended = None if message_type == INPUT_COMPLETE else ChannelInputError(value)
        self._deliver_end()

    def _too_large(self, error: LimitExceededError) -> None:
        """A joined input element above max_element_size: cancel the input, fail its Subscriber."""
        self._fail(error)

    def _fail(self, error: BaseException) -> None:
        """Cancel the input (``inputCancel``) and end its Subscriber with ``error``."""
        subscriber = self._subscriber
        self.cancel()
        if subscriber is not None:
            try:
                subscriber.on_error(error)
            except Exception as broken:
                report_unhandled(broken, f"{subscriber_name(subscriber)}.on_error (a channel's input)")

    def _deliver_end(self) -> None:
        subscriber, self._subscriber = self._subscriber, None
        ended = self._ended
        if subscriber is None:
            return
        try:
            if ended is None:
                subscriber.on_complete()
            elif isinstance(ended, BaseException):
                subscriber.on_error(ended)
        except Exception as error:
            report_unhandled(error, f"{subscriber_name(subscriber)} (a channel's input)")

    def output_ended(self) -> None:
        """The channel's output ended (any way): the input ends with it (§21.5)."""
        self.end(ResourceClosedError("the channel's subscription ended before its input (PROTOCOL.md §21.5)"))

    def end(self, error: BaseException | None) -> None:
        """The channel or the connection ended: a running input's Subscriber gets ``on_error``."""
        if self._channels.inputs.get(self.sid) is self:
            del self._channels.inputs[self.sid]
        if self._ended is not False:
            return
        self._outbox.core.input_parts.drop_input(self.sid)
        self._ended = error if error is not None else ResourceClosedError("the channel ended")
        if self._subscribed:
            self._deliver_end()


class _InputSubscription(Subscription):
    __slots__ = ("_input",)

    def __init__(self, channel_input: ChannelInput) -> None:
        self._input = channel_input

    def request(self, n: int) -> None:
        channel_input = self._input
        channel_input._outbox.run_on_loop(channel_input.request, n)

    def cancel(self) -> None:
        channel_input = self._input
        channel_input._outbox.run_on_loop(channel_input.cancel)


class _Nothing(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


# -- the tie between the output and the input ---------------------------------------------------------
class _TiedPublisher(Publisher[Any]):
    """``publisher``, whose subscriptions call ``on_end`` once when they end in any way."""

    def __init__(self, publisher: Publisher[Any], on_end: Callable[[], None]) -> None:
        self._publisher = publisher
        self._on_end = on_end

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self._publisher.subscribe(_Tied(subscriber, self._on_end))


class _Tied(Subscriber[Any], Subscription):
    """A pass-through Subscriber (and Subscription) that calls ``on_end`` once at the end."""

    __slots__ = ("_downstream", "_on_end", "_upstream")

    def __init__(self, downstream: Subscriber[Any], on_end: Callable[[], None]) -> None:
        self._downstream = downstream
        self._on_end: Callable[[], None] | None = on_end
        self._upstream: Subscription | None = None

    def _ended(self) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end()

    def on_subscribe(self, subscription: Subscription) -> None:
        self._upstream = subscription
        self._downstream.on_subscribe(self)

    def on_next(self, item: Any) -> None:
        self._downstream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self._ended()
        self._downstream.on_error(error)

    def on_complete(self) -> None:
        self._ended()
        self._downstream.on_complete()

    def request(self, n: int) -> None:
        if self._upstream is not None:
            self._upstream.request(n)

    def cancel(self) -> None:
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            upstream.cancel()
        self._ended()
