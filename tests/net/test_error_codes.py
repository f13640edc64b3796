"""Typed remote errors over a real connection (extension error-codes, PROTOCOL.md §19), and
the behaviour without the extension on either side."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rstreams.api import Subscriber, Subscription
from rstreams.errors import ConnectionBrokenError, ReactiveStreamsError
from rstreams.net import (
    InternalError,
    RemoteStreamError,
    Unauthenticated,
    Unauthorized,
    Unavailable,
    UnknownPublisher,
    UnknownPublisherError,
    connect,
    serve,
)
from rstreams.wire import ConnectionConfig, ErrorCode
from testkit.bound import within

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OLD = ConnectionConfig(disabled_extensions=frozenset({6}))


class _Failing:
    """A Publisher that fails every subscriber at once with ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        subscriber.on_subscribe(self.nothing())
        subscriber.on_error(self.error)

    @staticmethod
    def nothing() -> Subscription:
        class _Nothing(Subscription):
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                pass

        return _Nothing()


def _broken_factory(params: dict[str, str]) -> Any:
    raise RuntimeError("secret detail")


OFFER = {
    "busy": _Failing(Unavailable("overloaded")),
    "plain": _Failing(ValueError("bad")),
    "broken": _broken_factory,
}


async def _error(url: str, name: str, config: ConnectionConfig | None = None) -> RemoteStreamError:
    async with await connect(url, config=config) as conn:
        with pytest.raises(RemoteStreamError) as caught:
            await conn.request(name)
    return caught.value


async def test_each_refusal_and_failure_arrives_as_its_typed_error() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        unknown = await _error(server.url, "nope")
        assert isinstance(unknown, UnknownPublisher) and unknown.code == ErrorCode.UNKNOWN_PUBLISHER
        caught_as: BaseException = unknown
        assert isinstance(caught_as, UnknownPublisherError) and isinstance(caught_as, LookupError)
        assert unknown.name == "nope" and unknown.message == "no publisher named 'nope'"
        busy = await _error(server.url, "busy")
        assert type(busy) is Unavailable and busy.code == 8 and "overloaded" in busy.message
        plain = await _error(server.url, "plain")
        assert type(plain) is RemoteStreamError and plain.code == ErrorCode.APPLICATION
        broken = await _error(server.url, "broken")
        assert type(broken) is InternalError and "secret" not in str(broken)
        assert isinstance(broken, ReactiveStreamsError)


@pytest.mark.parametrize(("server_config", "client_config"), [(OLD, None), (None, OLD)])
async def test_a_peer_without_the_extension_gets_the_plain_error_as_before(
    server_config: ConnectionConfig | None, client_config: ConnectionConfig | None
) -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, config=server_config) as server:
        for name, text in (("nope", "no publisher named 'nope'"), ("busy", "Unavailable: overloaded")):
            error = await _error(server.url, name, client_config)
            assert type(error) is RemoteStreamError and error.code is None
            assert error.message == text


async def test_auth_refusals_have_their_codes() -> None:
    async def authenticate(credentials: Any) -> str | None:
        return "ann" if credentials.token == "good" else None

    async with (
        await serve(
            "tcp://127.0.0.1:0",
            {"busy": OFFER["busy"], "open": OFFER["plain"]},
            authenticate=authenticate,
            authorize=lambda principal, name: name == "open",
        ) as server,
        await connect(server.url, auth="good") as conn,
    ):
        with pytest.raises(Unauthorized) as caught:
            await conn.request("busy")
        assert caught.value.code == ErrorCode.UNAUTHORIZED
        with pytest.raises(Unauthenticated):
            await conn.publisher("busy", auth="wrong").first()


async def test_a_goodbye_code_reaches_the_streams_it_ends() -> None:
    subscribed = asyncio.Event()

    class _Hanging:
        def subscribe(self, subscriber: Subscriber[Any]) -> None:
            subscriber.on_subscribe(_Failing(ValueError()).nothing())
            subscribed.set()

    async with (
        await serve("tcp://127.0.0.1:0", {"hang": _Hanging()}) as server,
        await connect(server.url) as conn,
    ):
        pending = asyncio.ensure_future(conn.request("hang"))
        await within(subscribed.wait(), 10)
        await next(iter(server.connections)).aclose("shutting down")
        with pytest.raises(ConnectionBrokenError) as caught:
            await pending
        assert caught.value.code == ErrorCode.NORMAL


def _refusing_factory(params: dict[str, str]) -> Any:
    raise UnknownPublisherError(f"rooms/{params['room']}")


async def test_unknown_names_are_refused_alike_whether_missed_or_refused_by_a_factory() -> None:
    """A name no key or pattern matches, a function offer's None and a factory raising
    UnknownPublisherError: the same unknown-publisher refusal (code 2). The side's own text names
    the path as written (PROTOCOL.md §5.5); the factory's names what the factory gave."""
    offers: list[Any] = [
        {"rooms/{room}": _refusing_factory, "other/{x}": _refusing_factory},
        lambda path, params: None,
    ]
    for offer in offers:
        async with await serve("tcp://127.0.0.1:0", offer) as server:
            for name in ("rooms/r%20x?y=1", "nope%2Fx?z=2"):
                unknown = await _error(server.url, name)
                by_factory = name.startswith("rooms") and isinstance(offer, dict)
                path = "rooms/r x" if by_factory else name.partition("?")[0]
                assert isinstance(unknown, UnknownPublisher) and unknown.code == ErrorCode.UNKNOWN_PUBLISHER
                assert unknown.message == f"no publisher named '{path}'"
