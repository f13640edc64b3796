"""The parser fed from ReadBuffers, as StreamProtocol feeds it: a large element cut by the end of
a read is kept as a view of that read (one copy in all, when joined), the buffer says so
(``lent``), and the reader reads into another one next. Every buffer the parser may no longer
hold a view of is overwritten after each feed: the elements still come out whole."""

from __future__ import annotations

import random

import pytest

from rstreams.wire import OnComplete, OnNext, Request
from rstreams.wire._parser import FrameParser, Parsed, ReadBuffer
from rstreams.wire.events import OnNextBatch
from rstreams.wire.frames import Frame
from testkit.wire import wire

SIZES = [65536, 16384, 20000, 1, 65535, 300, 200_000, 65536, 17, 40000]
FRAMES: list[Frame] = [
    OnNext(
        subscriber=1 + i % 2, element=bytes([(i * 11 + k) % 253 for k in range(251)]) * (size // 251) + b"t"
    )
    for i, size in enumerate(SIZES)
]
FRAMES.insert(3, Request(subscriber=5, demand=9))
FRAMES.append(OnComplete(subscriber=1))
DATA = wire(*FRAMES)
BUFFER = 100_000


def _elements(frames: list[Parsed]) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for frame in frames:
        if isinstance(frame, OnNextBatch):
            out += [(frame.subscriber, e) for e in frame.elements]
        elif isinstance(frame, OnNext):
            out.append((frame.subscriber, frame.element))
    return out


EXPECTED = _elements(list(FRAMES))


def _feed(cuts: list[int], *, batch: bool, data: bytes = DATA) -> tuple[list[Parsed], int]:
    """Feed ``data`` in reads of ``cuts`` bytes (at most BUFFER each); returns the frames and how many
    reads the parser kept a view of."""
    parser = FrameParser(
        max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64, batch_on_next=batch
    )
    current, spare = ReadBuffer(BUFFER), ReadBuffer(BUFFER)
    frames: list[Parsed] = []
    pos = lent = 0
    for size in cuts:
        if current.lent:  # what StreamProtocol.get_buffer does
            current.lent = False
            current, spare = spare, current
        read = data[pos : pos + size]
        current[: len(read)] = read
        frames += parser.feed(memoryview(current)[: len(read)])
        # Only the read just fed may still be viewed, and only if the parser said so.
        spare[:] = b"\xee" * BUFFER
        if current.lent:
            lent += 1
        else:
            current[:] = b"\xee" * BUFFER
        pos += size
    assert pos >= len(data) and parser.error is None
    return frames, lent


@pytest.mark.parametrize("batch", [False, True], ids=["frames", "batches"])
@pytest.mark.parametrize("read", [1000, 16384, 65536, 65541, 70_000, BUFFER])
def test_reads_of_one_size(read: int, batch: bool) -> None:
    frames, lent = _feed([read] * (len(DATA) // read + 1), batch=batch)
    assert _elements(frames) == EXPECTED
    assert frames[-1] == OnComplete(subscriber=1)
    if read >= 65536:
        assert lent  # cut elements were kept as views, not copied


@pytest.mark.parametrize("seed", range(20))
def test_reads_cut_at_random(seed: int) -> None:
    rng = random.Random(seed)
    cuts: list[int] = []
    while sum(cuts) < len(DATA):
        cuts.append(rng.choice([1, 2, 5, rng.randrange(1, 70_000), rng.randrange(60_000, BUFFER + 1)]))
    assert _elements(_feed(cuts, batch=seed % 2 == 0)[0]) == EXPECTED


def test_a_cut_element_is_kept_as_a_view_and_joined_once() -> None:
    element = bytes(range(256)) * 256  # 64 KiB
    data = wire(OnNext(subscriber=1, element=element))
    parser = FrameParser(max_element_size=1 << 20, max_string_length=100, max_extensions=8)
    first = ReadBuffer(40_000)
    first[:] = data[:40_000]
    assert parser.feed(memoryview(first)) == []
    assert first.lent and parser.buffered > 30_000
    second = ReadBuffer(40_000)
    rest = data[40_000:]
    second[: len(rest)] = rest
    assert parser.feed(memoryview(second)[: len(rest)]) == [OnNext(subscriber=1, element=element)]
    assert not second.lent


def test_other_buffers_are_copied_from_as_before() -> None:
    element = b"q" * 70_000
    data = wire(OnNext(subscriber=1, element=element))
    parser = FrameParser(max_element_size=1 << 20, max_string_length=100, max_extensions=8)
    buffer = bytearray(data[:30_000])
    assert parser.feed(memoryview(buffer)) == []
    buffer[:] = b"\xee" * len(buffer)  # a plain buffer is the reader's again once the feed returns
    assert parser.feed(data[30_000:]) == [OnNext(subscriber=1, element=element)]


RUNS: list[Frame] = [
    OnNext(subscriber=sid, element=bytes([k]) * size)
    for k, (sid, size) in enumerate(
        [(1, 20_000)] * 3 + [(1, 30_000), (2, 30_000), (2, 30_000), (1, 20_000), (1, 20_001), (1, 20_001)]
    )
]
"""Runs of large frames with equal headers (one subscriber, one length), and changes of each."""


@pytest.mark.parametrize("batch", [False, True], ids=["frames", "batches"])
@pytest.mark.parametrize("read", [20_005, 60_015, BUFFER])
def test_runs_of_equal_headers_and_their_ends(read: int, batch: bool) -> None:
    data = wire(*RUNS)
    frames, _ = _feed([read] * (len(data) // read + 1), batch=batch, data=data)
    assert _elements(frames) == _elements(list(RUNS))


def test_in_a_run_of_large_frames_the_buffer_says_the_read_size_that_cuts_none() -> None:
    element = bytes(range(256)) * 256  # 64 KiB: 65541 bytes a frame
    data = wire(*[OnNext(subscriber=1, element=element)] * 40, OnComplete(subscriber=1))
    parser = FrameParser(
        max_element_size=1 << 20, max_string_length=100, max_extensions=8, batch_on_next=True
    )
    current, spare = ReadBuffer(3 * BUFFER), ReadBuffer(3 * BUFFER)
    frames: list[Parsed] = []
    pos = lent = 0
    sizes: list[int] = []
    while pos < len(data):
        size = current.fits or 100_000  # the first read cuts an element: the others need not
        current.fits = 0
        if current.lent:  # what StreamProtocol.get_buffer does
            current.lent = False
            current, spare = spare, current
        read = data[pos : pos + size]
        current[: len(read)] = read
        frames += parser.feed(memoryview(current)[: len(read)])
        spare[:] = b"\xee" * len(spare)
        lent += current.lent
        sizes.append(size)
        pos += len(read)
    assert _elements(frames) == [(1, element)] * 40 and frames[-1] == OnComplete(subscriber=1)
    assert lent == 1  # the first read's end only
    # After the first: the rest of the cut frame and four whole frames, then four whole frames.
    assert sizes[1] == (2 * 65541 - 100_000) + 4 * 65541 and set(sizes[2:-1]) == {4 * 65541}


def test_no_read_size_is_said_outside_runs_of_large_frames() -> None:
    parser = FrameParser(max_element_size=1 << 20, max_string_length=100, max_extensions=8)
    buffer = ReadBuffer(BUFFER)
    small = wire(*[OnNext(subscriber=1, element=b"s" * 100)] * 10)
    buffer[: len(small)] = small
    parser.feed(memoryview(buffer)[: len(small)])
    assert buffer.fits == 0
    big = wire(OnNext(subscriber=1, element=b"b" * (BUFFER + 10)))  # longer than the buffer: none fits
    buffer[:] = big[:BUFFER]
    parser.feed(memoryview(buffer))
    assert buffer.lent and buffer.fits == 0
