"""The resumption extension's sans-I/O parts: payloads, the exchange parsers, positions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstreams.wire._resume import (
    MAX_TOKEN_SIZE,
    RESUME,
    RESUME_ACK,
    RESUME_REFUSED,
    RESUMED,
    ReceiveCounter,
    Refused,
    ReplayBuffer,
    Resumed,
    ResumeError,
    ResumeReplyParser,
    ResumeRequest,
    decode_position,
    decode_resume,
    decode_token,
    encode_message,
    encode_position,
    encode_resume,
    parse_resume_request,
)
from rstreams.wire.frames import Goodbye, ServerHello, encode

TOKEN = bytes(range(16))


def test_message_vectors() -> None:
    """The examples of PROTOCOL.md §13 (docs/protocol-vectors.json), byte for byte."""
    assert encode_message(0x88, TOKEN).hex(" ") == "88 10 " + TOKEN.hex(" ")
    assert (
        encode_message(RESUME, encode_resume(TOKEN, 300)).hex(" ") == "89 13 10 " + TOKEN.hex(" ") + " ac 02"
    )
    assert encode_message(RESUMED, encode_position(0)).hex(" ") == "8a 01 00"
    assert encode_message(RESUME_ACK, encode_position(65536)).hex(" ") == "8c 03 80 80 04"
    assert encode_message(RESUME_REFUSED, b"no").hex(" ") == "8b 02 6e 6f"


@given(st.binary(min_size=1, max_size=MAX_TOKEN_SIZE), st.integers(0, 2**64 - 1))
def test_resume_round_trips(token: bytes, position: int) -> None:
    """decode_resume(encode_resume(t, p)) gives t and p back."""
    assert decode_resume(encode_resume(token, position)) == ResumeRequest(token=token, position=position)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00",
        b"\x41" + bytes(65),
        b"\x10" + TOKEN,
        b"\x10" + TOKEN + b"\x01\x00",
        b"\x10" + TOKEN + b"\x80",
    ],
    ids=["empty", "zero-length-token", "token-too-long", "no-position", "trailing", "truncated-varint"],
)
def test_malformed_resume_is_refused(payload: bytes) -> None:
    """Malformed resume payloads raise ResumeError, nothing else."""
    with pytest.raises(ResumeError):
        decode_resume(payload)


def test_positions_and_tokens_validate() -> None:
    """Position payloads are one minimal varint; tokens are 1..64 bytes."""
    assert decode_position(b"\xac\x02", "resumeAck") == 300
    for bad in (b"", b"\x80\x00", b"\x01\x01"):
        with pytest.raises(ResumeError):
            decode_position(bad, "resumeAck")
    with pytest.raises(ResumeError):
        decode_token(b"")
    with pytest.raises(ResumeError):
        decode_token(bytes(MAX_TOKEN_SIZE + 1))
    with pytest.raises(ValueError, match="position"):
        encode_position(-1)


def feed_three_ways(data: bytes) -> list[tuple[Resumed | Refused, bytes]]:
    """Run a ResumeReplyParser over data whole, byte by byte, and with trailing bytes."""
    outcomes = []
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))], [data + b"\x08\x01\x00"]):
        parser = ResumeReplyParser()
        result = None
        for index, chunk in enumerate(chunks):
            result = parser.feed(chunk)
            if result is not None:
                rest = parser.rest + b"".join(chunks[index + 1 :])
                break
        assert result is not None
        outcomes.append((result, rest))
    return outcomes


def test_reply_parser_resumed() -> None:
    """serverHello + resumed: the position, and the bytes after it are the replay."""
    data = encode(ServerHello(extensions=(1, 3))) + encode_message(RESUMED, encode_position(1234))
    whole, one_by_one, trailing = feed_three_ways(data)
    assert whole == one_by_one == (Resumed(1234), b"")
    assert trailing == (Resumed(1234), b"\x08\x01\x00")


def test_reply_parser_refused_and_goodbye() -> None:
    """resumeRefused and a plain goodbye both mean Refused(reason)."""
    hello = encode(ServerHello(extensions=(3,)))
    refused = feed_three_ways(hello + encode_message(RESUME_REFUSED, b"unknown session"))
    assert {outcome for outcome, _ in refused} == {Refused("unknown session")}
    bye = feed_three_ways(hello + encode(Goodbye(reason="too many connections")))
    assert {outcome for outcome, _ in bye} == {Refused("too many connections")}


@pytest.mark.parametrize(
    ("data", "section"),
    [
        (b"\x01\x00\x00", "16.3"),
        (b"\x02\x01\x00", "16.3"),
        (b"\x02\x00\x00\x08\x01\x00", "16.3"),
        (b"\x02\x00\x00\x8a\xff\x7f", "16.7"),  # the 256-byte payload limit of the exchange
    ],
    ids=["clientHello", "version-1", "onNext-instead", "huge-length"],
)
def test_reply_parser_rejects(data: bytes, section: str) -> None:
    """Anything but serverHello + an answer is a ResumeError citing the rule it breaks."""
    with pytest.raises(ResumeError) as info:
        ResumeReplyParser().feed(data)
    assert info.value.reason.endswith(f"(PROTOCOL.md §{section})")


def test_parse_resume_request() -> None:
    """The server reads resume whole or waits; other first bytes are an error."""
    data = bytearray(encode_message(RESUME, encode_resume(TOKEN, 7)))
    assert parse_resume_request(data) == (ResumeRequest(token=TOKEN, position=7), len(data))
    for cut in range(len(data)):
        assert parse_resume_request(data[:cut]) is None
    with pytest.raises(ResumeError):
        parse_resume_request(bytearray(b"\x01\x00\x00"))


class TestReplayBuffer:
    def test_acknowledge_drops_whole_and_partial_chunks(self) -> None:
        """held counts unacknowledged bytes; acks drop them, partially too."""
        buf = ReplayBuffer()
        for chunk in (b"abc", b"defg", b"hi"):
            buf.append(chunk)
        assert (buf.start, buf.end, buf.held) == (0, 9, 9)
        buf.acknowledge(4)
        assert buf.held == 5
        assert b"".join(buf.replay_from(4)) == b"efghi"
        buf.acknowledge(2)  # old: ignored
        assert buf.start == 4
        assert b"".join(buf.replay_from(7)) == b"hi"
        buf.acknowledge(9)
        assert buf.held == 0
        assert buf.replay_from(9) == []

    def test_positions_outside_are_errors(self) -> None:
        """A position beyond what was sent, or before what is held, cannot be replayed."""
        buf = ReplayBuffer()
        buf.append(b"abcdef")
        buf.acknowledge(3)
        with pytest.raises(ResumeError):
            buf.replay_from(2)
        with pytest.raises(ResumeError):
            buf.replay_from(7)
        with pytest.raises(ResumeError):
            buf.acknowledge(7)

    @given(st.lists(st.binary(max_size=20), max_size=20), st.data())
    def test_replay_is_the_stream_suffix(self, chunks: list[bytes], data: st.DataObject) -> None:
        """For any acks, replay_from(p) is exactly the stream from p."""
        buf = ReplayBuffer()
        stream = b"".join(chunks)
        for chunk in chunks:
            buf.append(chunk)
        acked = data.draw(st.integers(0, len(stream)))
        buf.acknowledge(acked)
        position = data.draw(st.integers(acked, len(stream)))
        assert b"".join(buf.replay_from(position)) == stream[position:]
        assert buf.held == len(stream) - position


def test_receive_counter_ignores_ack_only_traffic() -> None:
    """Acks are due after ack_bytes; a peer's acks alone never make one due."""
    counter = ReceiveCounter(100)
    counter.received(60)
    assert counter.unacknowledged == 60
    due = [counter.ack_due_now]
    counter.received(40)
    due.append(counter.ack_due_now)
    assert due == [False, True]
    assert decode_position(counter.take_ack(), "resumeAck") == 100
    ack = encode_position(100)
    counter.received(len(encode_message(RESUME_ACK, ack)))
    counter.saw_ack(len(ack))
    assert counter.unacknowledged == 0


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_exchange_parsers_take_any_bytes(first: bytes, second: bytes) -> None:
    """Arbitrary input gives an answer, "need more", or ResumeError: nothing else, in any chunking."""
    parser = ResumeReplyParser()
    try:
        parser.feed(first)
        parser.feed(second)
    except ResumeError:
        pass
    try:
        parse_resume_request(bytearray(first + second))
    except ResumeError:
        pass
