"""Handshake and versions (PROTOCOL.md §4, the draft's "loose handshake")."""

from __future__ import annotations

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import (
    DRAFT,
    expect_violation,
    open_with,
    range_elements,
    subscribe,
    varint,
)
from rstreams.wire import (
    Cancel,
    ClientHello,
    Goodbye,
    OnNext,
    Request,
    ServerHello,
    encode,
)

S41 = "PROTOCOL.md §4.1"
S42 = "PROTOCOL.md §4.2"
S43 = "PROTOCOL.md §4.3"
S44 = "PROTOCOL.md §4.4"
FIRST_MUST_BE_HELLO = (
    "The first message an endpoint receives MUST be the peer's hello (clientHello at a server, "
    "serverHello at a client) or a goodbye; anything else, a hello of the wrong kind, or a second "
    "hello, is a handshake error."
)


@case(
    "hs.server_hello_unprompted",
    S42,
    "A server that speaks several versions would have to wait for the clientHello ...; "
    "a version-0-only server sends its serverHello at once.",
)
async def _server_hello_unprompted(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    frame = await peer.read_frame(what="the serverHello, before sending anything")
    check(isinstance(frame, ServerHello), f"expected serverHello without a clientHello, got {frame!r}")


@case(
    "hs.server_hello_first",
    S41,
    "Each endpoint sends its hello as its first message without waiting for the other's.",
)
async def _server_hello_first(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.hello()
    hello = peer.monitor.server_hello
    check(hello is not None and hello.version == 0, f"serverHello must be version 0, got {hello!r}")


@case(
    "hs.version_1",
    S42,
    "An endpoint that receives a hello whose version it does not speak MUST send a goodbye naming "
    "the version and close the transport.",
)
async def _version_1(ctx: Context) -> None:
    bye = await expect_violation(ctx, ClientHello(version=1), hello=False)
    check(bye is not None and "1" in bye.reason, f"the goodbye does not name version 1: {bye!r}")


@case(
    "hs.version_255",
    DRAFT,
    "If either side receives a hello message with a version it doesn't support, it MUST send a "
    "goodbye message and close the connection.",
)
async def _version_255(ctx: Context) -> None:
    bye = await expect_violation(ctx, ClientHello(version=255), hello=False)
    check(bye is not None and "255" in bye.reason, f"the goodbye does not name version 255: {bye!r}")


@case(
    "hs.bad_version_discards_optimistic",
    S43,
    "If the peer's hello turns out to have another version, the connection is closed and the sender "
    "MUST consider every message it sent discarded: no subscription exists, no demand was granted.",
    needs=("range",),
)
async def _bad_version_discards(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(ClientHello(version=7), subscribe(ctx.name("range", n=3), 1, 3))
    await peer.goodbye_then_close()
    view = peer.view(1)
    check(not view.subscribed and not view.elements, "the server served a subscribe sent after a bad hello")


for _code, _label, _frame in (
    ("subscribe", "subscribe", encode(subscribe("conformance/range", 1, 1))),
    ("request", "request", encode(Request(subscriber=1, demand=1))),
    ("cancel", "cancel", encode(Cancel(subscriber=1))),
    ("server_hello", "serverHello from the client", encode(ServerHello())),
    ("on_next", "onNext", encode(OnNext(subscriber=1, element=b"x"))),
    ("reserved_type", "type byte 0x00", b"\x00"),
):

    def _make(code: str, label: str, frame: bytes) -> None:
        @case(f"hs.first_is_{code}", S41, FIRST_MUST_BE_HELLO + f" (here: {label} first)")
        async def _first(ctx: Context) -> None:
            await expect_violation(ctx, frame, hello=False)

    _make(_code, _label, _frame)


@case("hs.duplicate_hello", S41, FIRST_MUST_BE_HELLO + " (here: clientHello twice in a row)")
async def _duplicate_hello(ctx: Context) -> None:
    await expect_violation(ctx, ClientHello())


@case(
    "hs.duplicate_hello_later",
    S41,
    FIRST_MUST_BE_HELLO + " (here: a second clientHello after a completed stream)",
    needs=("range",),
)
async def _duplicate_hello_later(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=2), 1, 2))
    await peer.completed(1)
    await peer.send(ClientHello())
    await peer.goodbye_then_close()


@case(
    "hs.goodbye_first",
    S41,
    "The first message an endpoint receives MUST be the peer's hello ... or a goodbye.",
)
async def _goodbye_first(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(Goodbye(reason="never mind"))
    await peer.goodbye_then_close()


@case(
    "hs.optimistic_subscribe",
    S43,
    "Either endpoint MAY send further messages right after its hello, before the peer's hello arrives "
    "... The receiver processes them normally once the hello has been read.",
    needs=("range",),
)
async def _optimistic_subscribe(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(ClientHello(), subscribe(ctx.name("range", n=5), 1, 5))
    view = await peer.completed(1)
    check(view.elements == range_elements(5), "wrong elements for an optimistic subscribe")


@case(
    "hs.optimistic_pipeline",
    DRAFT,
    "The client can optimistically send more messages after the clientHello without waiting for "
    "the serverHello.",
    needs=("range",),
)
async def _optimistic_pipeline(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    name = ctx.name("range", n=4)
    await peer.send(
        ClientHello(),
        subscribe(name, 1, 0),
        subscribe(name, 2, 1),
        Request(subscriber=1, demand=4),
        Request(subscriber=2, demand=3),
        subscribe(name, 3, 0),
        Cancel(subscriber=3),
    )
    for sid in (1, 2):
        view = await peer.completed(sid)
        check(view.elements == range_elements(4), f"wrong elements on pipelined subscriber {sid}")
    await peer.terminal(3)


@case(
    "hs.unknown_extensions_ignored",
    S44,
    "Each hello lists the extension ids its sender supports ...; the active extensions are the ids "
    "present in both hellos.",
    needs=("range",),
)
async def _unknown_extensions(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(
        ClientHello(extensions=(1, 300, 2**40, 2**64 - 1)), subscribe(ctx.name("range", n=2), 1, 2)
    )
    await peer.completed(1)


@case(
    "hs.duplicate_extensions",
    S44,
    "Each hello lists the extension ids its sender supports (an array of varints; duplicates mean "
    "nothing extra).",
    needs=("range",),
)
async def _duplicate_extensions(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(ClientHello(extensions=(5, 5, 5, 1024)), subscribe(ctx.name("range", n=2), 1, 2))
    await peer.completed(1)


@case(
    "hs.extension_count_over_limit",
    S44,
    "Hellos list at most max_extensions ids (§11); an extension count above a limit is a connection "
    "error, checked as soon as it is read.",
)
async def _extension_count_over_limit(ctx: Context) -> None:
    await expect_violation(ctx, b"\x01\x00" + varint(2**32), hello=False)


@case(
    "hs.hello_byte_at_a_time",
    S41,
    "Each endpoint sends its hello as its first message (here delivered one byte per write, "
    "followed by a subscribe).",
    needs=("range",),
)
async def _hello_byte_at_a_time(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send_in_pieces(ClientHello(extensions=(300,)), subscribe(ctx.name("range", n=2), 1, 2))
    await peer.completed(1)


@case(
    "hs.hello_truncated_at_eof",
    "PROTOCOL.md §9.3",
    "The transport ending inside a message (a truncated frame) is a framing error (here: inside the "
    "clientHello).",
)
async def _hello_truncated(ctx: Context) -> None:
    await expect_violation(ctx, b"\x01\x00", hello=False, eof=True)


@case(
    "hs.sequential_handshake",
    S41,
    "Each endpoint sends its hello ... without waiting for the other's (here the client waits for "
    "the serverHello before its first subscribe, which must work as well).",
    needs=("range",),
)
async def _sequential(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.hello()
    await peer.send(subscribe(ctx.name("range", n=3), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "wrong elements after a sequential handshake")
