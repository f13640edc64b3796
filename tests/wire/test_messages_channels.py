"""The payloads of extensions messages (§20.2) and channels (§21.2): round trips and refusals."""

from __future__ import annotations

import pytest

from rstreams.wire import Connection, ConnectionConfig, ExtensionError, LimitExceededError, Side
from rstreams.wire._assembler import Assembler
from rstreams.wire._channels import (
    CHANNEL,
    INPUT_CANCEL,
    INPUT_COMPLETE,
    INPUT_ERROR,
    INPUT_NEXT,
    INPUT_NEXT_PART,
    INPUT_REQUEST,
    decode_channel_message,
    encode_channel_message,
    encode_input_parts,
    split_input,
)
from rstreams.wire._messages import Credit, decode_credit, decode_message, encode_credit, encode_message
from rstreams.wire._streams import new_stream
from rstreams.wire.extensions import BY_TYPE, CHANNELS, INPUT_PARTS, MESSAGES
from rstreams.wire.frames import ClientHello, ExtensionMessage, encode

pytestmark = pytest.mark.timeout(60)


def test_the_registry_owns_the_ranges() -> None:
    assert all(BY_TYPE[t] is MESSAGES for t in range(0x9C, 0xA0))
    assert all(BY_TYPE[t] is CHANNELS for t in (*range(0xA0, 0xA6), 0xA7))
    assert BY_TYPE[0xA6] is INPUT_PARTS and INPUT_PARTS.message_types == {INPUT_NEXT_PART} == {0xA6}
    assert (MESSAGES.id, CHANNELS.id, INPUT_PARTS.id) == (7, 8, 9)


@pytest.mark.parametrize(("name", "body"), [("events/click", b"hi"), ("", b""), ("é/ü", bytes(300))])
def test_message_round_trip(name: str, body: bytes) -> None:
    assert decode_message(encode_message(name, body)) == (name, body)


def test_message_bytes() -> None:
    assert encode_message("ab", b"\x00") == b"\x02ab\x00"


@pytest.mark.parametrize(
    ("payload", "words"),
    [(b"", "ends inside"), (b"\x80", "ends inside"), (b"\x80\x00", "non-minimal"), (b"\x03ab", "3 bytes")],
)
def test_malformed_message_cites_20_2(payload: bytes, words: str) -> None:
    with pytest.raises(ExtensionError, match=words) as raised:
        decode_message(payload)
    assert raised.value.reason.endswith("(PROTOCOL.md §20.2)")


def test_credit_round_trip_and_refusals() -> None:
    assert decode_credit(encode_credit(16)) == 16
    assert decode_credit(encode_credit(2**63 - 1)) == 2**63 - 1
    for bad in (encode_credit(0), encode_credit(2**63), b"", b"\x01\x01"):
        with pytest.raises(ExtensionError, match="messageCredit"):
            decode_credit(bad)


def test_credit_saturates_and_refuses_below_zero() -> None:
    credit = Credit()
    assert not credit.take()
    credit.grant(2**63 - 1)
    credit.grant(5)
    assert credit.available == 2**63 - 1
    assert credit.take() and credit.available == 2**63 - 2


@pytest.mark.parametrize(
    ("kind", "rest", "value"),
    [
        (CHANNEL, b"", None),
        (INPUT_CANCEL, b"", None),
        (INPUT_COMPLETE, b"", None),
        (INPUT_REQUEST, 300, 300),
        (INPUT_NEXT, b"\x00\x01", b"\x00\x01"),
        (INPUT_NEXT, b"", b""),
        (INPUT_NEXT_PART, b"\x00\x01", b"\x00\x01"),
        (INPUT_NEXT_PART, b"", b""),
        (INPUT_ERROR, "boom ✓".encode(), "boom ✓"),
    ],
)
def test_channel_messages_round_trip(kind: int, rest: bytes | int, value: object) -> None:
    assert decode_channel_message(kind, encode_channel_message(kind, 300, rest)) == (300, value)


@pytest.mark.parametrize(
    ("kind", "payload", "words"),
    [
        (CHANNEL, b"", "ends inside"),
        (CHANNEL, b"\x01\x02", "after its subscriber"),
        (INPUT_REQUEST, b"\x01", "ends inside"),
        (INPUT_REQUEST, b"\x01\x00", "demand must be"),
        (INPUT_REQUEST, b"\x01\x01\x01", "after its demand"),
        (INPUT_ERROR, b"\x01\xc3", "UTF-8"),
        (0xA7, b"\x01", "reserved"),
    ],
)
def test_malformed_channel_messages_cite_21_2(kind: int, payload: bytes, words: str) -> None:
    with pytest.raises(ExtensionError, match=words) as raised:
        decode_channel_message(kind, payload)
    assert raised.value.reason.endswith("(PROTOCOL.md §21.2)")


def test_split_input_cuts_an_element_into_parts_of_at_most_the_size() -> None:
    element = bytes(range(256)) * 4
    pieces = split_input(element, 300)
    assert [len(p) for p in pieces] == [300, 300, 300, 124]
    assert b"".join(pieces) == element
    assert split_input(b"abc", 3) == [b"abc"]
    assert split_input(b"", 3) == [b""]
    with pytest.raises(ValueError, match="part_size"):
        split_input(b"abc", 0)


@pytest.mark.parametrize("size", [0, 1, 299, 300, 301, 1024])
def test_input_parts_are_split_input_with_the_subscriber_id_ahead(size: int) -> None:
    element = bytes(range(256)) * 4
    expected = [encode_channel_message(INPUT_NEXT, 300, p) for p in split_input(element[:size], 300)]
    assert encode_input_parts(300, element[:size], 300) == expected
    with pytest.raises(ValueError, match="part_size"):
        encode_input_parts(1, b"abc", 0)


def test_a_large_extension_payload_goes_out_as_its_own_chunk_with_the_same_bytes() -> None:
    """An input part of 64 KiB is handed to the transport as it is, not copied into the buffer."""
    conn = Connection(Side.SERVER, ConnectionConfig(extensions=frozenset({CHANNELS.id, INPUT_PARTS.id})))
    conn.receive_data(encode(ClientHello(extensions=(CHANNELS.id, INPUT_PARTS.id))))
    conn.data_to_send()
    small = ExtensionMessage(type=INPUT_REQUEST, payload=encode_channel_message(INPUT_REQUEST, 1, 5))
    payload = encode_channel_message(INPUT_NEXT_PART, 1, bytes(65_536))
    large = ExtensionMessage(type=INPUT_NEXT_PART, payload=payload)
    conn.send(small)
    conn.send(large)
    conn.send(small)
    data = conn.data_to_send()
    assert b"".join(data) == encode(small) + encode(large) + encode(small)
    assert any(chunk is payload for chunk in data)


def test_split_input_shares_the_connection_limits_with_split_output() -> None:
    """Partly received input elements (§21.6) count with output ones (§8) against the two limits."""
    parts = Assembler(max_element_size=10, max_parts_in_flight=2, max_reassembly_bytes=12)
    assert parts.add(new_stream(1, False, 5), 0, b"out", last=False) is None  # an output element, begun
    assert parts.add_input(1, b"in", last=False) is None  # channel 1 of the peer: same id, no clash
    assert parts.held == (2, 5) and parts.input_unfinished(1)
    with pytest.raises(LimitExceededError, match="max_parts_in_flight=2") as raised:
        parts.add_input(3, b"x", last=False)
    assert raised.value.limit == "max_parts_in_flight"
    with pytest.raises(LimitExceededError, match="max_reassembly_bytes=12"):
        parts.add_input(1, b"12345678", last=False)
    assert parts.add_input(1, b"put", last=True) == b"input"
    assert parts.held == (1, 3) and not parts.input_unfinished(1)
    assert parts.add_input(5, b"whole", last=True) == b"whole"  # an inputNext alone holds nothing
    assert parts.add_input(7, b"a", last=False) is None
    with pytest.raises(LimitExceededError, match="grows past max_element_size=10") as raised:
        parts.add_input(7, b"0123456789", last=False)
    assert raised.value.limit == "max_element_size"
    assert not parts.input_unfinished(7)  # that input's partial element is gone
    assert parts.held == (1, 3)
    parts.add_input(9, b"ab", last=False)
    parts.drop_input(9)
    assert parts.held == (1, 3)
