"""Extension metadata in the core (PROTOCOL.md §18): subscribeMetadata written adjacent to its
subscribe, read back as a Metadata event right before it, checked and bounded, and absent when
not negotiated."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstreams.errors import RemoteProtocolError
from rstreams.wire import (
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    ExtensionMessage,
    LimitExceededError,
    Metadata,
    OnError,
    Side,
    Subscribe,
    _metadata,
    encode,
)
from rstreams.wire import Connection as Core
from rstreams.wire._errors import ExtensionError
from rstreams.wire._metadata import (
    KNOWN_KEYS,
    REMEMBERED_METADATA,
    WINDOW_RETRY,
    WINDOW_TRIES,
    _decode,
    decode_metadata,
    encode_entries,
    encode_metadata,
)
from rstreams.wire._varint import Incomplete, decode_varint
from rstreams.wire.extensions import METADATA, SUBSCRIBE_METADATA
from testkit.wire import ConnectionPair, parser

ON = ConnectionConfig(extensions=frozenset({METADATA.id}))
OFF = ConnectionConfig()
TRACE = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _server(config: ConnectionConfig = ON) -> Core:
    conn = Core(Side.SERVER, config)
    conn.receive_data(encode(ClientHello(extensions=(METADATA.id,))))
    conn.data_to_send()
    conn.events_received()
    return conn


def _md(sid: int, entries: dict[str, bytes]) -> bytes:
    return encode(ExtensionMessage(type=SUBSCRIBE_METADATA, payload=encode_metadata(sid, entries)))


def test_metadata_goes_right_before_its_subscribe_and_comes_back_as_an_event_before_it() -> None:
    pair = ConnectionPair(ON, ON)
    pair.client.send_subscribe("news", 1, 1, encode_entries({"traceparent": TRACE, "x": b""}))
    data = b"".join(pair.client.data_to_send())
    assert data == _md(1, {"traceparent": TRACE, "x": b""}) + encode(
        Subscribe(publisher="news", subscriber=1, initial_demand=1)
    )
    pair.server.receive_data(data)
    events = pair.server.events_received()
    assert events == [
        Metadata({"traceparent": TRACE, "x": b""}),
        Subscribe(publisher="news", subscriber=1, initial_demand=1),
    ]
    assert type(events[0]) is Metadata and list(events[0]) == ["traceparent", "x"]  # as sent
    assert events[0].traceparent == TRACE.decode()


_KEYS = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=64)
_ENTRIES = st.dictionaries(_KEYS, st.binary(max_size=300), max_size=6)


@given(sid=st.integers(0, 2**20), entries=_ENTRIES)
def test_entries_round_trip_through_the_core_across_the_one_byte_varint_boundaries(
    sid: int, entries: dict[str, bytes]
) -> None:
    # ids and lengths on both sides of 0x80 take the inline one-byte path or the varint one
    pair = ConnectionPair(ON, ON)
    pair.client.send_subscribe("news", sid, 1, encode_entries(entries))
    data = b"".join(pair.client.data_to_send())
    assert data == _md(sid, entries) + encode(Subscribe(publisher="news", subscriber=sid, initial_demand=1))
    assert decode_metadata(encode_metadata(sid, entries), max_bytes=1 << 20, max_entries=64) == (sid, entries)
    pair.server.receive_data(data)
    events = pair.server.events_received()
    assert type(events[0]) is Metadata and dict(events[0]) == entries and list(events[0]) == list(entries)
    assert events[1] == Subscribe(publisher="news", subscriber=sid, initial_demand=1)


def _plain_entries(entries: dict[object, object]) -> bytes | type[Exception]:
    """Entries as §18.1 lays them out, byte by byte (no remembered keys, no text layout), or the
    class of error encoding them must raise (the first wrong key or value, in order)."""
    out = bytearray(_varint(len(entries)))
    for key, value in entries.items():
        if not isinstance(key, str) or not 0 < len(key) <= 64 or not set(key) <= set(_KEY_ALPHABET):
            return ValueError
        if isinstance(value, str):
            try:
                value = value.encode()
            except UnicodeEncodeError:
                return UnicodeEncodeError
        elif not isinstance(value, bytes | bytearray):
            return TypeError
        out += _varint(len(key)) + key.encode() + _varint(len(value)) + value
    return bytes(out)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes((n,)))


_KEY_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_."
_ASCII = st.text(st.characters(max_codepoint=0x7F), max_size=140)
_VALUES = st.one_of(
    _ASCII,  # the common values, taken whole as text
    _ASCII.map(str.encode),
    st.text(st.characters(max_codepoint=0x7F), min_size=120, max_size=135),  # around the one-byte length
    st.text(max_size=140),  # non-ASCII and lone surrogates included
    st.binary(max_size=140),
)


@given(
    entries=st.dictionaries(st.sampled_from(["traceparent", "x-pad", "k" * 64]) | _KEYS, _VALUES, max_size=6)
    | st.dictionaries(  # a wrong key or value among right ones
        st.sampled_from(["traceparent", "k0", "K0", "", "k" * 65]) | st.integers(0, 2),
        _VALUES | st.builds(bytearray, st.binary(max_size=4)) | st.integers(),
        max_size=4,
    )
    | st.dictionaries(  # around the one-byte count
        st.sampled_from(["x", "y"]) | _KEYS, st.sampled_from(["", "1"]), min_size=120, max_size=130
    ),
    again=st.booleans(),
)
def test_encoding_gives_the_bytes_of_the_plain_layout_or_refuses_as_it_does(
    entries: dict[object, object], again: bool
) -> None:
    """Remembered keys, remembered entries and the text layout change nothing: the bytes are
    §18.1's, and what is not an entry is refused with the same error class, the first time or
    again: looked up and found, laid out with its keys known, or between lookups."""
    expected = _plain_entries(entries)
    with (
        patch.dict(_metadata._encoded_keys, clear=True),
        patch.dict(_metadata._KEY_TEXTS, clear=True),
        patch.dict(_metadata._encoded, clear=True),
        patch.object(_metadata, "_misses", 0),
        patch.object(_metadata, "_skips", 0),
    ):
        for turn in range(1 + 3 * again):  # again: the keys (and maybe the entries) are remembered now
            if turn == 2:
                _metadata._encoded.clear()  # laid out again with its keys known
            if turn == 3:
                _metadata._skips = 2  # between lookups: laid out without one
            if isinstance(expected, bytes):
                assert encode_entries(entries) == expected  # type: ignore[arg-type]
            else:
                with pytest.raises(expected):
                    encode_entries(entries)  # type: ignore[arg-type]


@pytest.mark.parametrize("sid", [0, 127, 128, 16_383, 16_384])
@pytest.mark.parametrize("value_size", [0, 120, 121, 122, 123, 124, 125, 126, 127, 128, 200])
def test_the_message_length_is_a_correct_varint_at_every_boundary(sid: int, value_size: int) -> None:
    entries = {"k": b"v" * value_size}  # payload: sid, count 1, key length, key, value length, value
    pair = ConnectionPair(ON, ON)
    pair.client.send_subscribe("news", sid, 1, encode_entries(entries))
    data = b"".join(pair.client.data_to_send())
    assert data == _md(sid, entries) + encode(Subscribe(publisher="news", subscriber=sid, initial_demand=1))


def test_a_key_longer_than_64_bytes_is_refused_when_encoding() -> None:
    with pytest.raises(ValueError, match=r"1\.\.64 of a-z"):
        encode_entries({"k" * 65: b""})


@pytest.mark.parametrize(("client", "server"), [(ON, OFF), (OFF, ON)])
def test_without_the_extension_the_subscribe_goes_alone(
    client: ConnectionConfig, server: ConnectionConfig
) -> None:
    pair = ConnectionPair(client, server)
    pair.client.send_subscribe("news", 1, 1, encode_entries({"x": b"1"}))
    assert b"".join(pair.client.data_to_send()) == encode(
        Subscribe(publisher="news", subscriber=1, initial_demand=1)
    )


def test_a_subscribe_refused_by_the_core_drops_its_metadata() -> None:
    conn = _server(ConnectionConfig(extensions=frozenset({METADATA.id}), max_name_length=2))
    conn.receive_data(_md(1, {"x": b"1"}) + encode(Subscribe(publisher="long", subscriber=1)))
    assert conn.events_received() == []
    assert any(isinstance(f, OnError) for f in parser().feed(b"".join(conn.data_to_send())))
    conn.receive_data(encode(Subscribe(publisher="ok", subscriber=2)))
    assert conn.events_received() == [Subscribe(publisher="ok", subscriber=2)]  # nothing left over


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (b"\x01\x01\x01X\x00", "a-z"),
        (b"\x01\x01\x00\x00", "1..64"),
        (b"\x01\x02\x01x\x00\x01x\x00", "twice"),
        (b"\x01\x01\x01x\x05ab", "runs past"),
        (b"\x01\x01\x01x\x00\x00", "trailing"),
        (b"\x01\x02\x01x\x00", "truncated"),
    ],
)
def test_a_malformed_payload_is_a_connection_error_citing_18_1(payload: bytes, words: str) -> None:
    conn = _server()
    conn.receive_data(encode(ExtensionMessage(type=SUBSCRIBE_METADATA, payload=payload)))
    closed = conn.events_received()[-1]
    assert isinstance(closed, ConnectionClosed) and words in closed.reason and "§18.1" in closed.reason


def test_two_before_one_subscribe_or_another_id_are_connection_errors() -> None:
    for data, words in (
        (_md(1, {}) + _md(1, {}), "two subscribeMetadata (0x94) messages before one subscribe"),
        (
            _md(2, {}) + encode(Subscribe(publisher="p", subscriber=1)),
            "subscribeMetadata (0x94) for subscriber 2"
            " followed by message type 0x04 for subscriber 1, not by its subscribe",
        ),
    ):
        conn = _server()
        conn.receive_data(data)
        closed = conn.events_received()[-1]
        assert isinstance(closed, ConnectionClosed) and words in closed.reason and "§18.1" in closed.reason


def test_limits_bound_size_and_entries_citing_11() -> None:
    config = ConnectionConfig(
        extensions=frozenset({METADATA.id}), max_metadata_bytes=40, max_metadata_entries=2
    )
    conn = _server(config)
    conn.receive_data(_md(1, {"k": b"v" * 50}))
    closed = conn.events_received()[-1]
    assert (
        isinstance(closed, ConnectionClosed)
        and "max_metadata_bytes=40" in closed.reason
        and "§11" in closed.reason
    )
    with pytest.raises(LimitExceededError, match="max_metadata_entries=2"):  # refused from the count
        decode_metadata(b"\x01\x03", max_bytes=100, max_entries=2)


def test_keys_past_the_remembered_ones_are_still_checked_both_ways() -> None:
    """Checked keys are remembered (KNOWN_KEYS, both ways); past that bound keys are checked
    each time, and a wrong key is refused whatever was remembered before it."""
    many = {f"k{i}": str(i).encode() for i in range(KNOWN_KEYS + 50)}
    for _ in range(2):  # the second time most keys are remembered ones
        payload = encode_metadata(7, many)
        assert decode_metadata(payload, max_bytes=1 << 20, max_entries=len(many)) == (7, many)
    with pytest.raises(ValueError, match=r"a-z 0-9"):
        encode_entries({"K0": b""})  # not remembered as "k0" is: upper case is no key
    bad = encode_metadata(1, {"k0": b""}).replace(b"k0", b"K0")
    with pytest.raises(ExtensionError, match=r"malformed subscribeMetadata payload \(a metadata key is"):
        decode_metadata(bad, max_bytes=1 << 20, max_entries=8)


_PAYLOADS = st.one_of(
    st.binary(max_size=40),
    st.builds(  # well-formed, then maybe cut, grown or with one byte changed: near the valid ones
        lambda sid, entries, cut, extra, flip: _mangled(encode_metadata(sid, entries), cut, extra, flip),
        st.integers(0, 300),
        st.dictionaries(
            st.sampled_from(["traceparent", "x", "k0", "x-pad"]), st.binary(max_size=140), max_size=3
        ),
        st.integers(0, 3),
        st.binary(max_size=2),
        st.none() | st.tuples(st.integers(0, 400), st.integers(0, 255)),
    ),
)


def _mangled(payload: bytes, cut: int, extra: bytes, flip: tuple[int, int] | None) -> bytes:
    data = bytearray(payload[: len(payload) - cut] + extra)
    if flip is not None and data:
        data[flip[0] % len(data)] = flip[1]
    return bytes(data)


def _outcome(decode: object, payload: bytes) -> object:
    try:
        return decode(payload, 200, 2)  # type: ignore[operator]
    except (ExtensionError, LimitExceededError) as error:
        return type(error), str(error)


@given(payload=_PAYLOADS)
def test_the_quick_pass_decodes_exactly_as_the_careful_decoder(payload: bytes) -> None:
    """decode_metadata's quick pass gives what the careful decoder gives, errors included."""
    decode_metadata(encode_metadata(1, {"traceparent": b"", "x": b"", "k0": b"", "x-pad": b""}), 200, 4)
    assert _outcome(decode_metadata, payload) == _outcome(_decode, payload)


def test_the_same_payload_again_is_the_same_metadata_even_for_another_id() -> None:
    conn = _server()
    entries = {"traceparent": TRACE, "x-tenant": b"acme"}
    seen = []
    for sid in (1, 2, 1):
        conn.receive_data(_md(sid, entries) + encode(Subscribe(publisher="p", subscriber=sid)))
        events = conn.events_received()
        assert events[0] == entries and events[1] == Subscribe(publisher="p", subscriber=sid)
        seen.append(events[0])
        conn.send_on_complete(sid)
    assert seen[0] is seen[1] is seen[2]  # decoded once: read-only, so shared
    conn.receive_data(_md(3, {"x-tenant": b"other"}) + encode(Subscribe(publisher="p", subscriber=3)))
    assert conn.events_received()[0] == {"x-tenant": b"other"}


def test_a_remembered_payload_still_needs_its_subscribe_next_and_only_one() -> None:
    """The remembered decoding skips no check: the id must match, and two in a row fail."""
    for data, words in (
        (
            _md(1, {"x": b"1"}) + _md(1, {"x": b"1"}),
            "two subscribeMetadata (0x94) messages before one subscribe",
        ),
        (
            _md(2, {"x": b"1"}) + encode(Subscribe(publisher="p", subscriber=1)),
            "subscribeMetadata (0x94) for subscriber 2"
            " followed by message type 0x04 for subscriber 1, not by its subscribe",
        ),
    ):
        conn = _server()
        conn.receive_data(_md(5, {"x": b"1"}) + encode(Subscribe(publisher="p", subscriber=5)))  # remembered
        conn.receive_data(data)
        closed = conn.events_received()[-1]
        assert isinstance(closed, ConnectionClosed) and words in closed.reason and "§18.1" in closed.reason


@pytest.mark.parametrize(
    ("sid", "size", "remembered"),
    [
        (127, 1, True),
        (128, 1, False),
        (1, REMEMBERED_METADATA - 6, True),
        (1, REMEMBERED_METADATA - 5, False),
    ],
)
def test_only_short_payloads_with_a_one_byte_id_are_remembered(sid: int, size: int, remembered: bool) -> None:
    conn = _server()
    entries = {"x": b"v" * size}  # payload: id, count, 1, "x", a two-byte length, the value
    seen = []
    for _ in range(2):
        conn.receive_data(_md(sid, entries) + encode(Subscribe(publisher="p", subscriber=sid)))
        events = conn.events_received()
        assert events[0] == entries and events[1] == Subscribe(publisher="p", subscriber=sid)
        seen.append(events[0])
        conn.send_on_complete(sid)
    assert (seen[0] is seen[1]) is remembered


def test_the_parser_reads_what_its_window_describes_and_gives_frames_for_the_rest() -> None:
    """A parser of its own (no connection's window) gives a frame for every subscribeMetadata;
    given a connection's window it reads what the window describes (another one-byte id,
    another value in the window) as ``(subscriber, Metadata)``, whatever the reads, and gives
    a frame for anything else."""
    p = parser()
    first = _md(1, {"traceparent": TRACE, "x": b"1"})
    assert p.feed(first + first) == [ExtensionMessage(type=SUBSCRIBE_METADATA, payload=first[2:])] * 2
    conn = _server()
    conn.receive_data(first + encode(Subscribe(publisher="p", subscriber=1)))
    decoded = conn.events_received()[0]
    p.metadata_window = conn._parser.metadata_window  # the traceparent's
    assert p.metadata_window.key == "traceparent"
    (same,) = p.feed(_md(2, {"traceparent": TRACE, "x": b"1"}))
    assert same == (2, decoded) and same[1] is decoded  # type: ignore[index]
    other = TRACE.replace(b"4bf9", b"0000")
    new_trace = _md(3, {"traceparent": other, "x": b"1"})
    for reads in ([new_trace], [bytes([byte]) for byte in new_trace]):
        (held,) = [got for read in reads for got in p.feed(read)]
        assert held == (3, {"traceparent": other, "x": b"1"})
        assert type(held[1]) is Metadata and list(held[1]) == ["traceparent", "x"]  # type: ignore[index]
    for data in (
        _md(4, {"traceparent": other, "x": b"2"}),  # a value outside the window
        _md(5, {"traceparent": other, "x": b"12"}),  # another length
        _md(200, {"traceparent": other, "x": b"1"}),  # a two-byte id
        _md(6, {"traceparent": other, "y": b"1"}),  # another key
    ):
        assert p.feed(data) == [ExtensionMessage(type=SUBSCRIBE_METADATA, payload=data[2:])]


_SHAPES = st.lists(st.tuples(_KEYS, st.integers(0, 140)), max_size=4)


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """Two subscribeMetadata payloads, the second often the first with other values of the
    same lengths (the remembered layout's case), sometimes mangled (any bytes)."""
    shape = dict(draw(_SHAPES))
    sids = draw(st.lists(st.integers(1, 130), min_size=2, max_size=2, unique=True))  # no id reused (§5.3)
    first, second = (
        encode_metadata(sid, {k: draw(st.binary(min_size=n, max_size=n)) for k, n in shape.items()})
        for sid in sids
    )
    if draw(st.booleans()):  # any bytes after the id's
        cut, extra = draw(st.integers(0, 3)), draw(st.binary(max_size=3))
        mangled = bytearray(second[: max(1, len(second) - cut)] + extra)
        at, byte = draw(st.integers(1, 400)), draw(st.integers(0, 255))
        if len(mangled) > 1:
            mangled[1 + at % (len(mangled) - 1)] = byte
        second = bytes(mangled)
    return first, second


def _received(conn: Core, payload: bytes) -> object:
    """What ``payload`` then its subscribe give first: the Metadata, or the connection's end."""
    try:
        sid = decode_varint(payload, 0, len(payload))[0]
    except (Incomplete, RemoteProtocolError):
        sid = 0
    conn.receive_data(encode(ExtensionMessage(type=SUBSCRIBE_METADATA, payload=payload)))
    if conn.state is not ConnectionState.CLOSED:
        conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid)))
    first = conn.events_received()[0]
    if conn.state is not ConnectionState.CLOSED and conn.id_in_use(sid):
        conn.send_on_complete(sid)
    return (ConnectionClosed, first.reason) if isinstance(first, ConnectionClosed) else first


@given(pair=_pairs())
def test_a_payload_after_a_remembered_one_decodes_as_on_a_new_connection(pair: tuple[bytes, bytes]) -> None:
    """The remembered layout (only values changed) gives what decoding gives, errors included."""
    first, second = pair
    config = ConnectionConfig(
        extensions=frozenset({METADATA.id}), max_metadata_bytes=400, max_metadata_entries=3
    )
    conn = _server(config)
    _received(conn, first)
    after = _received(conn, second) if conn.state is not ConnectionState.CLOSED else None
    if after is not None:
        assert after == _received(_server(config), second)


@st.composite
def _runs(draw: st.DrawFn) -> list[bytes]:
    """Subscribe metadata payloads of one subscriber: mostly the same keys and value lengths
    with one value (or more, or none) new each time, as a new traceparent per request; some
    of another shape, some mangled (any bytes)."""
    shape = dict(draw(_SHAPES))
    values = {k: draw(st.binary(min_size=n, max_size=n)) for k, n in shape.items()}
    payloads, history = [], []
    sids = draw(st.lists(st.integers(1, 130), min_size=2, max_size=8, unique=True))  # no id reused (§5.3)
    for sid in sids:
        kind = draw(st.sampled_from(["one", "one", "some", "earlier", "other", "mangled"]))
        history.append(values)
        if kind == "earlier":  # another id with an earlier payload's values, one of them new
            values = draw(st.sampled_from(history))
            kind = "one"
        if kind == "one" and values:
            key = draw(st.sampled_from(sorted(values)))
            values = {**values, key: draw(st.binary(min_size=shape[key], max_size=shape[key]))}
        elif kind == "some":
            values = {k: draw(st.binary(min_size=n, max_size=n)) if draw(st.booleans()) else values[k]
                      for k, n in shape.items()}  # fmt: skip
        payload = encode_metadata(sid, draw(_ENTRIES) if kind == "other" else values)
        if kind == "mangled":
            mangled = bytearray(payload)
            at, byte = draw(st.integers(1, 400)), draw(st.integers(0, 255))
            if len(mangled) > 1:
                mangled[1 + at % (len(mangled) - 1)] = byte
            payload = bytes(mangled)
        payloads.append(payload)
    return payloads


@given(payloads=_runs())
def test_payloads_after_remembered_ones_decode_as_on_a_new_connection(payloads: list[bytes]) -> None:
    """The remembered payload and its window (one value read anew) give what decoding gives,
    errors included, whichever values change from one payload to the next."""
    config = ConnectionConfig(
        extensions=frozenset({METADATA.id}), max_metadata_bytes=400, max_metadata_entries=4
    )
    conn = _server(config)
    for payload in payloads:
        got = _received(conn, payload)
        assert got == _received(_server(config), payload)
        if conn.state is ConnectionState.CLOSED:
            break


@given(payloads=_runs())
def test_payloads_in_one_read_decode_as_each_on_a_new_connection(payloads: list[bytes]) -> None:
    """Many subscribeMetadata and subscribes in one read: the parser reads each against the
    window as it stood when the read began or as earlier ones in the read moved it, before
    the connection has handled any; each still gives what decoding it alone gives, errors
    included."""
    config = ConnectionConfig(
        extensions=frozenset({METADATA.id}), max_metadata_bytes=400, max_metadata_entries=4
    )
    read, expected, sids = b"", [], set()
    for payload in payloads:
        try:
            sid = decode_varint(payload, 0, len(payload))[0]
        except (Incomplete, RemoteProtocolError):
            sid = 0
        if sid in sids:  # a mangled id reused: its subscribe would be refused (§5.3)
            break
        sids.add(sid)
        pair = encode(ExtensionMessage(type=SUBSCRIBE_METADATA, payload=payload)) + encode(
            Subscribe(publisher="p", subscriber=sid)
        )
        read += pair
        alone = _server(config)
        alone.receive_data(pair)
        first = alone.events_received()[0]
        expected.append((ConnectionClosed, first.reason) if isinstance(first, ConnectionClosed) else first)
        if alone.state is ConnectionState.CLOSED:
            break
    conn = _server(config)
    conn.receive_data(read)
    got = [
        (ConnectionClosed, event.reason) if isinstance(event, ConnectionClosed) else event
        for event in conn.events_received()
        if isinstance(event, Metadata | ConnectionClosed)
    ]
    assert got == expected


def test_a_new_value_in_the_remembered_window_is_read_anew_and_the_rest_shared() -> None:
    """A new traceparent (same length) with the other entries the same: decoded as a whole
    once, then only the traceparent is read; the same payload again is the same Metadata."""
    conn = _server()
    traces = [TRACE.replace(b"4bf9", f"{i:04x}".encode()) for i in range(4)]
    seen = []
    for sid, trace in zip((1, 2, 3, 4), traces, strict=True):
        entries = {"x-tenant": b"acme", "traceparent": trace, "x-pad": b"p" * 30}
        seen.append(_received(conn, encode_metadata(sid, entries)))
        assert seen[-1] == entries and list(seen[-1]) == list(entries)
    assert len({id(m) for m in seen}) == 4
    last = {"x-tenant": b"acme", "traceparent": traces[3], "x-pad": b"p" * 30}
    assert _received(conn, encode_metadata(5, last)) is seen[-1]  # the same entries for another id
    other = {**last, "x-tenant": b"acmf"}  # a value outside the window
    assert _received(conn, encode_metadata(6, other)) == other


def test_metadata_read_in_the_window_is_the_decoded_metadata_in_every_way() -> None:
    """Metadata read in the window makes its entries when first read (the decoded payload's,
    with the window's value): until then it has none, then it is what decoding gives, in
    every accessor, and the metadata read before it keep their own values."""
    conn = _server()
    traces = [TRACE.replace(b"4bf9", f"{i:04x}".encode()) for i in range(3)]
    sent = [{"x-tenant": b"acme", "traceparent": trace, "x-pad": b"p" * 30} for trace in traces]
    seen = [_received(conn, encode_metadata(sid, each)) for sid, each in enumerate(sent, start=1)]
    assert conn._parser.metadata_window.key == "traceparent"
    read = seen[-1]
    assert type(read) is Metadata
    with pytest.raises(AttributeError):
        Metadata.__dict__["_entries"].__get__(read)  # not made yet: read in the window
    decoded = Metadata(sent[-1])
    assert repr(read) == repr(decoded) and list(read.items()) == list(decoded.items())
    assert read == decoded and dict(read) == sent[-1] and len(read) == 3 and "x-pad" in read
    assert read.traceparent == traces[-1].decode() and read.text("x-tenant") == "acme"
    assert read.get("nope") is None and read.text("nope", "none") == "none"
    assert seen == sent  # each its own traceparent, the rest shared


def test_after_many_payloads_decoded_whole_the_window_is_placed_only_now_and_then() -> None:
    """Two values new every time: each payload is decoded whole (and right); after WINDOW_TRIES
    in a row the window is placed again only every WINDOW_RETRY th time, and once one value
    alone changes again, the window reads it."""
    conn = _server()
    for sid in range(1, 3 * WINDOW_RETRY):
        entries = {"traceparent": TRACE[:-4] + b"%04d" % sid, "x-request": b"%06d" % sid}
        assert _received(conn, encode_metadata(sid, entries)) == entries
        window = conn._parser.metadata_window
        assert window.misses == sid
        assert (window.key is None) is (sid > WINDOW_TRIES and sid % WINDOW_RETRY != 0)
    for sid in range(3 * WINDOW_RETRY, 3 * WINDOW_RETRY + 3):
        entries = {"traceparent": TRACE[:-4] + b"%04d" % sid, "x-request": b"000000"}
        assert _received(conn, encode_metadata(sid, entries)) == entries
    assert conn._parser.metadata_window.key == "traceparent"  # placed at the WINDOW_RETRY th miss
    assert conn._parser.metadata_window.misses == 0  # then read in the window


def test_a_payload_remembered_without_a_window_leaves_none_from_before() -> None:
    """Decoded whole three times in a row (the third remembered without a window), then the
    second one's values again but a new traceparent: decoded as on a new connection."""
    conn = _server()

    def entries(trace: int, other: bytes) -> dict[str, bytes]:
        return {"traceparent": TRACE[:-4] + b"%04d" % trace, "x-a": other, "x-b": other}

    sent = [entries(1, b"aa"), entries(2, b"bb"), entries(3, b"cc"), entries(4, b"bb")]
    for sid, each in enumerate(sent, start=1):
        assert _received(conn, encode_metadata(sid, each)) == each


def test_the_window_reads_only_its_own_length_and_longer_payloads_still_meet_the_string_limit() -> None:
    """A payload of the window's length was within max_string_length when it was decoded whole
    (so it is not checked again); any other length is checked as before (§11)."""
    config = ConnectionConfig(extensions=frozenset({METADATA.id}), max_string_length=120, max_name_length=100)
    conn = _server(config)
    entries = {"traceparent": TRACE, "x-pad": b"p" * 20}
    assert _received(conn, encode_metadata(1, entries)) == entries
    window = conn._parser.metadata_window
    assert window.key == "traceparent" and window.length == len(encode_metadata(1, entries))
    fresh = {"traceparent": TRACE.replace(b"4bf9", b"0000"), "x-pad": b"p" * 20}
    assert _received(conn, encode_metadata(2, fresh)) == fresh  # read in the window
    closed = _received(conn, encode_metadata(3, {"traceparent": TRACE, "x-pad": b"p" * 80}))
    assert closed[0] is ConnectionClosed and "max_string_length=120" in closed[1]  # type: ignore[index]
