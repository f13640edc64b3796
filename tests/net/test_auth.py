"""Extension auth on real sockets (PROTOCOL.md §15): hooks, refusals, ordering, and no leaked secrets."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings
from typing import Any

import pytest

import rstreams
from rstreams.errors import (
    AuthenticationError,
    AuthNotOfferedError,
    AuthRefusedError,
    AuthRequiredError,
    AuthTimeoutError,
    ConnectionBrokenError,
)
from rstreams.net import Credentials, RemoteStreamError, Token, UserPassword, connect, serve
from rstreams.net._auth import ServerAuth
from rstreams.wire import (
    Cancel,
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ExtensionMessage,
    ExtensionReceived,
    OnError,
    OnNext,
    OnSubscribe,
    Request,
    ServerHello,
    Subscribe,
    encode,
)
from rstreams.wire._auth import encode_credentials, encode_subscribe_credentials
from rstreams.wire._parser import FrameParser
from rstreams.wire.extensions import AUTH, AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS
from testkit.bound import within
from testkit.net import RawPeer, connection, memory_pair, run_virtual

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

SECRET = "Zebra-Secret-9137"
ADMIN = "Admin-Key-4411"
OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello"), "vault": rstreams.just(b"gold")}


def check(credentials: Credentials) -> str | None:
    """Tokens SECRET -> "alice", ADMIN -> "admin"; ("bob", SECRET) -> "bob"; else refused."""
    if credentials == Token(SECRET):
        return "alice"
    if credentials == Token(ADMIN):
        return "admin"
    if credentials == UserPassword("bob", SECRET):
        return "bob"
    return None


def only_admin_in_vault(principal: Any, name: str) -> bool:
    return name != "vault" or principal == "admin"


async def test_token_accepted_and_principal_known() -> None:
    seen: list[Any] = []
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, on_connection=seen.append
    ) as server:
        conn = await connect(server.url, auth=SECRET)
        assert await within(conn.request("greeting")) == b"hello"  # sent optimistically, held, then served
        assert conn.authenticated
        assert seen[0].principal == "alice"
        await within(conn.aclose())


async def test_user_password_with_an_async_hook() -> None:
    async def slow_check(credentials: Credentials) -> str | None:
        await asyncio.sleep(0.05)
        return check(credentials)

    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=slow_check) as server:
        conn = await connect(server.url, auth=("bob", SECRET))
        results = await within(asyncio.gather(*(conn.request("greeting") for _ in range(5))))
        assert results == [b"hello"] * 5
        await within(conn.aclose())


@pytest.mark.parametrize("auth", ["wrong-token", ("bob", "wrong"), ("mallory", SECRET)])
async def test_refused_credentials_end_the_connection(auth: Any) -> None:
    """Goodbye "authentication failed"; other clients go on."""
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        good = await connect(server.url, auth=SECRET)
        conn = await connect(server.url, auth=auth)
        with pytest.raises(ConnectionBrokenError, match=r"authentication failed \(PROTOCOL.md §15.3\)"):
            await within(conn.request("greeting"))
        assert not conn.authenticated
        assert await within(good.request("greeting")) == b"hello"
        await within(good.aclose())
        await within(conn.aclose())


async def test_a_server_requiring_auth_refuses_a_client_without_it() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        conn = await connect(server.url)
        with pytest.raises(ConnectionBrokenError, match=r"authentication required.*extension auth \(id 2\)"):
            await within(conn.request("greeting"))


async def test_a_client_with_credentials_refuses_a_server_without_auth() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        conn = await connect(server.url, auth=SECRET)
        with pytest.raises(Exception, match=r"does not offer extension auth \(id 2\)"):
            await within(conn.request("greeting"))
        await within(conn.aclose())


async def test_authorize_refuses_per_publisher_and_the_connection_goes_on() -> None:
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, authorize=only_admin_in_vault
    ) as server:
        conn = await connect(server.url, auth=SECRET)
        with pytest.raises(RemoteStreamError) as refused:
            await within(conn.request("vault"))
        assert refused.value.message == (
            "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)"
        )
        assert await within(conn.request("greeting")) == b"hello"
        admin = await connect(server.url, auth=ADMIN)
        assert await within(admin.request("vault")) == b"gold"
        await within(conn.aclose())
        await within(admin.aclose())


async def test_refusals_quote_the_path_as_written_as_every_binding_does() -> None:
    """Both §15.4 refusals quote the name's path as §5.5 does (up to its first '?', as written,
    in plain single quotes): a quote or a control character is not escaped, the query not shown."""
    name = "it's\x01/a%20b?key=x'y"
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, authorize=lambda principal, name: False
    ) as server:
        conn = await connect(server.url, auth=SECRET)
        with pytest.raises(RemoteStreamError) as refused:
            await within(conn.request(name))
        assert refused.value.message == (
            "unauthorized: subscribe to 'it's\x01/a%20b' is not allowed for this principal "
            "(PROTOCOL.md §15.4)"
        )
        with pytest.raises(RemoteStreamError) as refused:
            await within(conn.publisher(name, auth="nonsense").collect())
        assert refused.value.message == (
            "unauthenticated: subscribe to 'it's\x01/a%20b' needs valid credentials (PROTOCOL.md §15.4)"
        )
        await within(conn.aclose())


async def test_optional_auth_serves_unauthenticated_clients_as_principal_none() -> None:
    principals: list[Any] = []

    def authorize(principal: Any, name: str) -> bool:
        principals.append(principal)
        return only_admin_in_vault(principal, name)

    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, authorize=authorize, auth_required=False
    ) as server:
        anonymous = await connect(server.url)
        assert await within(anonymous.request("greeting")) == b"hello"
        with pytest.raises(RemoteStreamError, match="unauthorized: subscribe to 'vault'"):
            await within(anonymous.request("vault"))
        assert principals == [None, None]
        await within(anonymous.aclose())


async def test_per_subscription_credentials() -> None:
    """conn.publisher(name, auth=...): that subscription is checked with its own credentials."""
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, authorize=only_admin_in_vault
    ) as server:
        conn = await connect(server.url, auth=SECRET)
        vault = conn.publisher("vault", auth=ADMIN)  # subscribed before the serverHello arrived
        assert await within(vault.collect()) == [b"gold"]
        with pytest.raises(RemoteStreamError, match="unauthenticated: subscribe to 'vault' needs valid"):
            await within(conn.publisher("vault", auth="nonsense").collect())
        with pytest.raises(RemoteStreamError, match="unauthorized"):
            await within(conn.publisher("vault").collect())
        assert repr(vault).count(ADMIN) == 0
        await within(conn.aclose())


async def test_per_subscription_credentials_need_an_authenticating_connection() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        conn = await connect(server.url)
        with pytest.raises(ValueError, match=r"connect\(url, auth=...\)") as refused:
            conn.publisher("greeting", auth=ADMIN)
        assert ADMIN not in str(refused.value)
        assert await within(conn.request("greeting")) == b"hello"
        await within(conn.aclose())


async def test_optimistic_subscribes_are_held_until_authentication_is_settled() -> None:
    """A raw client sends subscribe before authenticate: the server answers it only after
    `authenticated` (§15.3), even while an async hook runs."""
    release = asyncio.Event()

    async def gated(credentials: Credentials) -> str | None:
        await release.wait()
        return check(credentials)

    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=gated) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.send(
            Subscribe(publisher="greeting", subscriber=1, initial_demand=1),
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))),
            Request(subscriber=1, demand=5),  # demand for the held subscribe adds up
        )
        await peer.read_until(ServerHello)
        with pytest.raises(TimeoutError):  # nothing is answered while the hook runs
            await peer.read_until(OnSubscribe, deadline=0.2)
        release.set()
        await peer.read_until(OnNext)
        kinds = [hex(e.type) if isinstance(e, ExtensionReceived) else type(e).__name__ for e in peer.seen]
        assert kinds[:4] == ["ServerHello", hex(AUTH_OK), "OnSubscribe", "OnNext"]
        peer.close()


async def test_held_subscribes_end_with_a_refused_authentication() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.send(
            Subscribe(publisher="greeting", subscriber=1, initial_demand=1),
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token("bad"))),
        )
        closed = await peer.read_until(ConnectionClosed)
        assert closed.reason == "authentication failed (PROTOCOL.md §15.3)"
        assert not [e for e in peer.events if isinstance(e, OnSubscribe | OnNext | OnError)]
        peer.close()


async def test_authenticate_must_come_in_time() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check, handshake_timeout=0.2) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        closed = await peer.read_until(ConnectionClosed)
        assert closed.reason.startswith("authentication timeout") and "§15.3" in closed.reason
        peer.close()


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (b"", "empty"),
        (b"\x03\x01x", "unknown kind 3"),
        (b"\x01\x05ab", "truncated"),
        (b"\x01\x01ab", "trailing"),
        (b"\x02\x01a", "truncated"),
        (b"\x01\x02\xff\xfe", "not UTF-8"),
    ],
)
async def test_malformed_credentials_get_a_goodbye(payload: bytes, why: str) -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.writer.write(encode(ExtensionMessage(type=AUTH_AUTHENTICATE, payload=payload)))
        closed = await peer.read_until(ConnectionClosed)
        assert "malformed" in closed.reason and why in closed.reason and "§15.5" in closed.reason
        peer.close()


async def test_authenticate_twice_and_wrong_directions_get_a_goodbye() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        message = encode(ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))))
        peer.writer.write(message + message)
        closed = await peer.read_until(ConnectionClosed)
        assert closed.reason == "authenticate sent twice (PROTOCOL.md §15.5)"
        peer.close()
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.writer.write(encode(ExtensionMessage(type=AUTH_OK)))
        closed = await peer.read_until(ConnectionClosed)
        assert "sent to a server" in closed.reason
        peer.close()


async def test_an_authenticate_accepted_in_a_read_that_then_breaks_the_protocol_sends_nothing() -> None:
    """An accepted authenticate and, later in the same read, a violation: the read's events
    before the violation are still routed, but the core has closed, so the gate must not answer
    ``authenticated``; the connection ends with the violation's goodbye and nothing reaches the
    loop's exception handler (found by fuzz/fuzz_deployed.py auth)."""
    escaped: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: escaped.append(context))
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, hello=False, extensions=(AUTH.id,))
        authenticate = ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET)))
        peer.writer.write(encode(ClientHello(extensions=(AUTH.id,))) + encode(authenticate) + b"\x1d")
        closed = await peer.read_until(ConnectionClosed)
        assert "unknown message type 0x1d" in closed.reason and "§" in closed.reason
        peer.close()
    assert escaped == []


async def test_an_async_check_cancelled_before_it_started_leaves_no_coroutine_unawaited() -> None:
    """An async authenticate hook's check, and in the same read a violation: the connection
    closes before the check's task has run once, and the hook's coroutine is closed with it,
    not left for the garbage collector to warn about ("coroutine ... was never awaited", an
    error under this suite's filterwarnings; found by fuzz/fuzz_deployed.py auth)."""
    started: list[Credentials] = []

    async def async_check(credentials: Credentials) -> str | None:
        started.append(credentials)
        return check(credentials)

    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=async_check) as server:
        peer = await RawPeer.open(server.url, hello=False, extensions=(AUTH.id,))
        authenticate = ExtensionMessage(
            type=AUTH_AUTHENTICATE, payload=encode_credentials(UserPassword("bob", SECRET))
        )
        peer.writer.write(encode(ClientHello(extensions=(AUTH.id,))) + encode(authenticate) + b"\x1d")
        closed = await peer.read_until(ConnectionClosed)
        assert "unknown message type 0x1d" in closed.reason
        peer.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.collect()
    assert started == []  # (the check never ran: the case under test)


async def test_subscribe_credentials_from_a_raw_client() -> None:
    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=check, authorize=only_admin_in_vault
    ) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.send(
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))),
            ExtensionMessage(
                type=AUTH_SUBSCRIBE_CREDENTIALS, payload=encode_subscribe_credentials(4, Token(ADMIN))
            ),
            Subscribe(publisher="vault", subscriber=4, initial_demand=1),
        )
        element = await peer.read_until(OnNext)
        assert element == OnNext(subscriber=4, element=b"gold")
        peer.close()


async def test_secrets_never_appear_in_logs_reprs_errors_or_reasons(caplog: pytest.LogCaptureFixture) -> None:
    """A hook that raises with the secret in its message is logged by exception type only."""

    def leaky(credentials: Credentials) -> str:
        raise RuntimeError(f"cannot check {credentials!r} / {getattr(credentials, 'token', '')}")

    texts: list[str] = []
    caplog.set_level(logging.DEBUG)
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=leaky) as server:
        for auth in (SECRET, ("bob", SECRET), Token(SECRET), UserPassword("bob", SECRET)):
            conn = await connect(server.url, auth=auth)
            texts += [repr(conn), repr(conn.publisher("greeting")), repr(conn.publisher("vault", auth=auth))]
            with pytest.raises(ConnectionBrokenError) as failed:
                await within(conn.request("greeting"))
            texts += [str(failed.value), repr(failed.value), str(failed.value.__cause__)]
            await within(conn.aclose())
    texts += [
        repr(Token(SECRET)),
        str(Token(SECRET)),
        repr(UserPassword("bob", SECRET)),
        str(UserPassword("u", SECRET)),
    ]
    with pytest.raises(TypeError) as bad:
        await connect("tcp://127.0.0.1:1", auth=[SECRET])
    texts.append(str(bad.value))
    texts.append(caplog.text)
    assert "RuntimeError" in caplog.text  # the hook's failure is reported...
    for text in texts:
        assert SECRET not in text  # ...but never with the secret


async def test_bad_hooks_are_refused_early() -> None:
    with pytest.raises(TypeError, match="authenticate must be callable"):
        await serve("tcp://127.0.0.1:0", OFFER, authenticate="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs an authenticate hook"):
        await serve("tcp://127.0.0.1:0", OFFER, auth_required=True)


async def test_a_hook_that_never_answers_is_bounded_by_the_handshake_timeout() -> None:
    """On a virtual clock over memory transports (its own loop, in a worker thread): the client's
    hello is in at time 0 however loaded the machine is, so the timer that ends the connection
    is the authentication's."""

    async def hangs(credentials: Credentials) -> str:
        await asyncio.Event().wait()
        return "never"

    async def main() -> None:
        auth = ServerAuth(authenticate=hangs, authorize=None, required=False)
        server = connection(client=False, offer=OFFER, server_auth=auth, handshake_timeout=0.2)
        client = connection(client=True, credentials=Token(SECRET))
        memory_pair(client, server)
        with pytest.raises(AuthTimeoutError, match=r"authentication timeout \(not settled within 0.2 s"):
            await within(client.request("greeting"), 10)
        assert asyncio.get_running_loop().time() == pytest.approx(0.2)
        await within(client.aclose(), 10)

    await asyncio.to_thread(run_virtual, main)


async def test_subscribes_are_answered_in_arrival_order_while_a_check_runs() -> None:
    """A subscribe whose own credentials take long to check holds back the later ones (§15.3)."""

    async def slow_for_admin(credentials: Credentials) -> str | None:
        if credentials == Token(ADMIN):
            await asyncio.sleep(0.2)
        return check(credentials)

    async with await serve(
        "tcp://127.0.0.1:0", OFFER, authenticate=slow_for_admin, authorize=only_admin_in_vault
    ) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        peer.send(
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))),
            ExtensionMessage(
                type=AUTH_SUBSCRIBE_CREDENTIALS, payload=encode_subscribe_credentials(1, Token(ADMIN))
            ),
            Subscribe(publisher="vault", subscriber=1, initial_demand=1),
            Subscribe(publisher="greeting", subscriber=2, initial_demand=1),
            Subscribe(
                publisher="vault", subscriber=3, initial_demand=1
            ),  # the connection's principal: refused
        )
        answers: list[tuple[str, int]] = []
        while len(answers) < 3:
            event = await peer.read_until(OnSubscribe | OnError)
            answers.append((type(event).__name__, event.subscriber))
        assert answers == [("OnSubscribe", 1), ("OnSubscribe", 2), ("OnError", 3)]
        peer.close()


class _Wire:
    """What the server wrote to a raw peer, frame by frame (the peer's core drops the
    onComplete that acknowledges its cancel, so the test reads the bytes themselves)."""

    def __init__(self, peer: RawPeer) -> None:
        self.frames: list[Any] = []
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        feed = peer.core.receive_data

        def recording(data: Any, limit: int = 0) -> int:
            self.frames += parser.feed(bytes(data))
            return feed(data)

        peer.core.receive_data = recording  # type: ignore[method-assign]

    def kinds(self) -> list[str]:
        return [_kind(f) for f in self.frames]


def _kind(frame: Any) -> str:
    if isinstance(frame, ExtensionMessage):
        return hex(frame.type)
    return f"{type(frame).__name__}({getattr(frame, 'subscriber', '')})"


async def test_a_held_cancelled_subscribe_is_acknowledged_only_after_authenticated() -> None:
    """§15.3: a held subscribe gets no answer before `authenticated`, its cancel's onComplete
    included: not before authenticate is sent, not while it is checked; then in its turn."""
    release = asyncio.Event()

    async def gated(credentials: Credentials) -> str | None:
        await release.wait()
        return check(credentials)

    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=gated) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        wire = _Wire(peer)
        peer.send(Subscribe(publisher="greeting", subscriber=1, initial_demand=1), Cancel(subscriber=1))
        with pytest.raises(TimeoutError):  # before authenticate: nothing but the hello
            await peer.read_until(OnSubscribe, deadline=0.2)
        assert wire.kinds() == ["ServerHello()"] and peer.core.id_in_use(1)
        peer.send(
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))),
            Subscribe(publisher="greeting", subscriber=2, initial_demand=1),
        )
        with pytest.raises(TimeoutError):  # while the hook runs: still nothing
            await peer.read_until(OnSubscribe, deadline=0.2)
        assert wire.kinds() == ["ServerHello()"]
        release.set()
        await peer.read_until(OnNext)
        assert wire.kinds()[:4] == ["ServerHello()", hex(AUTH_OK), "OnComplete(1)", "OnSubscribe(2)"]
        assert not peer.core.id_in_use(1)
        peer.close()


async def test_a_held_cancelled_subscribe_gets_no_answer_when_authentication_fails() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        wire = _Wire(peer)
        peer.send(
            Subscribe(publisher="greeting", subscriber=1, initial_demand=1),
            Cancel(subscriber=1),
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token("bad"))),
        )
        closed = await peer.read_until(ConnectionClosed)
        assert closed.reason == "authentication failed (PROTOCOL.md §15.3)"
        assert wire.kinds() == ["ServerHello()", "Goodbye()"]
        peer.close()


async def test_a_cancel_of_a_served_subscription_is_acknowledged_at_once() -> None:
    """Once a subscribe is no longer held, its cancel is acknowledged as usual (§5.4)."""
    async with await serve("tcp://127.0.0.1:0", OFFER, authenticate=check) as server:
        peer = await RawPeer.open(server.url, extensions=(AUTH.id,))
        wire = _Wire(peer)
        peer.send(
            ExtensionMessage(type=AUTH_AUTHENTICATE, payload=encode_credentials(Token(SECRET))),
            Subscribe(publisher="greeting", subscriber=1, initial_demand=0),
        )
        await peer.read_until(OnSubscribe)
        peer.send(Cancel(subscriber=1), Subscribe(publisher="greeting", subscriber=2, initial_demand=1))
        await peer.read_until(OnNext)
        assert wire.kinds()[2:5] == ["OnSubscribe(1)", "OnComplete(1)", "OnSubscribe(2)"]
        assert not peer.core.id_in_use(1)
        peer.close()


# -- the client's error types: by what it knows and the goodbye's code, not by the words --------
WITHOUT_CODES = ConnectionConfig(disabled_extensions=frozenset({6}))
"""A server without extension error-codes (as Java's): its goodbyes carry no code (§19)."""


@pytest.mark.parametrize("codes", [True, False], ids=["error-codes", "no-codes"])
@pytest.mark.parametrize(
    ("required", "credentials", "expected", "code"),
    [
        (True, Token("wrong"), AuthRefusedError, 3),  # §15.3: authentication failed
        (True, None, AuthRequiredError, 3),  # §15.2: authentication required
        (None, Token(SECRET), AuthNotOfferedError, None),  # §15.2: the client's own goodbye
    ],
    ids=["refused", "required", "not-offered"],
)
async def test_a_connection_ended_by_auth_fails_with_the_case_s_type(
    required: bool | None,
    credentials: Credentials | None,
    expected: type[AuthenticationError],
    code: int | None,
    codes: bool,
) -> None:
    """Each way §15.2 and §15.3 end a connection is a subclass of AuthenticationError (a
    ConnectionBrokenError) on the client, with or without the goodbye's code; its message is
    the goodbye's reason, as before."""

    async def main() -> None:
        auth = None if required is None else ServerAuth(authenticate=check, authorize=None, required=required)
        config = None if codes else WITHOUT_CODES
        server = connection(client=False, offer=OFFER, server_auth=auth, config=config)
        client = connection(client=True, credentials=credentials)
        memory_pair(client, server)
        with pytest.raises(ConnectionBrokenError) as failed:
            await within(client.request("greeting"), 10)
        assert type(failed.value) is expected
        assert failed.value.__cause__ is None
        if expected is not AuthNotOfferedError:
            assert failed.value.code == (code if codes else None)
        await within(client.aclose(), 10)

    await asyncio.to_thread(run_virtual, main)


@pytest.mark.parametrize("codes", [True, False], ids=["error-codes", "no-codes"])
async def test_a_goodbye_after_authenticated_is_no_auth_error(codes: bool) -> None:
    """The server's goodbye after it accepted the credentials (its own aclose), with or without a
    code, is a plain ConnectionBrokenError; so is one a client without credentials gets from a
    server whose auth is optional, when it says why with a code other than 3."""

    async def main() -> None:
        auth = ServerAuth(authenticate=check, authorize=None, required=False)
        config = None if codes else WITHOUT_CODES
        for credentials in (Token(SECRET), None):
            if credentials is None and not codes:
                continue  # a codeless goodbye to it is taken for §15.2's (AuthRequiredError says so)
            server = connection(client=False, offer=OFFER, server_auth=auth, config=config)
            client = connection(client=True, credentials=credentials)
            memory_pair(client, server)
            assert await within(client.request("greeting"), 10) == b"hello"
            assert client.authenticated is (credentials is not None)
            await within(server.aclose(), 10)
            with pytest.raises(ConnectionBrokenError) as failed:
                await within(client.request("greeting"), 10)
            assert type(failed.value) is ConnectionBrokenError, failed.value
            await within(client.aclose(), 10)

    await asyncio.to_thread(run_virtual, main)


async def test_a_goodbye_worded_like_auth_s_is_no_auth_error() -> None:
    """A server's goodbye whose reason reads like §15.3's, but with code 0 (normal) and after
    ``authenticated``, does not make an AuthenticationError: the words decide nothing."""

    async def main() -> None:
        auth = ServerAuth(authenticate=check, authorize=None, required=True)
        server = connection(client=False, offer=OFFER, server_auth=auth)
        client = connection(client=True, credentials=Token(SECRET))
        memory_pair(client, server)
        assert await within(client.request("greeting"), 10) == b"hello"
        await within(server.aclose("authentication failed (PROTOCOL.md §15.3)"), 10)
        with pytest.raises(ConnectionBrokenError, match="authentication failed") as failed:
            await within(client.request("greeting"), 10)
        assert type(failed.value) is ConnectionBrokenError
        await within(client.aclose(), 10)

    await asyncio.to_thread(run_virtual, main)
