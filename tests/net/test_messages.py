"""Extension messages on real sockets (PROTOCOL.md §20): handlers, credit, drops, auth, old peers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError, LocalProtocolError, set_unhandled_error_hook
from rstreams.net import Connection, Message, MessageCreditError, Token, connect, serve
from rstreams.wire import (
    ConnectionClosed,
    ConnectionConfig,
    ExtensionMessage,
    ExtensionReceived,
    OnNext,
    Subscribe,
)
from rstreams.wire._auth import encode_credentials
from rstreams.wire._messages import MESSAGE, MESSAGE_CREDIT, decode_credit, encode_credit, encode_message
from rstreams.wire.extensions import AUTH, AUTH_AUTHENTICATE, KEEPALIVE, MESSAGES
from testkit.bound import within
from testkit.net import RawPeer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@contextlib.asynccontextmanager
async def client(handlers: Any = None, **server_options: Any) -> AsyncIterator[Connection]:
    """A server with ``server_options`` and a client connected to it."""
    server = await serve("tcp://127.0.0.1:0", {}, handlers=handlers, **server_options)
    async with server, await connect(server.url) as conn:
        yield conn


class Inbox:
    """A sync handler that records messages and wakes waiters."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.changed = asyncio.Event()

    def __call__(self, message: Message) -> None:
        self.messages.append(message)
        self.changed.set()

    async def wait_for(self, count: int) -> list[Message]:
        while len(self.messages) < count:
            self.changed.clear()
            await within(self.changed.wait())
        return self.messages


class Gate:
    """An async handler that holds every message until released; counts those held at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.running = 0
        self.most = 0
        self.done: list[bytes] = []
        self.all_done = asyncio.Event()
        self.expected = 4

    async def __call__(self, message: Message) -> None:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await self.release.wait()
        finally:
            self.running -= 1
        self.done.append(message.payload)
        if len(self.done) >= self.expected:
            self.all_done.set()


async def test_a_client_sends_to_a_pattern_handler_with_its_params() -> None:
    inbox = Inbox()
    async with client({"events/{kind}": inbox}) as conn:
        await conn.send("events/click?x=1", b"abc")
        await conn.send("events/key", bytearray(b"k"))
        first, second = await inbox.wait_for(2)
    assert first == Message(name="events/click?x=1", params={"x": "1", "kind": "click"}, payload=b"abc")
    assert second.params == {"kind": "key"} and second.payload == b"k"


async def test_the_server_sends_to_handlers_the_client_offers() -> None:
    inbox = Inbox()
    made: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server = await serve("tcp://127.0.0.1:0", {}, on_connection=made.set_result)
    async with server, await connect(server.url, handlers={"notify": inbox}):
        await within((await within(made)).send("notify", b"to the client"))
        (message,) = await inbox.wait_for(1)
    assert message.payload == b"to the client"


async def test_a_slow_async_handler_holds_credit_and_the_sender_waits_or_fails() -> None:
    """Credit 2: two messages run in the handler; a third waits (wait=True) or raises
    (wait=False); the receiver never holds more than two (§20.3)."""
    gate = Gate()
    config = ConnectionConfig(max_messages_in_flight=2)
    async with client({"slow": gate}, config=config) as conn:
        await conn.send("slow", b"1")
        await conn.send("slow", b"2")
        with pytest.raises(MessageCreditError, match=r"no message credit.*§20\.3.*wait=True"):
            await conn.send("slow", b"x", wait=False)
        third = asyncio.ensure_future(conn.send("slow", b"3"))
        fourth = asyncio.ensure_future(conn.send("slow", b"4"))
        await asyncio.sleep(0.05)
        assert not third.done() and not fourth.done()
        gate.release.set()
        await within(asyncio.gather(third, fourth))
        await within(gate.all_done.wait())
    assert gate.done == [b"1", b"2", b"3", b"4"]  # in order: waiters are served first come first
    assert gate.most == 2


async def test_unknown_handlers_and_raising_handlers_give_their_credit_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With credit 1, every dropped message must give it back, or the next send would hang (§20.4)."""
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda error, context: reported.append((error, context)))

    def broken(message: Message) -> None:
        raise RuntimeError("sync boom")

    async def broken_later(message: Message) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("async boom")

    inbox = Inbox()
    handlers = {"broken": broken, "later": broken_later, "ok": inbox}
    config = ConnectionConfig(max_messages_in_flight=1)
    try:
        with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
            async with client(handlers, config=config) as conn:
                for name in ("nobody", "broken", "later", "ok"):
                    await within(conn.send(name, b""))
                await inbox.wait_for(1)
    finally:
        set_unhandled_error_hook(previous)
    assert "message to 'nobody' dropped: no such handler (PROTOCOL.md §20.4)" in caplog.text
    assert [(str(e), c) for e, c in reported] == [
        ("sync boom", "the message handler for 'broken'"),
        ("async boom", "the message handler for 'later'"),
    ]


async def test_authorize_is_asked_for_messages_as_for_subscribes(caplog: pytest.LogCaptureFixture) -> None:
    inbox = Inbox()
    asked: list[tuple[Any, str]] = []

    def authorize(principal: Any, name: str) -> bool:
        asked.append((principal, name))
        return not name.startswith("admin/")

    async def authenticate(credentials: Any) -> str | None:
        await asyncio.sleep(0.01)  # messages arriving meanwhile wait for the verdict
        return "alice" if credentials == Token("t") else None

    handlers = {"admin/{x}": inbox, "public": inbox}
    async with await serve(
        "tcp://127.0.0.1:0", {}, handlers=handlers, authenticate=authenticate, authorize=authorize
    ) as server:
        with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
            async with await connect(server.url, auth="t") as conn:
                await conn.send("admin/reset", b"no")
                await conn.send("public", b"yes")
                (message,) = await inbox.wait_for(1)
    assert message.payload == b"yes"
    assert asked == [("alice", "admin/reset"), ("alice", "public")]
    assert "message to 'admin/reset' dropped: unauthorized" in caplog.text


async def test_send_to_a_peer_without_the_extension_is_a_clear_error() -> None:
    """An old client (no id 7 in its hello) keeps being served; sending to it names the extension."""
    conns: list[Connection] = []
    offer = {"one": rstreams.just(b"1")}
    async with await serve("tcp://127.0.0.1:0", offer, on_connection=conns.append) as server:
        peer = await RawPeer.open(server.url, extensions=(KEEPALIVE.id,))
        peer.send(Subscribe(publisher="one", subscriber=1, initial_demand=1))
        assert (await peer.read_until(OnNext)).element == b"1"
        with pytest.raises(LocalProtocolError, match=r"extension messages \(id 7\).*PROTOCOL\.md §20\.1"):
            await within(conns[0].send("x", b""))
        assert not any(isinstance(e, ExtensionReceived) and e.type == MESSAGE_CREDIT for e in peer.seen)
        peer.close()


async def test_the_server_grants_credit_and_a_flood_beyond_it_gets_a_goodbye() -> None:
    config = ConnectionConfig(max_messages_in_flight=3)
    async with await serve("tcp://127.0.0.1:0", {}, config=config) as server:
        peer = await RawPeer.open(server.url, extensions=(MESSAGES.id,))
        credit = await peer.read_until(ExtensionReceived)
        assert credit.type == MESSAGE_CREDIT and decode_credit(credit.payload) == 3
        flood = [ExtensionMessage(type=MESSAGE, payload=encode_message("nobody", b"x")) for _ in range(4)]
        peer.send(*flood)  # all at once, without waiting for the credit to come back
        closed = await peer.read_until(ConnectionClosed)
        assert "beyond the granted message credit" in closed.reason
        assert "(PROTOCOL.md §20.3)" in closed.reason
        peer.close()


@pytest.mark.parametrize(
    ("message_type", "payload", "words"),
    [
        (MESSAGE_CREDIT, encode_credit(0), "count must be 1"),
        (MESSAGE_CREDIT, encode_credit(1) + b"\x00", "after its count"),
        (MESSAGE, b"\x05ab", "message name of 5 bytes"),
        (MESSAGE, b"\x02\xff\xfe", "not valid UTF-8"),
    ],
)
async def test_malformed_messages_get_a_goodbye_citing_20_2(
    message_type: int, payload: bytes, words: str
) -> None:
    async with await serve("tcp://127.0.0.1:0", {}) as server:
        peer = await RawPeer.open(server.url, extensions=(MESSAGES.id,))
        await peer.read_until(ExtensionReceived)
        peer.send(ExtensionMessage(type=message_type, payload=payload))
        closed = await peer.read_until(ConnectionClosed)
        assert words in closed.reason and "(PROTOCOL.md §20.2)" in closed.reason
        peer.close()


async def test_a_message_before_authentication_is_settled_waits_for_it() -> None:
    """A raw client sends its message right after authenticate; the async hook settles later."""
    release = asyncio.Event()
    inbox = Inbox()

    async def authenticate(credentials: Any) -> str:
        await release.wait()
        return "alice"

    options: dict[str, Any] = {"handlers": {"h": inbox}, "authenticate": authenticate}
    async with await serve("tcp://127.0.0.1:0", {}, **options) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id, MESSAGES.id))
        await peer.read_until(ExtensionReceived)
        peer.send(
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token("t"))),
            ExtensionMessage(type=MESSAGE, payload=encode_message("h", b"early")),
        )
        await asyncio.sleep(0.05)
        assert inbox.messages == []
        release.set()
        (message,) = await inbox.wait_for(1)
        assert message.payload == b"early"
        peer.close()


async def test_senders_waiting_for_credit_fail_when_the_connection_ends() -> None:
    gate = Gate()
    config = ConnectionConfig(max_messages_in_flight=1)
    async with await serve("tcp://127.0.0.1:0", {}, config=config, handlers={"slow": gate}) as server:
        conn = await connect(server.url)
        await conn.send("slow", b"1")
        waiting = asyncio.ensure_future(conn.send("slow", b"2"))
        await asyncio.sleep(0.05)
        await conn.aclose()
        with pytest.raises(ConnectionBrokenError, match="not sent"):
            await within(waiting)
        with pytest.raises(ConnectionBrokenError):
            await conn.send("slow", b"3")


async def test_bad_arguments_are_refused_where_they_are_made() -> None:
    with pytest.raises(TypeError, match="handler 'x' must be callable"):
        await serve("tcp://127.0.0.1:0", {}, handlers={"x": 1})  # type: ignore[dict-item]
    async with client() as conn:
        with pytest.raises(TypeError, match="payload is bytes"):
            await conn.send("x", "text")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"max_string_length.*§20\.2"):
            await conn.send("x", bytes(70_000))
