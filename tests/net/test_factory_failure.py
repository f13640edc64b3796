"""A factory that raises (PROTOCOL.md §19.2, code 9): the subscribe (or channel open) is refused
with ``publisher 'PATH' could not be created: its factory failed (PROTOCOL.md §19.2)``, ``PATH``
as written up to its first ``?``, the same text as JavaScript's and Java's (js
factory-failure.test.mjs and java FactoryFailureTest send and read it, also against ``rstreams
serve``); the error's text and type stay on the serving side. A factory error with a code is
refused with its own text and code, as in the other bindings. So is a factory that returns
something that is not a Publisher."""

from __future__ import annotations

import logging
from typing import Any, NoReturn

import pytest

import rstreams
from rstreams.net import InternalError, RemoteStreamError, Unavailable, connect, serve
from rstreams.net._routes import failed_message
from rstreams.wire import OnError, OnSubscribe, Subscribe
from testkit.bound import within
from testkit.net import RawPeer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

SECRET = "token=hunter2"
FAILED = "could not be created: its factory failed (PROTOCOL.md §19.2)"


def _broken(*args: Any) -> NoReturn:
    raise RuntimeError(f"secret detail: {SECRET}")


def _busy(*args: Any) -> NoReturn:
    raise Unavailable("try again later")


PUBLISHERS = {"broken": _broken, "broken/{id}": _broken, "busy": _busy}


async def test_the_text_names_the_path_as_written_and_nothing_of_the_error() -> None:
    assert failed_message("broken/a%20b?x=1&y=%zz") == f"publisher 'broken/a%20b' {FAILED}"
    assert failed_message("it's") == f"publisher 'it's' {FAILED}"
    assert failed_message("up?x", kind="channel").startswith("channel 'up' could not be created")


@pytest.mark.parametrize(
    ("name", "path"), [("broken", "broken"), ("broken/a%20b?x=1", "broken/a%20b"), ("broken/é", "broken/é")]
)
async def test_a_factory_that_raises_is_refused_with_code_9_naming_the_path(
    name: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with await serve("tcp://127.0.0.1:0", PUBLISHERS) as server, await connect(server.url) as conn:
        with caplog.at_level(logging.ERROR), pytest.raises(InternalError) as caught:
            await within(conn.request(name))
    assert caught.value.code == 9
    assert caught.value.message == f"publisher '{path}' {FAILED}"
    assert SECRET not in str(caught.value) and "RuntimeError" not in str(caught.value)
    assert SECRET in caplog.text  # the serving side's log has the error


async def test_a_factory_error_with_a_code_is_sent_with_its_text_and_code() -> None:
    async with await serve("tcp://127.0.0.1:0", PUBLISHERS) as server, await connect(server.url) as conn:
        with pytest.raises(Unavailable) as caught:
            await within(conn.request("busy"))
    assert (caught.value.code, caught.value.message) == (8, "try again later")


async def test_a_channel_factory_that_raises_is_refused_alike() -> None:
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"broken/{id}": _broken}) as server,
        await connect(server.url) as conn,
    ):
        with pytest.raises(RemoteStreamError) as caught:
            await within(conn.channel("broken/x?y=1", rstreams.just(b"a")).collect())
    assert caught.value.code == 9
    assert caught.value.message == f"channel 'broken/x' {FAILED}"


@pytest.mark.parametrize(
    ("made", "code", "text"),
    [(None, 2, "no channel named 'odd/x' (PROTOCOL.md §21.3)"), (42, 9, f"channel 'odd/x' {FAILED}")],
    ids=["none", "int"],
)
async def test_a_channel_factory_that_returns_none_means_no_such_channel(
    made: object, code: int, text: str
) -> None:
    """``None`` from a channel factory is "no such channel" (code 2), as a publisher router's
    ``None`` and JavaScript's null; anything else that is not a Publisher is a failed factory."""
    channels: dict[str, Any] = {"odd/{id}": lambda source, params: made}
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels=channels) as server,
        await connect(server.url) as conn,
    ):
        for _ in range(2):  # refused each time; the connection goes on
            with pytest.raises(RemoteStreamError) as caught:
                await within(conn.channel("odd/x?y=1", rstreams.just(b"a")).collect())
            assert (caught.value.code, caught.value.message) == (code, text)


class _RefusesAtSubscribe:
    """A publisher that exists and raises in subscribe() (rule 1.9 broken)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def subscribe(self, subscriber: Any) -> None:
        raise self.error


async def test_a_publisher_whose_subscribe_raises_is_refused_with_code_9_and_no_error_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    offer = {
        "it's": _RefusesAtSubscribe(RuntimeError(f"secret detail: {SECRET}")),
        "busy": _RefusesAtSubscribe(Unavailable("try again later")),
    }
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        with caplog.at_level(logging.ERROR), pytest.raises(InternalError) as caught:
            await within(conn.request("it's?q=1"))
        with pytest.raises(Unavailable) as busy:  # an error with a code: its text and code
            await within(conn.request("busy"))
    assert caught.value.message == (
        "publisher 'it's' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)"
    )
    assert SECRET not in str(caught.value) and "RuntimeError" not in str(caught.value)
    assert SECRET in caplog.text  # the serving side's log has the error
    assert (busy.value.code, busy.value.message) == (8, "try again later")


class _NotCallable:
    subscribe = "not a method"


@pytest.mark.parametrize("made", [42, "a string", _NotCallable()], ids=["int", "str", "subscribe-not-method"])
async def test_a_factory_that_returns_no_publisher_is_refused_as_one_that_raised(
    made: object, caplog: pytest.LogCaptureFixture
) -> None:
    """What is not a Publisher (no callable ``subscribe``) is refused at once, with no onSubscribe,
    code 9 and the factory failure's text, as in JavaScript and Java; the log says what it was."""
    offer = {"odd/{id}": lambda params: made}
    async with await serve("tcp://127.0.0.1:0", offer) as server:
        async with await connect(server.url) as conn:
            with caplog.at_level(logging.ERROR), pytest.raises(InternalError) as caught:
                await within(conn.request("odd/1?q=2"))
        peer = await RawPeer.open(server.url)
        try:
            peer.send(Subscribe(publisher="odd/1", subscriber=1, initial_demand=1))
            refused = await peer.read_until(OnError)
        finally:
            peer.close()
    assert (caught.value.code, caught.value.message) == (9, f"publisher 'odd/1' {FAILED}")
    assert refused.error == f"publisher 'odd/1' {FAILED}"
    assert not [e for e in peer.seen if isinstance(e, OnSubscribe)], peer.seen
    assert f"returned {type(made).__name__}, not a Publisher" in caplog.text
