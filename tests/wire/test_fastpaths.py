"""The parser's and the core's fast paths give the same results as the plain ones.

* ``batch_on_next=True`` turns runs of onNext into :class:`OnNextBatch`; flattened, the
  frames are the same as without it, however the bytes are split into reads.
* Large onNext payloads are taken straight from the read or collected as pieces across
  reads; the elements are the same bytes.
* ``on_next_many`` writes the same bytes as ``on_next`` per element.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.errors import LocalProtocolError
from rstreams.wire import (
    Answer,
    Connection,
    ConnectionClosed,
    DemandExceededError,
    Frame,
    FrameType,
    OnComplete,
    OnNext,
    OnNextBatch,
    OnSubscribe,
    Request,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire._parser import FrameParser, Parsed
from rstreams.wire._varint import encode_varint


def make_parser(batch: bool = False, answers: bool = False) -> FrameParser:
    return FrameParser(
        max_element_size=1 << 20,
        max_string_length=1 << 16,
        max_extensions=64,
        batch_on_next=batch,
        answers=answers,
    )


def flatten(frames: Sequence[object]) -> list[Frame]:
    """The frames a plain parser gives: batches and answers (typed as frames by the parser) spelled out."""
    out: list[Frame] = []
    for f in frames:
        if isinstance(f, OnNextBatch):
            assert f.elements, "an OnNextBatch is never empty"
            out += [OnNext(subscriber=f.subscriber, element=e) for e in f.elements]
        elif isinstance(f, Answer):
            sid = f.subscriber
            out += [OnSubscribe(subscriber=sid), OnNext(subscriber=sid, element=f.element)]
            out.append(OnComplete(subscriber=sid))
        else:
            out.append(cast(Frame, f))
    return out


def feed_in(data: bytes, cuts: list[int], *, batch: bool) -> list[Parsed]:
    parser = make_parser(batch)
    got: list[Parsed] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        if start < cut <= len(data):
            got += parser.feed(memoryview(bytearray(data[start:cut])))  # a reused-buffer-like view
            start = cut
    assert parser.error is None and parser.buffered == 0 and parser.eof() is None
    return got


_frame = st.one_of(
    st.builds(
        lambda sid, n, fill: OnNext(subscriber=sid, element=bytes([fill]) * n),
        st.sampled_from([1, 2, 127, 128, 200, 16383, 16384]),
        st.sampled_from([0, 1, 8, 127, 128, 300, 16383, 16384, 20_000, 70_000]),
        st.integers(0, 255),
    ),
    st.builds(
        lambda sid, d: Request(subscriber=sid, demand=d), st.integers(1, 300), st.integers(1, 2**63 - 1)
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_frame, max_size=40), st.lists(st.integers(0, 400_000), max_size=12))
def test_batched_and_large_parsing_match_plain(frames: list[Frame], cuts: list[int]) -> None:
    data = b"".join(encode(f) for f in frames)
    assert flatten(feed_in(data, [], batch=False)) == frames
    assert flatten(feed_in(data, cuts, batch=False)) == frames
    assert flatten(feed_in(data, cuts, batch=True)) == frames


def test_runs_of_equal_frames_become_one_batch() -> None:
    data = b"".join(encode(OnNext(subscriber=3, element=bytes([i % 256]) * 8)) for i in range(5000))
    data += encode(OnNext(subscriber=3, element=b"odd"))  # another length: the same batch goes on
    data += encode(OnNext(subscriber=4, element=b"x"))
    got = make_parser(True).feed(data)
    assert got == [
        OnNextBatch(3, [bytes([i % 256]) * 8 for i in range(5000)] + [b"odd"]),
        OnNextBatch(4, [b"x"]),
    ]


def test_large_element_arriving_byte_chunks() -> None:
    element = bytes(range(256)) * 300  # 76,800 bytes
    data = encode(OnNext(subscriber=1, element=element)) * 3
    for step in (1000, 4096, 65536, 70000, len(data)):
        parser = make_parser()
        got = []
        for i in range(0, len(data), step):
            got += parser.feed(memoryview(data)[i : i + step])
        assert got == [OnNext(subscriber=1, element=element)] * 3
        assert all(type(f.element) is bytes for f in got)  # type: ignore[union-attr]
    truncated = make_parser()
    assert truncated.feed(data[:30_000]) == []
    assert truncated.buffered > 0 and truncated.eof() is not None


def _pair() -> tuple[Connection, Connection]:
    client, server = Connection(Side.CLIENT, batch_on_next=True), Connection(Side.SERVER)
    server.receive_data(b"".join(client.data_to_send()))
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()
    server.events_received()
    return client, server


def test_on_next_many_is_on_next_per_element() -> None:
    for elements in ([b"a" * 8] * 100, [b"x" * 200] * 3, [b"a", b"bb", b"" * 0], [b"z" * 20_000] * 2):
        a, b = _pair()[1], _pair()[1]
        for server in (a, b):
            server.receive_data(encode(Subscribe(publisher="p", subscriber=1, initial_demand=1000)))
            server.send(OnSubscribe(subscriber=1))
            server.data_to_send()
        a.on_next_many(1, elements)
        for element in elements:
            b.on_next(1, element)
        assert b"".join(a.data_to_send()) == b"".join(b.data_to_send())
        assert a.credit(1) == b.credit(1) == 1000 - len(elements)


def test_on_next_many_checks_demand_for_the_batch() -> None:
    _, server = _pair()
    server.receive_data(encode(Subscribe(publisher="p", subscriber=1, initial_demand=2)))
    server.send(OnSubscribe(subscriber=1))
    server.data_to_send()
    with pytest.raises(LocalProtocolError):
        server.on_next_many(1, [b"a", b"b", b"c"])
    assert server.data_to_send() == [] and server.credit(1) == 2


def test_batch_beyond_demand_delivers_what_was_granted_then_fails() -> None:
    client, server = _pair()
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=3))
    server.receive_data(b"".join(client.data_to_send()))
    server.send(OnSubscribe(subscriber=1))
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()
    client.receive_data(b"".join(encode(OnNext(subscriber=1, element=b"e")) for _ in range(5)))
    events = client.events_received()
    assert events[:3] == [OnNext(subscriber=1, element=b"e")] * 3
    assert isinstance(events[-1], ConnectionClosed) and isinstance(events[-1].error, DemandExceededError)


def test_batch_within_demand_is_one_event() -> None:
    client, server = _pair()
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=10))
    server.receive_data(b"".join(client.data_to_send()))
    server.send(OnSubscribe(subscriber=1))
    server.on_next_many(1, [b"e"] * 10)
    client.receive_data(b"".join(server.data_to_send()))
    assert client.events_received() == [OnSubscribe(subscriber=1), OnNextBatch(1, [b"e"] * 10)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"\x07\x01\x08", b"\x07\x01\x88\x00", b"\x07\x01\x81\x01", b"\x07\x02\x02", b"xy"])
    ).map(b"".join),
    st.binary(max_size=40),
)
def test_batched_parser_agrees_with_plain_on_any_input(prefix: bytes, tail: bytes) -> None:
    """Whatever the bytes (valid or not), batching changes the grouping of frames, nothing else."""
    data = prefix + tail
    plain, batched = make_parser(), make_parser(True)
    assert flatten(batched.feed(data)) == flatten(plain.feed(data))
    assert (plain.error is None) == (batched.error is None)
    assert type(plain.error) is type(batched.error)
    assert plain.buffered == batched.buffered


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("sid", [1, 127, 128, 300, 1000, 16383, 16384, 2**21])
@pytest.mark.parametrize("length", [0, 1, 127, 128, 300, 16383, 16384])
def test_two_byte_ids_and_lengths_parse_whole_and_bytewise(batch: bool, sid: int, length: int) -> None:
    """Ids and lengths of one, two (the fast path) and three bytes give the same frames, whole or bytewise."""
    frames = [OnNext(subscriber=sid, element=bytes([i]) * length) for i in range(5)]
    data = b"".join(encode(f) for f in frames)
    assert flatten(feed_in(data, [], batch=batch)) == frames
    assert flatten(feed_in(data, list(range(len(data))) if length < 400 else [], batch=batch)) == frames
    parser = make_parser(batch)  # with trailing bytes of an incomplete frame
    tail = encode(frames[0])[:-1]
    assert flatten(parser.feed(data + tail)) == frames
    assert parser.error is None and parser.buffered > 0 and parser.eof() is not None


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize(
    "data",
    [
        b"\x08\x80\x00\x01x",  # id 0 in two bytes
        b"\x08\x81\x00\x01x",  # id 1 in two bytes
        b"\x08\x01\x80\x00",  # length 0 in two bytes
        b"\x08\x81\x01\x81\x00x",  # a two-byte id, then length 1 in two bytes
    ],
)
def test_non_minimal_two_byte_varints_are_framing_errors(batch: bool, data: bytes) -> None:
    parser = make_parser(batch)
    assert parser.feed(data + b"\x0c\x01") == []
    assert parser.error is not None and "minimal" in str(parser.error).lower()


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([1, 8, 127, 128, 300]),
    st.lists(st.tuples(st.booleans(), st.integers(0, 255)), max_size=60),
    st.lists(st.integers(0, 2_000), max_size=10),
)
def test_fixed_size_streams_parse_alike_batched_or_not(
    size: int, picks: list[tuple[bool, int]], cuts: list[int]
) -> None:
    """Beside a stream with an elementSize (no length prefix, §7), frames parse the same with or
    without batching and however they are cut; the other stream keeps its length prefixes."""
    fixed_sid, other_sid = 5, 200
    frames: list[Frame] = [OnSubscribe(subscriber=fixed_sid, element_size=size)]
    data = encode(frames[0])
    for fixed, fill in picks:
        if fixed:
            frame = OnNext(subscriber=fixed_sid, element=bytes([fill]) * size)
            data += encode(frame, element_size=size)
        else:
            frame = OnNext(subscriber=other_sid, element=bytes([fill]) * (fill % 20))
            data += encode(frame)
        frames.append(frame)
    assert flatten(feed_in(data, [], batch=False)) == frames
    assert flatten(feed_in(data, cuts, batch=False)) == frames
    assert flatten(feed_in(data, cuts, batch=True)) == frames


def _bytewise(data: bytes, *, batch: bool) -> tuple[list[Frame], FrameParser]:
    """``data`` fed one byte at a time: every frame is parsed alone, by its own decoder."""
    parser = make_parser(batch)
    got: list[Parsed] = []
    for i in range(len(data)):
        got += parser.feed(data[i : i + 1])
    return flatten(got), parser


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([0, 1, 5, 127, 128, 300]),
    st.sampled_from([0, 0, 0, 1, 8]),
    st.binary(max_size=140),
    st.sampled_from([0, 0, 0, 1, 2]),
    st.sampled_from([0, 0, 0, 1, 3]),
    st.binary(max_size=12),
    st.booleans(),
    st.booleans(),
)
def test_an_answer_in_one_pass_parses_as_its_frames_one_by_one(
    sid: int,
    size: int,
    element: bytes,
    other_next: int,
    other_end: int,
    tail: bytes,
    batch: bool,
    answers: bool,
) -> None:
    """onSubscribe + onNext + onComplete back to back (a request/response's answer, taken in
    one pass when all its fields are one byte, as one Answer with ``answers``) gives the frames
    the decoders give one by one, and so do near misses: another elementSize, another id, a
    long element, trailing bytes. Alone in a read, or followed by more."""
    if size:
        element = (element + bytes(size))[:size]
    data = encode(OnSubscribe(subscriber=sid, element_size=size))
    data += encode(OnNext(subscriber=sid + other_next, element=element), element_size=size)
    data += encode(OnComplete(subscriber=sid + other_end)) + tail
    parser = make_parser(batch, answers)
    whole = flatten(parser.feed(memoryview(bytearray(data))))  # a reused-buffer-like view
    one_by_one, reference = _bytewise(data, batch=batch)
    assert whole == one_by_one
    assert type(parser.error) is type(reference.error)
    assert parser.buffered == reference.buffered
    assert parser.element_sizes == reference.element_sizes


@pytest.mark.parametrize("batch", [False, True])
def test_an_answer_is_taken_in_one_pass(batch: bool) -> None:
    answer = encode(OnSubscribe(subscriber=3)) + encode(OnNext(subscriber=3, element=b"12345678"))
    answer += encode(OnComplete(subscriber=3))
    frames: list[Parsed] = []
    assert make_parser(batch)._answer(answer, 0, len(answer), frames) == len(answer)
    assert flatten(frames) == [
        OnSubscribe(subscriber=3),
        OnNext(subscriber=3, element=b"12345678"),
        OnComplete(subscriber=3),
    ]
    assert type(frames[1]) is (OnNextBatch if batch else OnNext)
    assert make_parser(batch)._answer(answer[:-1], 0, len(answer) - 1, []) == 0  # incomplete: declined


def test_with_answers_an_answer_is_one_answer_alone_in_a_read_or_not() -> None:
    first = encode(OnSubscribe(subscriber=3)) + encode(OnNext(subscriber=3, element=b"12345678"))
    first += encode(OnComplete(subscriber=3))
    second = first.replace(b"\x03", b"\x04")  # subscriber 4 (the element holds no 3)
    alone: list[object] = [*make_parser(True, True).feed(memoryview(bytearray(first)))]
    assert alone == [Answer(3, b"12345678")]
    both: list[object] = [*make_parser(True, True).feed(first + second)]
    assert both == [Answer(3, b"12345678"), Answer(4, b"12345678")]
    assert flatten(make_parser(True, True).feed(first[:-1])) == flatten(make_parser(True).feed(first[:-1]))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(max_size=140), st.binary(max_size=140)),
    st.sampled_from([0, 1, 127, 128, 300]),
    st.sampled_from([0, 1, 127, 128, 2**63 - 1]),
    st.binary(max_size=6),
)
def test_a_subscribe_parses_alike_whole_and_bytewise(
    name: str | bytes, sid: int, demand: int, tail: bytes
) -> None:
    """A subscribe with a short name, a one-byte id and demand is decoded inline; whole or
    byte by byte (each step through the general decoder), any name (invalid UTF-8 too)
    gives the same frame or the same error."""
    raw = name.encode() if isinstance(name, str) else name
    data = bytes([FrameType.SUBSCRIBE]) + encode_varint(len(raw)) + raw
    data += encode_varint(sid) + encode_varint(demand) + tail
    parser = make_parser()
    whole = flatten(parser.feed(data))
    one_by_one, reference = _bytewise(data, batch=False)
    assert whole == one_by_one
    assert type(parser.error) is type(reference.error)
    assert str(parser.error) == str(reference.error)
    assert parser.buffered == reference.buffered
    if isinstance(name, str) and not tail:
        assert whole == [Subscribe(publisher=name, subscriber=sid, initial_demand=demand)]


@pytest.mark.parametrize("name", ["echo", "x" * 9, "\u00e9" * 5])
def test_a_read_of_one_subscribe_is_held_to_max_string_length(name: str) -> None:
    """A read that is exactly one subscribe (taken without the parse loop) gives the error the
    loop gives for a name longer than max_string_length, and the frame for one as long."""
    data = encode(Subscribe(publisher=name, subscriber=1, initial_demand=1))
    for limit in (len(name.encode()) - 1, len(name.encode())):
        alone = FrameParser(max_element_size=1 << 20, max_string_length=limit, max_extensions=64)
        longer = FrameParser(max_element_size=1 << 20, max_string_length=limit, max_extensions=64)
        got = alone.feed(memoryview(bytearray(data)))  # a reused-buffer-like view, as a transport gives
        reference = longer.feed(data + encode(Request(subscriber=9, demand=9)))
        assert type(alone.error) is type(longer.error) and str(alone.error) == str(longer.error)
        frame = [] if alone.error is not None else [Subscribe(publisher=name, subscriber=1, initial_demand=1)]
        assert got == reference[: len(got)] == frame


def test_a_subscribe_read_again_is_the_frame_read_last() -> None:
    """A read that is the same subscribe as the last one read alone gives that frame again
    (frames are immutable), and any other read its own frame or error, as the loop does."""
    parser = make_parser()
    echo = encode(Subscribe(publisher="echo?d=1", subscriber=1, initial_demand=1))
    first = parser.feed(memoryview(bytearray(echo)))
    assert first == [Subscribe(publisher="echo?d=1", subscriber=1, initial_demand=1)]
    assert parser.feed(memoryview(bytearray(echo)))[0] is first[0]
    other = encode(Subscribe(publisher="echo?d=1", subscriber=2, initial_demand=1))
    assert parser.feed(other) == [Subscribe(publisher="echo?d=1", subscriber=2, initial_demand=1)]
    assert parser.feed(echo) == first
    bad = bytes([FrameType.SUBSCRIBE, 2, 0xFF, 0xFE, 1, 1])  # not UTF-8
    assert parser.feed(bad) == [] and parser.error is not None
    assert parser.feed(echo) == []  # nothing after an error, the last subscribe's bytes included


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([FrameType.ON_NEXT, FrameType.REQUEST, FrameType.CANCEL]),
    st.sampled_from([0, 1, 127, 128]),
    st.binary(max_size=140),
    st.sampled_from([0x7F, 0x80, 1 << 20]),
    st.booleans(),
    st.booleans(),
)
def test_a_read_of_one_short_frame_parses_as_in_a_longer_read(
    kind: int, sid: int, rest: bytes, max_element: int, batch: bool, fixed: bool
) -> None:
    """A read that is exactly one request or one short onNext with one-byte fields (taken
    without the parse loop) gives the frame, of the same type, or the same error, that the
    parse loop gives for those bytes followed by another frame; so does any near miss."""
    data = bytes([kind]) + encode_varint(sid) + rest[:2]
    if kind == FrameType.ON_NEXT and len(rest) > 2:
        data = data[:2] + bytes([rest[0] & 0x7F]) + rest[1 : 1 + (rest[0] & 0x7F)]
    after = encode(Request(subscriber=9, demand=9))

    def parser() -> FrameParser:
        made = FrameParser(
            max_element_size=max_element, max_string_length=1 << 16, max_extensions=64, batch_on_next=batch
        )
        if fixed:
            made.element_sizes[1] = 4  # a stream with an elementSize: no length prefix (§7)
        return made

    alone, longer = parser(), parser()
    got = alone.feed(memoryview(bytearray(data)))  # a reused-buffer-like view, as a transport gives
    reference = longer.feed(data + after)
    if longer.error is not None or alone.error is not None or alone.buffered:
        assert type(alone.error) is type(longer.error) or alone.buffered  # an error, or one to come
        return
    assert [type(f) for f in got] == [type(f) for f in reference[: len(got)]]
    assert flatten(got) == flatten(reference)[: len(flatten(got))]
    assert flatten(reference)[len(flatten(got)) :] == [Request(subscriber=9, demand=9)]


def test_receive_is_receive_data_then_events_received() -> None:
    """``receive`` gives the events ``receive_data`` and ``events_received`` give, handed over."""
    twins = [_pair(), _pair()]
    reads: list[bytes] = []
    for client, server in twins:
        client.send(Subscribe(publisher="p", subscriber=1, initial_demand=2))
        server.receive_data(b"".join(client.data_to_send()))
        server.send(OnSubscribe(subscriber=1))
        server.on_next(1, b"a")
        reads = [b"".join(server.data_to_send())]
        server.on_next(1, b"b")
        server.send(OnComplete(subscriber=1))
        reads.append(b"".join(server.data_to_send()))
        reads.append(encode(OnNext(subscriber=1, element=b"late")))  # after the end: a violation
    (by_receive, _), (by_parts, _) = twins
    for data in reads:
        events = by_receive.receive(data)
        assert by_receive.events_received() == []
        assert by_parts.receive_data(data) == len(data)
        assert repr(events) == repr(by_parts.events_received())  # (errors compare by identity)
    assert by_receive.state is by_parts.state
