"""The Reactive Streams floor: the ceiling's transport plus only the signals a Reactive Streams
request/response over a multiplexed connection cannot do without. No rstreams code.

A lower bound, not a library: what any Reactive Streams implementation in pure Python pays
on top of the plain-asyncio ping-pong (``net_ceiling.py``), so that "0.55x the ceiling" can be
read against "the floor reaches Fx the ceiling". The bytes travel exactly as the ceiling's do:
the client is the ceiling's ``Receiver`` (a reused read buffer, every frame body materialised
as ``bytes``) and the server the ceiling's ``Sender`` in its echo mode; only what each hands
on per frame changes (the client's ``on_next`` hook, the server's one ``transport.write`` per
frame), so the difference from the ceiling is the Reactive Streams work and nothing else.

What one round trip does (mode ``rr``), and why each step is mandatory (rule numbers from the
Reactive Streams specification, 1.x Publisher, 2.x Subscriber, 3.x Subscription):

  client  ``conn.request(route)`` makes a Publisher for the route and the caller's Subscriber
          (its future); ``publisher.subscribe(subscriber)`` gives the stream an id and files
          the subscriber in the connection's dict by that id (a multiplexed connection must
          route each frame to its stream), then calls ``on_subscribe(subscription)``: before
          any other signal (1.9), and the only way a Subscriber gets its Subscription.
          ``on_subscribe`` calls ``subscription.request(1)``: without demand no ``on_next``
          may come (1.1, 2.1, 3.8). That ``request`` is the first, so it writes one frame
          with the stream id, the route and the demand (opening the stream on the first
          request, not at ``subscribe``, is what lets the route and the demand share one
          frame and one write, as RS.io's subscribe frame carries its initialDemand).
  server  the frame's head is decoded (one ``struct``), the route's name looked up in a dict
          of factories and the Publisher made; ``publisher.subscribe(subscriber)`` with the
          connection's Subscriber for that stream id (filed in the server's dict: later
          request frames for the stream must find it) -> ``on_subscribe(subscription)``
          (1.9) -> ``subscription.request(n)`` with the frame's demand (the remote demand
          has to reach the Publisher: 3.8; the server's Subscriber may not invent it, 2.1)
          -> ``on_next(element)`` (1.1: one, within the demand) -> ``on_complete()`` (1.5: a
          finite stream must complete; its Subscription is then cancelled, 1.6, so the
          stream leaves the dict). The Subscriber holds an element until the signal that
          produced it returns, so the element and the completion leave in one frame and one
          write; a held element with no completion behind it is written when the request
          that produced it returns.
  client  on the read, the frame's head is decoded, the stream found by id in the dict and
          removed (its terminal signal has come: 1.6, 2.4), ``subscriber.on_next(element)``
          then ``subscriber.on_complete()`` (in that order and one at a time: 1.3, 1.7),
          which completes the caller's future.

Mode ``latency`` (as ``net_rstreams.py --mode latency``): one stream stays open on a
Publisher that emits one 8-byte element per unit of demand; per element the client calls
``subscription.request(1)`` (written as a request frame: stream id and demand), the server
finds the stream by id and calls the Publisher's ``request(n)``, whose ``on_next`` is written
as one frame, and the client delivers ``on_next`` to its Subscriber, which completes the
waiting future.

Signals are serial (1.3, 2.7) because everything runs on one event loop thread: that rule
costs nothing here. Left out on purpose, as a lower bound should: ``cancel`` and ``on_error``
(never signalled on these paths), every check (``n > 0``, 3.9; a second ``subscribe`` of a
Publisher or Subscriber, 1.10/2.5/2.12; signals after the end, 1.7/3.6), an onSubscribe
frame from the server (the client's ``on_subscribe`` is local: 1.9 asks only that it come
first; RS.io's publisher answers with one), demand accounting beyond the one request in
flight (a server Publisher loops ``n`` times; no saturation at 2**63-1, 3.17), re-entrancy
bounds (3.3: nothing here requests from within ``on_next``), flow control of the connection,
keepalive and timers (the ceiling has none either), metadata, errors from the peer. A Publisher
made per request is also its own Subscription (it serves that one Subscriber; rule 1.11 leaves
unicast to the Publisher), which saves an object per stream on each side. Routes and elements
are bytes (no text encoding).

Frames: the ceiling's 4-byte big-endian length, then a 1-byte kind and a 4-byte stream id;
``SUBSCRIBE`` and ``REQUEST`` add an 8-byte demand (``SUBSCRIBE`` then the route,
``b"name?argument"``), ``NEXT`` and ``NEXT_COMPLETE`` the element, ``COMPLETE`` nothing.

Usage: python benchmarks/net_floor.py client --mode rr --count 5000
       python benchmarks/net_floor.py client --mode latency --count 5000
       python benchmarks/hotpath.py ceiling floor-rr floor-latency --instructions  # the counts
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _netcommon import HOST, make_parser, round_trips, run_roles, serve_until_stdin_closes
from net_ceiling import ECHO, HELLO, Receiver, Sender

__all__ = ["FACTORIES", "FloorClient", "FloorServer", "OneAtATime", "serve"]

SUBSCRIBE, REQUEST, NEXT, NEXT_COMPLETE, COMPLETE = 1, 2, 3, 4, 5
DEMAND = struct.Struct(">IBIQ")  # length, kind, stream id, demand: SUBSCRIBE (+ route), REQUEST
DEMAND_IN = struct.Struct(">4xBIQ")  # the same, read from the whole frame the server's Sender hands on
SIGNAL = struct.Struct(">IBI")  # length, kind, stream id: NEXT, NEXT_COMPLETE (+ element), COMPLETE
SIGNAL_IN = struct.Struct(">BI")  # the same, read from the frame body the client's Receiver hands on
ECHO_ROUTE = b"echo?12345678"
REPEAT_ROUTE = b"repeat?12345678"
ELEMENT = b"12345678"


class Subscriber(Protocol):
    def on_subscribe(self, subscription: Any) -> None: ...
    def on_next(self, element: bytes) -> None: ...
    def on_complete(self) -> None: ...


# ------------------------------------------------------------------------------ server
class _Source:
    """A Publisher of ``value`` that is its own Subscription (one subscriber): subscribe is
    on_subscribe at once (rule 1.9); what ``request`` emits is the subclass's."""

    __slots__ = ("subscriber", "value")

    def __init__(self, value: bytes) -> None:
        self.value = value

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)


class Just(_Source):
    """One element, then completion."""

    __slots__ = ()

    def request(self, n: int) -> None:
        subscriber = self.subscriber
        subscriber.on_next(self.value)
        subscriber.on_complete()


class Repeat(_Source):
    """``value`` for ever, one per unit of demand."""

    __slots__ = ()

    def request(self, n: int) -> None:
        on_next, value = self.subscriber.on_next, self.value
        for _ in range(n):
            on_next(value)


FACTORIES: dict[bytes, Callable[[bytes], Just | Repeat]] = {b"echo": Just, b"repeat": Repeat}
"""The server's publishers by name: each makes one Publisher from the route's argument."""


class Outbound:
    """The server connection's Subscriber for one stream: writes its signals as frames."""

    __slots__ = ("demand", "held", "sid", "streams", "subscription", "write")

    def __init__(
        self, write: Callable[[bytes], object], streams: dict[int, Outbound], sid: int, n: int
    ) -> None:
        self.write = write
        self.streams = streams
        self.sid = sid
        self.demand = n
        self.held: bytes | None = None

    def on_subscribe(self, subscription: Just | Repeat) -> None:
        self.subscription = subscription
        subscription.request(self.demand)

    def on_next(self, element: bytes) -> None:
        if self.held is not None:
            self.flush()
        self.held = element

    def on_complete(self) -> None:
        del self.streams[self.sid]
        held = self.held
        if held is None:
            self.write(SIGNAL.pack(5, COMPLETE, self.sid))
        else:
            self.held = None
            self.write(SIGNAL.pack(5 + len(held), NEXT_COMPLETE, self.sid) + held)

    def flush(self) -> None:
        held: bytes = self.held  # type: ignore[assignment]
        self.held = None
        self.write(SIGNAL.pack(5 + len(held), NEXT, self.sid) + held)


class _Frames:
    """Stands in for the transport of the ceiling's ``Sender``: its echo branch writes each
    whole frame it parsed to ``transport.write``, which here is the server's dispatcher."""

    __slots__ = ("write",)

    def __init__(self, received: Callable[[bytes], None]) -> None:
        self.write = received


class FloorServer(Sender):
    """The ceiling's server, its frames dispatched to Publishers instead of echoed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.send = transport.write  # type: ignore[attr-defined]
        self.streams: dict[int, Outbound] = {}
        self.transport = _Frames(self.frame_received)  # type: ignore[assignment]

    def frame_received(self, frame: bytes) -> None:
        kind, sid, n = DEMAND_IN.unpack_from(frame)
        if kind == SUBSCRIBE:
            name, _, argument = frame[DEMAND.size :].partition(b"?")
            subscriber = self.streams[sid] = Outbound(self.send, self.streams, sid, n)
            FACTORIES[name](argument).subscribe(subscriber)
        else:
            subscriber = self.streams[sid]
            subscriber.subscription.request(n)
        if subscriber.held is not None:
            subscriber.flush()


async def serve() -> asyncio.Server:
    return await asyncio.get_running_loop().create_server(FloorServer, HOST, 0)


async def serve_main() -> None:
    server = await serve()
    await serve_until_stdin_closes(server.sockets[0].getsockname()[1])


# ------------------------------------------------------------------------------ client
class RemotePublisher:
    """The client's Publisher of one remote stream, and its Subscription."""

    __slots__ = ("conn", "route", "sid")

    def __init__(self, conn: FloorClient, route: bytes) -> None:
        self.conn = conn
        self.route: bytes | None = route

    def subscribe(self, subscriber: Subscriber) -> None:
        conn = self.conn
        self.sid = sid = conn.next_id
        conn.next_id = sid + 1
        conn.streams[sid] = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        route = self.route
        if route is None:
            self.conn.write(DEMAND.pack(13, REQUEST, self.sid, n))
        else:  # the first request opens the stream: route and demand in one frame
            self.route = None
            self.conn.write(DEMAND.pack(13 + len(route), SUBSCRIBE, self.sid, n) + route)


class Answer:
    """The Subscriber of ``request()``: one element, then completion settles the future."""

    __slots__ = ("element", "future")

    def __init__(self, future: asyncio.Future[bytes]) -> None:
        self.future = future

    def on_subscribe(self, subscription: RemotePublisher) -> None:
        subscription.request(1)

    def on_next(self, element: bytes) -> None:
        self.element = element

    def on_complete(self) -> None:
        self.future.set_result(self.element)


class OneAtATime:
    """A Subscriber of a long stream that requests one element at a time; ``next()`` awaits it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.subscription: RemotePublisher | None = None
        self.waiter: asyncio.Future[bytes] | None = None

    def on_subscribe(self, subscription: RemotePublisher) -> None:
        self.subscription = subscription

    def on_next(self, element: bytes) -> None:
        self.waiter.set_result(element)  # type: ignore[union-attr]

    def on_complete(self) -> None:
        self.waiter.set_exception(EOFError("stream completed"))  # type: ignore[union-attr]

    async def next(self) -> bytes:
        self.waiter = self.loop.create_future()
        self.subscription.request(1)  # type: ignore[union-attr]
        return await self.waiter


class FloorClient(Receiver):
    """The ceiling's client, each frame it parses routed to its stream's Subscriber."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(0, 0, loop.create_future())
        self.loop = loop
        self.streams: dict[int, Subscriber] = {}
        self.next_id = 1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.write = transport.write  # type: ignore[attr-defined]
        self.write(HELLO.pack(ECHO, 0, 8, 0))  # the ceiling's server: one frame at a time from now

    def on_next(self, element: bytes) -> None:
        """The ceiling's hook for each frame body: here a signal for one stream."""
        kind, sid = SIGNAL_IN.unpack_from(element)
        if kind == NEXT:
            self.streams[sid].on_next(element[5:])
        elif kind == NEXT_COMPLETE:
            subscriber = self.streams.pop(sid)
            subscriber.on_next(element[5:])
            subscriber.on_complete()
        else:
            self.streams.pop(sid).on_complete()

    def publisher(self, route: bytes) -> RemotePublisher:
        return RemotePublisher(self, route)

    async def request(self, route: bytes) -> bytes:
        """Subscribe to ``route`` with demand 1; its one element, once it has completed."""
        answer = Answer(self.loop.create_future())
        RemotePublisher(self, route).subscribe(answer)
        return await answer.future

    def close(self) -> None:
        self.done.cancel()  # the ceiling's end-of-run future: nobody waits for it here
        self.transport.close()  # type: ignore[union-attr]


async def connect(port: int) -> FloorClient:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: FloorClient(loop), HOST, port)
    return client


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    client = await connect(port)
    try:
        if args.mode == "rr":
            return await round_trips(lambda: client.request(ECHO_ROUTE), ELEMENT, args.count)
        one = OneAtATime(client.loop)
        client.publisher(REPEAT_ROUTE).subscribe(one)
        return await round_trips(one.next, ELEMENT, args.count)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> None:
    args = make_parser(__doc__, ["rr", "latency"]).parse_args(argv)
    run_roles(args, __file__, serve_main, client_main, impl="rs-floor", version=sys.version.split()[0])


if __name__ == "__main__":
    main()
