"""The client cases: the server's part of each, and what the client's adapter must report.

Every case names the sentence of PROTOCOL.md it checks. The server sends onSubscribe at
once (before any demand), as a server may; the adapter's script (``rN``, ``wN``, ``c``,
``t``, ``q``; :mod:`rstreams.conformance.adapter`) decides what the client asks for.
"""

from __future__ import annotations

from rstreams.conformance._client_suite import ClientFailure, ClientSkip, Server, client_case, expect
from rstreams.wire import (
    Cancel,
    ExtensionMessage,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
)
from rstreams.wire.extensions import KEEPALIVE, PING, PONG

__all__: list[str] = []


def _completed_with(server_events: list[bytes], got: list[bytes], terminal: dict[str, object] | None) -> None:
    expect(
        got == server_events,
        f"the adapter reported {len(got)} elements {got[:4]!r}, expected {server_events[:4]!r}",
    )
    expect(
        terminal is not None and terminal["event"] == "complete",
        f"expected onComplete, the adapter saw {terminal}",
    )


async def _failed(server: Server) -> list[bytes]:
    """Let the adapter finish; its subscription must have failed (not completed). Its elements."""
    adapter = await server.finish()
    terminal = adapter.terminal()
    expect(
        terminal is not None and terminal["event"] != "complete",
        f"expected a failure, the adapter saw {terminal}",
    )
    return adapter.elements()


@client_case(
    "client.hello_subscribe_complete",
    "PROTOCOL.md §4.1, §5.2",
    "A client sends clientHello (version 0) first, subscribes, and delivers the elements and "
    "onComplete it receives.",
    "r1 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(1)
    await server.send(OnNext(subscriber=sid, element=b"hello"), OnComplete(subscriber=sid))
    adapter = await server.finish()
    _completed_with([b"hello"], adapter.elements(), adapter.terminal())


@client_case(
    "client.demand_adds_up",
    "PROTOCOL.md §6.1",
    "A client's requests add up: demand granted is the sum of initialDemand and every "
    "request, and it never grants more than its subscriber asked for.",
    "r3 w3 r2 w5 t",
)
async def _(server: Server) -> None:
    sub = await server.handshake()
    sid = sub.subscriber
    await server.send(OnSubscribe(subscriber=sid))
    granted = await server.demand_at_least(sid, 3)
    expect(granted == 3, f"§6.1: the client granted {granted} before its subscriber asked for more than 3")
    await server.send(*(OnNext(subscriber=sid, element=bytes([i])) for i in range(3)))
    granted = await server.demand_at_least(sid, 5)
    expect(granted == 5, f"§6.1: the client granted {granted} in all, its subscriber asked for 5")
    await server.send(
        *(OnNext(subscriber=sid, element=bytes([i])) for i in range(3, 5)), OnComplete(subscriber=sid)
    )
    adapter = await server.finish()
    _completed_with([bytes([i]) for i in range(5)], adapter.elements(), adapter.terminal())


@client_case(
    "client.complete_without_spare_demand",
    "PROTOCOL.md §6.1",
    "onComplete needs no demand: after the last requested element, with zero demand left, "
    "the client delivers onComplete.",
    "r2 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(2)
    await server.send(
        OnNext(subscriber=sid, element=b"a"), OnNext(subscriber=sid, element=b"b"), OnComplete(subscriber=sid)
    )
    adapter = await server.finish()
    _completed_with([b"a", b"b"], adapter.elements(), adapter.terminal())


@client_case(
    "client.beyond_demand_is_refused",
    "PROTOCOL.md §6.3",
    "A subscriber that receives an element beyond the outstanding demand treats it as a "
    "connection error: goodbye, and the element is not delivered.",
    "r1 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(1)
    await server.send(OnNext(subscriber=sid, element=b"1"), OnNext(subscriber=sid, element=b"2"))
    goodbye = await server.closed_with_goodbye("the second element was beyond demand")
    expect(goodbye.reason, "§10: a connection error's goodbye names the broken rule; the reason was empty")
    elements = await _failed(server)
    expect(b"2" not in elements, "the element beyond demand reached the subscriber")


@client_case(
    "client.split_element_joined",
    "PROTOCOL.md §8",
    "The subscriber joins the parts' data in order of arrival and delivers one element when "
    "the onNextLastPart arrives.",
    "r1 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(1)
    whole = bytes(range(256)) * 3
    await server.send(
        OnNextPart(subscriber=sid, element_id=0, data=whole[:100]),
        OnNextPart(subscriber=sid, element_id=0, data=whole[100:500]),
        OnNextLastPart(subscriber=sid, element_id=0, data=whole[500:]),
        OnComplete(subscriber=sid),
    )
    adapter = await server.finish()
    _completed_with([whole], adapter.elements(), adapter.terminal())


@client_case(
    "client.split_elements_interleaved",
    "PROTOCOL.md §8",
    "Parts of different elements may be interleaved; elements are delivered in the order of "
    "their last parts.",
    "r2 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(2)
    await server.send(
        OnNextPart(subscriber=sid, element_id=0, data=b"first-"),
        OnNextPart(subscriber=sid, element_id=1, data=b"second-"),
        OnNextLastPart(subscriber=sid, element_id=0, data=b"done"),
        OnNextLastPart(subscriber=sid, element_id=1, data=b"done"),
        OnComplete(subscriber=sid),
    )
    adapter = await server.finish()
    _completed_with([b"first-done", b"second-done"], adapter.elements(), adapter.terminal())


@client_case(
    "client.packed_elements",
    "PROTOCOL.md §7",
    "onNextPacked with count elements of elementSize bytes is equivalent to count onNext messages.",
    "r3 t",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(3, element_size=8)
    values = [(i * 1000).to_bytes(8, "little", signed=True) for i in range(3)]
    await server.send(
        OnNextPacked(subscriber=sid, count=3, elements=b"".join(values)), OnComplete(subscriber=sid)
    )
    adapter = await server.finish()
    _completed_with(values, adapter.elements(), adapter.terminal())


@client_case(
    "client.remote_error",
    "PROTOCOL.md §5.2, §10",
    "onError ends one subscription with the publisher's text; the client reports it to the "
    "subscriber as an error and the connection continues.",
    "r1 t",
)
async def _(server: Server) -> None:
    sub = await server.handshake()
    sid = sub.subscriber
    await server.send(
        OnSubscribe(subscriber=sid), OnError(subscriber=sid, error="conformance: failed on purpose")
    )
    adapter = await server.finish()
    terminal = adapter.terminal()
    if terminal is None or terminal["event"] != "error":
        raise ClientFailure(f"expected onError, the adapter saw {terminal}")
    text = str(terminal["message"])
    expect("failed on purpose" in text, f"the error text was lost: {text!r}")


@client_case(
    "client.cancel_with_elements_in_flight",
    "PROTOCOL.md §5.4",
    "After a cancel, elements already in flight and the onComplete that acknowledges the "
    "cancel are dropped quietly, not treated as violations.",
    "r5 w2 c q",
)
async def _(server: Server) -> None:
    sid = await server.open_stream(5)
    await server.send(OnNext(subscriber=sid, element=b"1"), OnNext(subscriber=sid, element=b"2"))
    while True:
        frame = await server.frame("the cancel")
        expect(frame is not None and not isinstance(frame, Goodbye), f"expected cancel, got {frame!r}")
        if isinstance(frame, Cancel):
            break
    await server.send(OnNext(subscriber=sid, element=b"3"), OnComplete(subscriber=sid))
    adapter = await server.finish()
    goodbye = server.monitor.goodbye
    expect(goodbye is None or "§" not in goodbye.reason, f"the client failed the connection: {goodbye}")
    bad = [e for e in adapter.events if e["event"] in ("error", "closed")]
    expect(not bad, f"the client reported a failure after its own cancel: {bad}")


@client_case(
    "client.server_goodbye",
    "PROTOCOL.md §9.1",
    "An endpoint that receives a goodbye answers with a goodbye, sends nothing after it, and "
    "closes the transport; its open subscriptions fail.",
    "r1 t",
)
async def _(server: Server) -> None:
    sub = await server.handshake()
    await server.send(OnSubscribe(subscriber=sub.subscriber), Goodbye(reason="conformance: going away"))
    await server.closed_with_goodbye("answer to the server's goodbye")
    await _failed(server)


@client_case(
    "client.unknown_message_type",
    "PROTOCOL.md §10",
    "An unknown message type is a connection error: the client says goodbye with a reason and closes.",
    "r1 t",
)
async def _(server: Server) -> None:
    sub = await server.handshake()
    await server.send(OnSubscribe(subscriber=sub.subscriber), b"\x3f\x00")
    goodbye = await server.closed_with_goodbye("an unknown message type")
    expect(goodbye.reason, "§10: the goodbye after a framing error must name the problem")
    await _failed(server)


@client_case(
    "client.unsupported_version",
    "PROTOCOL.md §4.2",
    "An endpoint that receives a hello whose version it does not speak sends a goodbye and "
    "closes the transport.",
    "r1 t",
)
async def _(server: Server) -> None:
    await server.frame("the clientHello")
    await server.send(b"\x02\x07\x00")  # serverHello, version 7, no extensions
    goodbye = await server.closed_with_goodbye("a serverHello with version 7")
    expect(goodbye.reason, "§4.2: the goodbye must say which version was refused")
    await _failed(server)


@client_case(
    "client.keepalive_pong",
    "PROTOCOL.md §14.1",
    "With extension keepalive negotiated, an endpoint that receives a ping answers with a pong "
    "carrying the same 8 bytes.",
    "r1 t",
)
async def _(server: Server) -> None:
    sub = await server.handshake(extensions=(KEEPALIVE.id,))
    hello = server.monitor.hello
    if hello is None or KEEPALIVE.id not in hello.extensions:
        raise ClientSkip("the client does not offer extension keepalive (id 1)")
    sid = sub.subscriber
    await server.send(OnSubscribe(subscriber=sid), ExtensionMessage(type=PING, payload=b"rsio-pin"))
    while True:
        frame = await server.frame("the pong")
        expect(frame is not None and not isinstance(frame, Goodbye), f"expected a pong, got {frame!r}")
        if isinstance(frame, ExtensionMessage) and frame.type == PONG:
            expect(
                frame.payload == b"rsio-pin",
                f"§14.1: the pong carried {frame.payload!r}, not the ping's bytes",
            )
            break
    await server.demand_at_least(sid, 1)
    await server.send(OnNext(subscriber=sid, element=b"alive"), OnComplete(subscriber=sid))
    adapter = await server.finish()
    _completed_with([b"alive"], adapter.elements(), adapter.terminal())
