"""A qualifier (errorCode, goodbyeCode, contentType, subscribeMetadata) must be followed by the
message it qualifies (PROTOCOL.md §17.1, §18.1, §19.1): anything else ends the connection, on
every path the core reads that message by (the common cases written out in ``receive``
included), in the words the Java and JavaScript bindings use."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    OnComplete,
    OnError,
    OnNext,
    OnSubscribe,
    Qualifier,
    Request,
    ServerHello,
    Side,
    Subscribe,
    encode,
)

pytestmark = pytest.mark.timeout(10)

ERROR_CODE_1 = b"\x98\x02\x01\x02"  # errorCode(subscriber 1, code 2)
CONTENT_TYPE_1 = b"\x90\x04\x01a/b"  # contentType(subscriber 1, "a/b")
METADATA_1 = b"\x94\x02\x01\x00"  # subscribeMetadata(subscriber 1, no entries)
GOODBYE_CODE = b"\x99\x01\x0b"  # goodbyeCode(11)


def _client(*, onsubscribe: bool = True, **options: bool) -> Connection:
    """A client whose subscriber 1 is subscribed (demand 2) and, with ``onsubscribe``, answered."""
    core = Connection(Side.CLIENT, ConnectionConfig(extensions=frozenset({4, 6})), **options)
    core.receive_data(encode(ServerHello(extensions=(4, 6))))
    core.send(Subscribe(publisher="p", subscriber=1, initial_demand=2))
    if onsubscribe:
        core.receive_data(encode(OnSubscribe(subscriber=1)))
    core.data_to_send()
    core.events_received()
    return core


def _server() -> Connection:
    """A server with the peer's subscriber 1 open."""
    core = Connection(Side.SERVER, ConnectionConfig(extensions=frozenset({5, 6})))
    core.receive_data(encode(ClientHello(extensions=(5, 6))) + encode(Subscribe(publisher="p", subscriber=1)))
    core.data_to_send()
    core.events_received()
    return core


def _reason(core: Connection, data: bytes) -> str | None:
    core.receive_data(data)
    closed = [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    return closed[0].reason if closed else None


@pytest.mark.parametrize(
    ("core", "data", "reason"),
    [
        (  # the order in which rstreams once kept the code for a later onError of subscriber 1
            lambda: _client(),
            ERROR_CODE_1 + encode(OnComplete(subscriber=1)),
            "errorCode (0x98) for subscriber 1 followed by message type 0x0c"
            ", not by its onError (PROTOCOL.md §19.1)",
        ),
        (  # an element within demand: receive's common case
            lambda: _client(),
            ERROR_CODE_1 + encode(OnNext(subscriber=1, element=b"a")),
            "errorCode (0x98) for subscriber 1 followed by message type 0x08"
            ", not by its onError (PROTOCOL.md §19.1)",
        ),
        (  # the same, batched
            lambda: _client(batch_on_next=True),
            ERROR_CODE_1 + encode(OnNext(subscriber=1, element=b"a")) * 2,
            "errorCode (0x98) for subscriber 1 followed by message type 0x08"
            ", not by its onError (PROTOCOL.md §19.1)",
        ),
        (  # a whole answer read at once
            lambda: _client(onsubscribe=False, answers=True),
            ERROR_CODE_1
            + encode(OnSubscribe(subscriber=1))
            + encode(OnNext(subscriber=1, element=b"a"))
            + encode(OnComplete(subscriber=1)),
            "errorCode (0x98) for subscriber 1 followed by message type 0x07"
            ", not by its onError (PROTOCOL.md §19.1)",
        ),
        (
            lambda: _client(onsubscribe=False),
            CONTENT_TYPE_1 + encode(OnError(subscriber=1, error="x")),
            "contentType (0x90) for subscriber 1 followed by message type 0x0d"
            ", not by its onSubscribe (PROTOCOL.md §17.1)",
        ),
        (
            lambda: _client(),
            ERROR_CODE_1 + GOODBYE_CODE,
            "errorCode (0x98) for subscriber 1 followed by message type 0x99"
            ", not by its onError (PROTOCOL.md §19.1)",
        ),
        (  # a request within what the table allows: receive's common case
            _server,
            GOODBYE_CODE + encode(Request(subscriber=1, demand=1)),
            "goodbyeCode (0x99) followed by message type 0x05, not by a goodbye (PROTOCOL.md §19.1)",
        ),
        (
            _server,
            METADATA_1 + encode(Request(subscriber=1, demand=1)),
            "subscribeMetadata (0x94) for subscriber 1 followed by message type 0x05, not by its subscribe "
            "(PROTOCOL.md §18.1)",
        ),
        (
            _server,
            METADATA_1 + ERROR_CODE_1,
            "subscribeMetadata (0x94) for subscriber 1 followed by message type 0x98, not by its subscribe "
            "(PROTOCOL.md §18.1)",
        ),
        (
            _server,
            GOODBYE_CODE * 2,
            "two goodbyeCode (0x99) messages before one goodbye (PROTOCOL.md §19.1)",
        ),
    ],
)
def test_a_qualifier_not_followed_by_what_it_qualifies_ends_the_connection(
    core: Callable[[], Connection], data: bytes, reason: str
) -> None:
    assert _reason(core(), data) == reason


@pytest.mark.parametrize("split", [False, True])
def test_a_qualifier_followed_by_its_message_still_qualifies_it(split: bool) -> None:
    """In one read or two (the qualifier held across reads)."""
    core = _client()
    data = ERROR_CODE_1 + encode(OnError(subscriber=1, error="x"))
    if split:
        core.receive_data(data[:4])
        core.receive_data(data[4:])
    else:
        core.receive_data(data)
    events = core.events_received()
    assert events == [Qualifier(type=0x98, subscriber=1, value=2), OnError(subscriber=1, error="x")]
