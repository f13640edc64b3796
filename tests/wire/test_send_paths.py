"""One send path: every way of sending a frame writes the bytes of frames.py's encoder table.

For each frame type a Hypothesis property compares what the connection queues with
``encode(frame)`` (the table): through :meth:`Connection.send`, through the fast paths
(``on_next``, ``on_next_many``, ``request``, ``send_subscribe``, ``send_on_subscribe``,
``send_on_complete``), which take fields instead of a frame. The fast paths must also leave
the same state behind (credit, subscriptions) as ``send`` does.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.errors import LocalProtocolError
from rstreams.wire import (
    Cancel,
    ClientHello,
    Connection,
    ExtensionMessage,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    StreamState,
    Subscribe,
    encode,
    extensions,
)
from rstreams.wire.config import ConnectionConfig
from rstreams.wire.frames import on_next_head, on_next_header, write_on_next
from testkit.wire import connected, ids, texts, uints

UNBOUNDED = 2**63 - 1
SETTINGS = settings(max_examples=60, deadline=None)


def out(conn: Connection) -> bytes:
    return b"".join(conn.data_to_send())


def publishing(sid: int, *, demand: int = UNBOUNDED, element_size: int = 0) -> Connection:
    """A server on which the peer subscribed with ``sid`` and that accepted it."""
    conn = connected(Side.SERVER)
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid, initial_demand=demand)))
    conn.send(OnSubscribe(subscriber=sid, element_size=element_size))
    out(conn)
    conn.events_received()
    return conn


def subscribing(sid: int, demand: int = 0) -> Connection:
    """A client that subscribed with our id ``sid``."""
    conn = connected(Side.CLIENT)
    conn.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
    out(conn)
    return conn


elements = st.binary(max_size=300)
big_or_small = st.one_of(elements, st.integers(16 * 1024, 64 * 1024).map(bytes))
"""Up to split_threshold: larger elements go out as parts (test_connection_split.py)."""


# -- the frames.py encoders agree with each other --------------------------------------------
@SETTINGS
@given(ids, elements, st.booleans())
def test_on_next_encoders_agree_with_the_table(sid: int, element: bytes, fixed: bool) -> None:
    """write_on_next and on_next_head lay out the bytes encode(OnNext) does, with or without elementSize."""
    size = len(element) if fixed and element else 0
    expected = encode(OnNext(subscriber=sid, element=element), element_size=size)
    written = bytearray()
    write_on_next(written, on_next_header(sid), element, size)
    assert bytes(written) == expected
    assert on_next_head(on_next_header(sid), len(element), size) + element == expected


# -- one property per frame type: send(frame) and the fast path write the table's bytes -------
@SETTINGS
@given(ids, big_or_small)
def test_on_next(sid: int, element: bytes) -> None:
    """OnNext: send(frame), on_next and on_next_many write encode(frame) and take one credit."""
    frame = OnNext(subscriber=sid, element=element)
    via_send, via_fast, via_old = (
        publishing(sid, demand=5),
        publishing(sid, demand=5),
        publishing(sid, demand=5),
    )
    via_send.send(frame)
    via_fast.on_next(sid, element)
    via_old.on_next_many(sid, [element])
    assert out(via_send) == out(via_fast) == out(via_old) == encode(frame)
    assert via_send.credit(sid) == via_fast.credit(sid) == via_old.credit(sid) == 4


@SETTINGS
@given(ids, st.integers(1, 32), st.integers(1, 12))
def test_on_next_fixed_size(sid: int, size: int, count: int) -> None:
    """OnNext on a stream with an elementSize: no length prefix, the same bytes on every path."""
    items = [bytes([i]) * size for i in range(count)]
    via_send, via_fast = publishing(sid, element_size=size), publishing(sid, element_size=size)
    for item in items:
        via_send.send(OnNext(subscriber=sid, element=item))
    via_fast.on_next_many(sid, items)
    expected = b"".join(encode(OnNext(subscriber=sid, element=e), element_size=size) for e in items)
    assert out(via_send) == out(via_fast) == expected


@SETTINGS
@given(ids, st.lists(elements, min_size=1, max_size=20), st.booleans())
def test_on_next_many(sid: int, items: list[bytes], same_length: bool) -> None:
    """on_next_many (equal lengths: one join; mixed: per element) writes encode(OnNext) per element."""
    if same_length:
        items = [items[0]] * len(items)
    via_send, via_fast = publishing(sid, demand=100), publishing(sid, demand=100)
    for item in items:
        via_send.send(OnNext(subscriber=sid, element=item))
    via_fast.on_next_many(sid, items)
    assert (
        out(via_send) == out(via_fast) == b"".join(encode(OnNext(subscriber=sid, element=e)) for e in items)
    )
    assert via_send.credit(sid) == via_fast.credit(sid) == 100 - len(items)


@SETTINGS
@given(ids, st.integers(1, 2**64 - 1))
def test_request(sid: int, demand: int) -> None:
    """Request: send(frame) and request write encode(Request) with demand capped at 2**63-1."""
    via_send, via_fast = subscribing(sid), subscribing(sid)
    via_send.send(Request(subscriber=sid, demand=demand))
    via_fast.request(sid, demand)
    expected = encode(Request(subscriber=sid, demand=min(demand, UNBOUNDED)))
    assert out(via_send) == out(via_fast) == expected


@SETTINGS
@given(texts, ids, uints)
def test_subscribe(publisher: str, sid: int, demand: int) -> None:
    """Subscribe: send(frame), send_subscribe and send_subscribe_unchecked write encode(Subscribe)
    with the initial demand capped at 2**63-1, and leave the same subscription behind."""
    via_send, via_fast, via_unchecked = connected(Side.CLIENT), connected(Side.CLIENT), connected(Side.CLIENT)
    via_send.send(Subscribe(publisher=publisher, subscriber=sid, initial_demand=demand))
    via_fast.send_subscribe(publisher, sid, demand)
    via_unchecked.send_subscribe_unchecked(publisher, sid, demand)
    expected = encode(Subscribe(publisher=publisher, subscriber=sid, initial_demand=min(demand, UNBOUNDED)))
    assert out(via_send) == out(via_fast) == out(via_unchecked) == expected
    for conn in (via_send, via_fast, via_unchecked):
        assert conn.id_in_use(sid) and sid in conn.ids_in_use
        assert conn.subscriptions(publishing=False) == {sid: StreamState.SUBSCRIBED}


def test_a_subscribe_sent_again_writes_encode_subscribe() -> None:
    """The same subscribe again, once its id is free (a request repeated), is written from the
    bytes of the last one: they are encode(Subscribe) whatever was sent between."""
    conn = connected(Side.CLIENT)
    sent = [
        ("echo", 1, 1),
        ("echo", 1, 1),
        ("echo", 2, 1),
        ("echo", 1, 1),
        ("\u00e9", 1, 2**64 - 1),
        ("\u00e9", 1, 2**64 - 1),
    ]
    for publisher, sid, demand in sent:
        conn.send_subscribe_unchecked(publisher, sid, demand)
        capped = min(demand, UNBOUNDED)
        assert out(conn) == encode(Subscribe(publisher=publisher, subscriber=sid, initial_demand=capped))
        conn.receive_data(encode(OnSubscribe(subscriber=sid)) + encode(OnComplete(subscriber=sid)))
        conn.events_received()
        assert not conn.id_in_use(sid)
    conn.send_subscribe_unchecked("echo", 1, 1)
    with pytest.raises(LocalProtocolError):  # its id in use: refused before anything is written
        conn.send_subscribe_unchecked("echo", 1, 1)
    assert out(conn) == encode(Subscribe(publisher="echo", subscriber=1, initial_demand=1))


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ((b"p", 1, 0), TypeError),
        (("p", "1", 0), TypeError),
        (("p", 1, 1.0), TypeError),
        (("p", -1, 0), ValueError),
        (("p", 1, 2**64), ValueError),
        (("\ud800", 1, 0), ValueError),  # a lone surrogate cannot be UTF-8
    ],
)
def test_subscribe_fast_path_checks_fields_as_the_frame_does(fields: tuple[object, ...], error: type) -> None:
    """send_subscribe raises what Subscribe(...) raises for the same fields, and queues nothing."""
    with pytest.raises(error):
        Subscribe(publisher=fields[0], subscriber=fields[1], initial_demand=fields[2])  # type: ignore[arg-type]
    conn = connected(Side.CLIENT)
    out(conn)
    with pytest.raises(error):
        conn.send_subscribe(*fields)  # type: ignore[arg-type]
    assert out(conn) == b""
    assert conn.subscriptions(publishing=False) == {}


@SETTINGS
@given(ids, st.integers(0, 2**20))
def test_on_subscribe(sid: int, element_size: int) -> None:
    """OnSubscribe: send(frame) and send_on_subscribe write encode(OnSubscribe) and make the stream
    ACTIVE with its credit."""
    via_send, via_fast = connected(Side.SERVER), connected(Side.SERVER)
    for conn in (via_send, via_fast):
        conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid, initial_demand=3)))
        out(conn)
    via_send.send(OnSubscribe(subscriber=sid, element_size=element_size))
    via_fast.send_on_subscribe(sid, element_size)
    expected = encode(OnSubscribe(subscriber=sid, element_size=element_size))
    assert out(via_send) == out(via_fast) == expected
    for conn in (via_send, via_fast):
        assert conn.subscriptions(publishing=True) == {sid: StreamState.ACTIVE} and conn.credit(sid) == 3


@SETTINGS
@given(ids, st.integers(1, 16), st.integers(1, 3000))
def test_on_next_packed(sid: int, size: int, count: int) -> None:
    """OnNextPacked: send(frame) writes encode(frame), small or handed over whole, and takes count credits."""
    data = bytes(i % 251 for i in range(size * count))
    frame = OnNextPacked(subscriber=sid, count=count, elements=data)
    conn = publishing(sid, demand=5000, element_size=size)
    conn.send(frame)
    assert out(conn) == encode(frame, element_size=size)
    assert conn.credit(sid) == 5000 - count


@SETTINGS
@given(ids)
def test_on_complete(sid: int) -> None:
    """OnComplete: send(frame) and send_on_complete write encode(frame) and close the stream."""
    via_send, via_fast = publishing(sid), publishing(sid)
    via_send.send(OnComplete(subscriber=sid))
    via_fast.send_on_complete(sid)
    assert out(via_send) == out(via_fast) == encode(OnComplete(subscriber=sid))
    for conn in (via_send, via_fast):
        assert conn.subscriptions(publishing=True) == {}
    via_send.send(OnComplete(subscriber=sid))  # recently closed: dropped quietly
    via_fast.send_on_complete(sid)
    assert out(via_send) == out(via_fast) == b""


def _subscribed(sid: int, demand: int, config: ConnectionConfig | None = None) -> Connection:
    """A server on which the peer subscribed with ``sid``, not answered yet."""
    conn = Connection(Side.SERVER, config)
    conn.receive_data(encode(ClientHello(extensions=tuple(sorted(config.extensions)) if config else ())))
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid, initial_demand=demand)))
    out(conn)
    conn.events_received()
    return conn


@SETTINGS
@given(ids, st.binary(max_size=300), st.booleans(), st.sampled_from([None, "text/plain"]), st.booleans())
def test_send_answer(sid: int, element: bytes, fixed: bool, media_type: str | None, typed: bool) -> None:
    """send_answer writes what send_on_subscribe, on_next and send_on_complete write in turn (with
    the contentType when the extension is active), and closes the stream as they do."""
    size = len(element) if fixed and element else 0
    config = ConnectionConfig(extensions=frozenset({extensions.CONTENT_TYPES.id})) if typed else None
    via_three, via_one = _subscribed(sid, 1, config), _subscribed(sid, 1, config)
    via_three.send_on_subscribe(sid, size, media_type)
    via_three.on_next(sid, element)
    via_three.send_on_complete(sid)
    assert via_one.send_answer(sid, size, media_type, element)
    assert out(via_one) == out(via_three)
    for conn in (via_three, via_one):
        assert conn.subscriptions(publishing=True) == {}
    assert not via_one.send_answer(sid, size, media_type, element)  # closed: nothing done
    assert out(via_one) == b""


def test_send_answer_declines_what_it_does_not_write_whole() -> None:
    """No demand, an answered subscription, a wrong size, an element that would be handed over:
    ``False`` and nothing queued, the stream as it was."""
    assert not _subscribed(1, 0).send_answer(1, 0, None, b"x")
    answered = _subscribed(1, 1)
    answered.send_on_subscribe(1, 0)
    out(answered)
    assert not answered.send_answer(1, 0, None, b"x")
    assert not _subscribed(1, 1).send_answer(1, 4, None, b"x")
    large = _subscribed(1, 1)
    assert not large.send_answer(1, 0, None, bytes(64 * 1024))
    for conn in (answered, large):
        assert out(conn) == b""
    assert large.subscriptions(publishing=True) == {1: StreamState.SUBSCRIBED}


@pytest.mark.parametrize(
    ("send", "frame"),
    [
        (lambda conn: conn.send_on_subscribe("1", 0), lambda: OnSubscribe(subscriber="1")),  # type: ignore[arg-type]
        (lambda conn: conn.send_on_subscribe(1, -1), lambda: OnSubscribe(subscriber=1, element_size=-1)),
        (lambda conn: conn.send_on_subscribe(2**64, 0), lambda: OnSubscribe(subscriber=2**64)),
        (lambda conn: conn.send_on_complete(1.0), lambda: OnComplete(subscriber=1.0)),  # type: ignore[arg-type]
        (lambda conn: conn.send_on_complete(-1), lambda: OnComplete(subscriber=-1)),
    ],
)
def test_signal_fast_paths_check_fields_as_the_frames_do(send: Any, frame: Any) -> None:
    """send_on_subscribe and send_on_complete raise what the frame raises for the same fields,
    and queue nothing."""
    with pytest.raises((TypeError, ValueError)) as expected:
        frame()
    conn = publishing(1)
    with pytest.raises(type(expected.value)):
        send(conn)
    assert out(conn) == b""
    assert conn.subscriptions(publishing=True) == {1: StreamState.ACTIVE}


@SETTINGS
@given(ids, texts)
def test_on_error(sid: int, error: str) -> None:
    """OnError: send(frame) writes encode(frame) and closes the stream."""
    conn = publishing(sid)
    conn.send(OnError(subscriber=sid, error=error))
    assert out(conn) == encode(OnError(subscriber=sid, error=error))
    assert conn.subscriptions(publishing=True) == {}


@SETTINGS
@given(ids)
def test_cancel(sid: int) -> None:
    """Cancel: send(frame) writes encode(frame); a second cancel is a no-op (rule 3.7)."""
    conn = subscribing(sid)
    conn.send(Cancel(subscriber=sid))
    assert out(conn) == encode(Cancel(subscriber=sid))
    conn.send(Cancel(subscriber=sid))
    conn.request(sid, 1)  # rule 3.6: a no-op after cancel
    assert out(conn) == b""
    assert conn.subscriptions(publishing=False) == {sid: StreamState.CANCELLED}


@SETTINGS
@given(texts)
def test_goodbye(reason: str) -> None:
    """Goodbye: send(frame) writes encode(frame)."""
    conn = connected(Side.CLIENT)
    conn.send(Goodbye(reason=reason))
    assert out(conn) == encode(Goodbye(reason=reason))


@SETTINGS
@given(st.binary(max_size=100))
def test_extension_message(payload: bytes) -> None:
    """ExtensionMessage: send(frame) writes encode(frame) once the extension is active."""
    conn = Connection(Side.SERVER, ConnectionConfig(extensions=frozenset({extensions.AUTH.id})))
    conn.receive_data(encode(ClientHello(extensions=(extensions.AUTH.id,))))
    out(conn)
    frame = ExtensionMessage(type=extensions.AUTH_OK, payload=payload)
    conn.send(frame)
    assert out(conn) == encode(frame)


@SETTINGS
@given(ids, st.integers(1, 40), st.lists(st.binary(min_size=0, max_size=200), min_size=1, max_size=4))
def test_parts(sid: int, threshold: int, items: list[bytes]) -> None:
    """OnNextPart/OnNextLastPart: an element above split_threshold goes out as the table's part frames,
    threshold-sized, numbered per subscription; smaller ones as onNext."""
    conn = Connection(Side.SERVER, ConnectionConfig(split_threshold=threshold))
    conn.receive_data(encode(ClientHello()))
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid, initial_demand=UNBOUNDED)))
    conn.send(OnSubscribe(subscriber=sid))
    out(conn)
    expected = b""
    element_id = 0
    for item in items:
        conn.on_next(sid, item)
        if len(item) <= threshold:
            expected += encode(OnNext(subscriber=sid, element=item))
            continue
        pieces = [item[i : i + threshold] for i in range(0, len(item), threshold)]
        for piece in pieces[:-1]:
            expected += encode(OnNextPart(subscriber=sid, element_id=element_id, data=piece))
        expected += encode(OnNextLastPart(subscriber=sid, element_id=element_id, data=pieces[-1]))
        element_id = (element_id + 1) & 0x7F
    assert out(conn) == expected


@SETTINGS
@given(st.sampled_from([Side.CLIENT, Side.SERVER]), st.frozensets(uints, max_size=6))
def test_hellos(side: Side, offered: frozenset[int]) -> None:
    """ClientHello/ServerHello: the hello queued at construction is the table's encoding of this
    side's hello, listing the configured extensions in ascending order."""
    conn = Connection(side, ConnectionConfig(extensions=offered))
    hello = ClientHello if side is Side.CLIENT else ServerHello
    assert out(conn) == encode(hello(extensions=tuple(sorted(offered))))


# -- misuse raises at once and queues nothing ------------------------------------------------
def test_subscribe_on_subscribe_and_on_complete_misuse() -> None:
    """send() refuses a subscribe on an id in use, a second onSubscribe and an onComplete for an
    id that never existed, naming the subscriber; nothing is queued."""
    client = subscribing(1)
    with pytest.raises(LocalProtocolError) as exc:
        client.send(Subscribe(publisher="p", subscriber=1))  # id still in use (§5.3)
    assert exc.value.subscriber == 1
    server = publishing(2)
    with pytest.raises(LocalProtocolError) as again:
        server.send(OnSubscribe(subscriber=2))  # already ACTIVE
    assert again.value.subscriber == 2
    with pytest.raises(LocalProtocolError) as unknown:
        server.send(OnComplete(subscriber=9))  # never existed
    assert unknown.value.subscriber == 9
    assert out(client) == out(server) == b""


def test_on_next_on_a_stream_not_yet_accepted_is_misuse() -> None:
    """on_next before onSubscribe raises and queues nothing, like send(OnNext)."""
    conn = connected(Side.SERVER)
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=1, initial_demand=5)))
    out(conn)
    with pytest.raises(LocalProtocolError) as fast:
        conn.on_next(1, b"x")
    with pytest.raises(LocalProtocolError) as table:
        conn.send(OnNext(subscriber=1, element=b"x"))
    assert fast.value.subscriber == table.value.subscriber == 1
    assert out(conn) == b""


def test_parts_and_hellos_are_not_sent_by_hand() -> None:
    """send() refuses frames that only the connection makes, naming what to do instead."""
    conn = connected(Side.CLIENT)
    with pytest.raises(LocalProtocolError, match="split_threshold"):
        conn.send(ClientHello())
