"""The parser fed as a socket feeds it: every read in the same reused buffer, which is overwritten
after each feed. Large elements cut by reads anywhere (in their header, across several reads,
ending together with the next frame's start) come out whole: nothing keeps a view of a read."""

from __future__ import annotations

import random

import pytest

from rstreams.wire import OnComplete, OnNext, Request
from rstreams.wire._parser import FrameParser, Parsed
from rstreams.wire.events import OnNextBatch
from rstreams.wire.frames import Frame
from testkit.wire import wire

SIZES = [65536, 16384, 20000, 1, 65535, 300, 40000, 65536, 17]
FRAMES: list[Frame] = [
    OnNext(
        subscriber=1 + i % 2,
        element=bytes([(i * 7 + k) % 256 for k in range(size % 256 + 1)]) * (size // (size % 256 + 1)),
    )
    for i, size in enumerate(SIZES)
]
FRAMES.insert(3, Request(subscriber=5, demand=9))
FRAMES.append(OnComplete(subscriber=1))
DATA = wire(*FRAMES)


def _elements(frames: list[Parsed]) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for frame in frames:
        if isinstance(frame, OnNextBatch):
            out += [(frame.subscriber, bytes(e)) for e in frame.elements]
        elif isinstance(frame, OnNext):
            out.append((frame.subscriber, bytes(frame.element)))
    return out


EXPECTED = _elements(list(FRAMES))


def _feed_in_reads(cuts: list[int], *, batch: bool) -> list[Parsed]:
    parser = FrameParser(
        max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64, batch_on_next=batch
    )
    buffer = bytearray(max(cuts) if cuts else 1)
    frames: list[Parsed] = []
    pos = 0
    for size in cuts:
        read = DATA[pos : pos + size]
        buffer[: len(read)] = read
        frames += parser.feed(memoryview(buffer)[: len(read)])
        buffer[:] = b"\xee" * len(buffer)  # the next read overwrites it
        pos += size
    assert pos >= len(DATA) and parser.error is None
    return frames


@pytest.mark.parametrize("batch", [False, True], ids=["frames", "batches"])
@pytest.mark.parametrize("read", [1000, 4096, 16384, 65536, 65541, 100_000, 1 << 20])
def test_reads_of_one_size(read: int, batch: bool) -> None:
    cuts = [read] * (len(DATA) // read + 1)
    frames = _feed_in_reads(cuts, batch=batch)
    assert _elements(frames) == EXPECTED
    assert frames[-1] == OnComplete(subscriber=1)


@pytest.mark.parametrize("seed", range(20))
def test_reads_cut_at_random(seed: int) -> None:
    rng = random.Random(seed)
    cuts: list[int] = []
    while sum(cuts) < len(DATA):
        cuts.append(rng.choice([1, 2, 5, rng.randrange(1, 70_000), rng.randrange(60_000, 140_000)]))
    assert _elements(_feed_in_reads(cuts, batch=seed % 2 == 0)) == EXPECTED


def test_an_element_ends_in_the_read_that_brings_the_next_frames() -> None:
    first = len(wire(FRAMES[0]))
    cuts = [first // 3, first // 3, first - 2 * (first // 3) + 10, len(DATA)]  # 3 reads, the last with more
    assert _elements(_feed_in_reads(cuts, batch=True)) == EXPECTED


@pytest.mark.parametrize("batch", [False, True], ids=["frames", "batches"])
def test_a_header_remembered_from_an_earlier_read_means_only_itself(batch: bool) -> None:
    """The parser remembers the last large header it decoded, across reads: the same bytes again
    are that id and length; a header of another id or another length, in the next read, is
    decoded as itself (longer headers too: a two-byte id, a four-byte length)."""
    parser = FrameParser(
        max_element_size=4 << 20, max_string_length=1 << 16, max_extensions=64, batch_on_next=batch
    )
    reads = [
        [OnNext(subscriber=1, element=b"a" * 20000)] * 2,
        [OnNext(subscriber=2, element=b"b" * 20000), OnNext(subscriber=1, element=b"c" * 20000)],
        [OnNext(subscriber=1, element=b"d" * 30000), OnNext(subscriber=1, element=b"e" * 20000)],
        [OnNext(subscriber=300, element=b"f" * 20000), OnNext(subscriber=1, element=b"g" * (3 << 20))],
    ]
    got: list[tuple[int, bytes]] = []
    for frames in reads:
        got += _elements(parser.feed(memoryview(bytearray(wire(*frames)))))
    assert got == _elements([frame for frames in reads for frame in frames])
    assert parser.error is None and parser.buffered == 0
