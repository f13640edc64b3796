"""Small steps the cases share: hand-made messages, opening a connection with an extension,
expecting a connection error, checking the server still serves."""

from __future__ import annotations

from rstreams.conformance._case import Context, Skip, check
from rstreams.conformance._peer import Peer
from rstreams.conformance._publishers import element_bytes
from rstreams.wire import Frame, Goodbye, Subscribe

__all__ = [
    "DRAFT",
    "UNBOUNDED",
    "expect_goodbye_citing",
    "expect_violation",
    "extension_message",
    "range_elements",
    "read_varint",
    "still_serving",
    "subscribe",
    "varint",
    "with_extension",
]

UNBOUNDED = 2**63 - 1
DRAFT = "draft (spec/003)"


def varint(value: int) -> bytes:
    """The minimal unsigned varint of ``value`` (PROTOCOL.md §2.1), for hand-made bytes."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """``(value, end)`` of the varint at ``pos`` of ``data`` (§2.1); ``ValueError`` if truncated."""
    value = shift = 0
    for index in range(pos, len(data)):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    raise ValueError("truncated varint")


def extension_message(kind: int, payload: bytes = b"") -> bytes:
    """An extension message as PROTOCOL.md §4.4 frames it: type, varint length, payload."""
    return bytes([kind]) + varint(len(payload)) + payload


def range_elements(n: int, start: int = 0, size: int = 8) -> list[bytes]:
    """Elements start..start+n-1 of ``conformance/range`` (or ``fixed``/``large`` with ``size``)."""
    return [element_bytes(i, size) for i in range(start, start + n)]


def subscribe(name: str, sid: int = 1, demand: int = 0) -> Subscribe:
    """A subscribe frame (keyword arguments are noisy in a script)."""
    return Subscribe(publisher=name, subscriber=sid, initial_demand=demand)


async def still_serving(ctx: Context) -> None:
    """The server serves a new connection normally (after another one misbehaved)."""
    if "range" not in ctx.available:
        return
    peer = await ctx.open()
    await peer.send(subscribe(ctx.name("range", n=3), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "a new connection was not served normally after the violation")
    peer.abort()


async def with_extension(
    ctx: Context, extension: int, name: str, *before: Frame | bytes, also: tuple[tuple[int, str], ...] = ()
) -> Peer:
    """A connection whose clientHello lists ``extension`` (and the ``(id, name)`` pairs ``also``)
    and that has the serverHello; skipped if the serverHello does not list them all. ``before``:
    sent right after the clientHello, before waiting for the serverHello (optimistic, §4.3)."""
    peer = await ctx.open(extensions=(extension, *(id_ for id_, _ in also)))
    if before:
        await peer.send(*before)
    await peer.hello()
    hello = peer.monitor.server_hello
    listed = hello.extensions if hello is not None else ()
    for id_, id_name in ((extension, name), *also):
        if id_ not in listed:
            raise Skip(f"the endpoint does not list extension {id_name} (id {id_}) in its serverHello")
    return peer


async def expect_goodbye_citing(peer: Peer, section: str) -> str:
    """The endpoint says goodbye citing ``section`` (``"21.3"``) and closes; the reason."""
    bye = await peer.goodbye_then_close()
    reason = bye.reason if bye is not None else ""
    check(section in reason, f"the goodbye {reason!r} does not cite §{section}")
    return reason


async def expect_violation(
    ctx: Context, *items: Frame | bytes, hello: bool = True, eof: bool = False, wait_hello: bool = False
) -> Goodbye | None:
    """Send ``items`` (then end the input with ``eof``): the server must say goodbye with a
    reason and close (PROTOCOL.md §10), and keep serving other connections."""
    peer = await ctx.open(hello=hello)
    if wait_hello:
        await peer.hello()
    await peer.send(*items)
    if eof:
        await peer.write_eof()
    bye = await peer.goodbye_then_close()
    if bye is not None:
        check(bye.reason, "the goodbye for a protocol violation gives no reason (PROTOCOL.md §10)")
    await still_serving(ctx)
    return bye


async def open_with(ctx: Context, *items: Frame | bytes) -> Peer:
    """A connection that has sent its hello and ``items``."""
    peer = await ctx.open()
    await peer.send(*items)
    return peer
