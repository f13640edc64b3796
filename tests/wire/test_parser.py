"""The incremental parser (PROTOCOL.md §2, §3, §11): errors, limits, buffering."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from rstreams.wire import (
    ExtensionError,
    ExtensionMessage,
    FrameError,
    FrameType,
    LimitExceededError,
    OnComplete,
    OnNext,
    OnNextBatch,
    OnNextPacked,
    OnSubscribe,
    Request,
)
from rstreams.wire._parser import _DECODERS, FrameParser
from rstreams.wire._varint import encode_varint
from testkit.wire import parser, wire


@pytest.mark.parametrize("code", [0x00, 0x0E, 0x42, 0x7F])
def test_unknown_and_reserved_types_are_framing_errors(code: int) -> None:
    """Reserved and unknown type bytes stop parsing with a FrameError (§3)."""
    p = parser()
    frames = p.feed(wire(Request(subscriber=1, demand=1)) + bytes([code, 1, 2, 3]))
    assert frames == [Request(subscriber=1, demand=1)]
    assert isinstance(p.error, FrameError) and "unknown message type" in str(p.error)
    assert p.feed(b"\x05\x01\x01") == []  # nothing more once broken


def test_extension_messages_are_framed_generically() -> None:
    """0x80..0xFF: type, varint length, payload, whatever the extension (§4.4); whether the
    extension is active is the connection's business, not the parser's."""
    p = parser()
    frames = p.feed(b"\x80\x08" + bytes(8) + b"\x05\x01\x01")
    assert frames == [ExtensionMessage(type=0x80, payload=bytes(8)), Request(subscriber=1, demand=1)]
    assert p.error is None


def test_extension_types_no_extension_owns_are_refused_at_once() -> None:
    """A type no registered extension owns is refused at its type byte (§4.4)."""
    p = parser()
    assert p.feed(b"\xff") == []
    assert isinstance(p.error, ExtensionError) and "0xff" in str(p.error) and "§4.4" in p.error.reason


def test_extension_payload_is_capped_when_its_length_is_read() -> None:
    """An extension payload is capped by max_string_length like any other field (§11)."""
    p = parser()
    assert p.feed(b"\x80\xff\xff\x7f") == []
    assert isinstance(p.error, LimitExceededError)


def test_overlong_varint_in_a_frame() -> None:
    """An 11-byte varint is a framing error, reported without waiting for more."""
    p = parser()
    p.feed(bytes([FrameType.CANCEL]) + b"\xff" * 10)
    assert isinstance(p.error, FrameError)


def test_hostile_length_prefix_is_rejected_at_once() -> None:
    """A declared element length above the limit fails on the header alone (nothing buffered)."""
    p = parser(max_element_size=1000)
    p.feed(bytes([FrameType.ON_NEXT, 1]) + encode_varint(2**40))
    assert isinstance(p.error, LimitExceededError) and p.error.limit == "max_element_size"
    assert p.error.subscriber == 1 and p.buffered == 0


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        (bytes([FrameType.SUBSCRIBE]) + encode_varint(70_000), "max_string_length"),
        (bytes([FrameType.GOODBYE]) + encode_varint(70_000), "max_string_length"),
        (bytes([FrameType.ON_ERROR, 1]) + encode_varint(70_000), "max_string_length"),
        (bytes([FrameType.ON_NEXT_PART, 1, 0]) + encode_varint(2**21), "max_element_size"),
        (bytes([FrameType.ON_SUBSCRIBE, 1]) + encode_varint(2**21), "max_element_size"),
        (bytes([FrameType.CLIENT_HELLO, 0, 65]), "max_extensions"),
    ],
)
def test_every_length_has_a_limit(data: bytes, limit: str) -> None:
    """Strings, parts, element sizes and extension lists are all capped when their length is read."""
    p = parser()
    p.feed(data)
    assert isinstance(p.error, LimitExceededError) and p.error.limit == limit


def test_packed_count_times_size_is_capped() -> None:
    """onNextPacked's count x elementSize counts against max_element_size."""
    p = parser(max_element_size=64)
    p.feed(wire(OnSubscribe(subscriber=1, element_size=8)) + bytes([FrameType.ON_NEXT_PACKED, 1, 9]))
    assert isinstance(p.error, LimitExceededError)


def test_packed_needs_an_element_size() -> None:
    """onNextPacked on a subscription without elementSize is a framing error (§7)."""
    p = parser()
    p.feed(bytes([FrameType.ON_NEXT_PACKED, 1, 1, 0]))
    assert isinstance(p.error, FrameError)


def test_packed_count_zero() -> None:
    """count 0 is a framing error."""
    p = parser()
    p.feed(wire(OnSubscribe(subscriber=1, element_size=2)) + bytes([FrameType.ON_NEXT_PACKED, 1, 0]))
    assert isinstance(p.error, FrameError)


def test_invalid_utf8() -> None:
    """Strings must be valid UTF-8."""
    p = parser()
    p.feed(bytes([FrameType.GOODBYE, 2, 0xC3, 0x28]))
    assert isinstance(p.error, FrameError) and "UTF-8" in str(p.error)


def test_truncated_frame_at_eof() -> None:
    """A frame cut by the end of input is reported by eof()."""
    p = parser()
    assert p.feed(wire(OnNext(subscriber=1, element=b"hello"))[:-1]) == []
    error = p.eof()
    assert isinstance(error, FrameError) and "incomplete" in str(error)


def test_element_size_is_tracked_across_frames_in_one_chunk() -> None:
    """onSubscribe(elementSize) switches the framing of the onNext right behind it, and terminals reset it."""
    data = (
        wire(OnSubscribe(subscriber=3, element_size=4))
        + wire(OnNext(subscriber=3, element=b"abcd"), element_size=4)
        + wire(OnNextPacked(subscriber=3, count=2, elements=b"12345678"))
        + wire(OnComplete(subscriber=3))
        + wire(OnNext(subscriber=3, element=b"xy"))
    )
    p = parser()
    assert p.feed(data) == [
        OnSubscribe(subscriber=3, element_size=4),
        OnNext(subscriber=3, element=b"abcd"),
        OnNextPacked(subscriber=3, count=2, elements=b"12345678"),
        OnComplete(subscriber=3),
        OnNext(subscriber=3, element=b"xy"),
    ]
    assert p.element_sizes == {}


def test_large_element_in_small_reads_is_not_reparsed_each_time() -> None:
    """While a declared frame is incomplete, reads only append (no quadratic re-parsing)."""
    element = bytes(range(256)) * 1000
    data = wire(OnNext(subscriber=1, element=element))
    p = parser()
    frames = []
    for i in range(0, len(data), 1000):
        frames += p.feed(data[i : i + 1000])
        if i + 1000 < len(data):
            assert p._need == len(data)
    assert frames == [OnNext(subscriber=1, element=element)]


def test_accepts_bytearray_and_memoryview() -> None:
    """Any bytes-like input works; elements come out as bytes."""
    data = wire(OnNext(subscriber=200, element=b"z" * 200))
    for chunk in (bytearray(data), memoryview(data)):
        frames = parser().feed(chunk)
        assert frames == [OnNext(subscriber=200, element=b"z" * 200)]
        assert type(frames[0].element) is bytes  # type: ignore[union-attr]


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("limit", [1, 50, 127])
def test_small_element_limits_hold_for_one_byte_lengths(batch: bool, limit: int) -> None:
    """max_element_size below 128 is enforced on onNext whose length fits one byte (§11)."""
    p = FrameParser(max_element_size=limit, max_string_length=1000, max_extensions=8, batch_on_next=batch)
    fits = wire(OnNext(subscriber=1, element=b"x" * limit))
    assert (len(p.feed(fits)), p.error) == (1, None)
    assert p.feed(wire(OnNext(subscriber=1, element=b"x" * (limit + 1)))) == []
    assert isinstance(p.error, LimitExceededError) and p.error.limit == "max_element_size"


def test_every_type_byte_has_a_decoder() -> None:
    """The decoder table covers all 256 type bytes: each core type by its own decoder, 0x80..0xFF
    as extension messages (subscribeMetadata's remembers the last one, §18.1), everything else
    as unknown."""
    assert len(_DECODERS) == 256
    unknown = {code for code in range(256) if _DECODERS[code] is FrameParser._unknown}
    own = {FrameParser._extension, FrameParser._subscribe_metadata}
    extension = {code for code in range(256) if _DECODERS[code] in own}
    assert _DECODERS[0x94] is FrameParser._subscribe_metadata
    assert unknown == {0x00} | set(range(0x0E, 0x80))
    assert extension == set(range(0x80, 0x100))
    assert {code for code in range(256) if code not in unknown | extension} == {t.value for t in FrameType}


def _elements(frames: Sequence[object]) -> list[tuple[int, bytes]]:
    """(subscriber, element) of every onNext in ``frames``, batches flattened."""
    out: list[tuple[int, bytes]] = []
    for frame in frames:
        if isinstance(frame, OnNextBatch):
            out += [(frame.subscriber, element) for element in frame.elements]
        else:
            assert isinstance(frame, OnNext)
            out.append((frame.subscriber, frame.element))
    return out


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("read", [1 << 20, 70_000, 20_000, 4096, 1000])
def test_large_elements_come_out_whole_and_in_order_however_read(batch: bool, read: int) -> None:
    """Large onNext frames (one- and two-byte ids, three-byte lengths) of interleaved
    subscribers, read in chunks of any size: the same elements in the same order; in batch
    mode consecutive ones of one subscriber share an OnNextBatch."""
    sent = [(1, bytes([i]) * (16_384 + i * 1000)) for i in range(3)]
    sent += [(300, b"b" * 20_000), (300, b"c" * 70_000), (1, b"d" * 16_384), (1, b"e" * 5)]
    data = b"".join(wire(OnNext(subscriber=sid, element=element)) for sid, element in sent)
    p = FrameParser(max_element_size=1 << 20, max_string_length=1000, max_extensions=8, batch_on_next=batch)
    frames: list[object] = []
    for i in range(0, len(data), read):
        frames += p.feed(memoryview(data)[i : i + read])
    assert p.error is None and _elements(frames) == sent
    if batch and read > len(data):
        assert [type(f) for f in frames] == [OnNextBatch, OnNextBatch, OnNextBatch]


def test_large_element_with_a_non_minimal_length_is_a_framing_error() -> None:
    """The inline three-byte length decoding refuses what decode_varint refuses (§2.1)."""
    data = bytes([FrameType.ON_NEXT, 1, 0x80, 0x81, 0x00]) + bytes(1 << 15)
    p = FrameParser(max_element_size=1 << 22, max_string_length=1000, max_extensions=8, batch_on_next=True)
    assert p.feed(data) == []
    assert isinstance(p.error, FrameError) and "non-minimal" in str(p.error)


def _feed_limited(p: FrameParser, data: bytes, read: int, limit: int) -> list[object]:
    """Reads of ``read`` bytes, each fed in parts of about ``limit`` bytes, as the pump does."""
    frames: list[object] = []
    for i in range(0, len(data), read):
        chunk = memoryview(data)[i : i + read]
        while chunk:
            frames += p.feed(chunk, limit)
            assert p.taken > 0 or p.error is not None
            chunk = chunk[p.taken :]
    return frames


@pytest.mark.parametrize("batch", [False, True])
def test_a_limit_takes_whole_frames_and_large_elements_whole(batch: bool) -> None:
    """feed(data, limit): about ``limit`` bytes of small frames, a first frame longer than the
    limit whole, large elements whole whatever the limit; the rest is left to feed again."""
    small = [(1, bytes([i]) * 10) for i in range(100)]
    data = b"".join(wire(OnNext(subscriber=sid, element=element)) for sid, element in small)
    p = FrameParser(max_element_size=1 << 20, max_string_length=1000, max_extensions=8, batch_on_next=batch)
    frames = p.feed(data, 100)
    assert p.taken == 8 * 13  # whole 13-byte frames: seven, and the one that runs past the limit
    assert _elements(frames) == small[:8]
    long = wire(OnNext(subscriber=2, element=b"L" * 5000))
    p = FrameParser(max_element_size=1 << 20, max_string_length=1000, max_extensions=8, batch_on_next=batch)
    assert _elements(p.feed(long + data, 100)) == [(2, b"L" * 5000)] and p.taken == len(long)
    large = b"".join(wire(OnNext(subscriber=3, element=bytes([i]) * 20_000)) for i in range(3))
    p = FrameParser(max_element_size=1 << 20, max_string_length=1000, max_extensions=8, batch_on_next=batch)
    got = _elements(p.feed(large + data, 100))  # the large ones, then about the limit's worth
    assert len(got) == 3 + 8 and got[3:] == small[:8] and p.taken == len(large) + 8 * 13


def test_limited_feeding_parses_like_unlimited() -> None:
    """However the input is read and limited, the same frames come out, in order."""
    rng = random.Random(13)
    sent = []
    for _ in range(300):
        size = rng.choice([0, 1, 8, 100, 200, 5000, 17_000, 70_000])
        sent.append((rng.choice([1, 2, 300]), bytes([rng.randrange(256)]) * size))
    data = b"".join(wire(OnNext(subscriber=sid, element=element)) for sid, element in sent)
    data += wire(Request(subscriber=5, demand=3)) + wire(OnComplete(subscriber=1))
    for read, limit in [(1 << 20, 64), (4096, 4096), (1000, 64), (70_001, 300), (7, 5)]:
        for batch in (False, True):
            p = FrameParser(
                max_element_size=1 << 20, max_string_length=1000, max_extensions=8, batch_on_next=batch
            )
            frames = _feed_limited(p, data, read, limit)
            assert p.error is None
            assert _elements(frames[:-2]) == sent
            assert frames[-2:] == [Request(subscriber=5, demand=3), OnComplete(subscriber=1)]
