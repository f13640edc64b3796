"""Output ordering (wire/_output.py): large payloads by reference, split elements round-robin."""

from __future__ import annotations

from rstreams.wire import OnNext, OnNextLastPart, OnNextPart, encode
from rstreams.wire._output import Output
from rstreams.wire._streams import new_stream
from rstreams.wire.frames import on_next_head, on_next_header


def test_large_payloads_are_handed_over_without_a_copy() -> None:
    """write_large puts the head in the buffer and the payload itself in the chunk list."""
    output = Output(part_size=1 << 20)
    payload = b"p" * 20_000
    head = on_next_head(on_next_header(1), len(payload), 0)
    output.write_large(head, payload)
    chunks = output.take(1 << 20)
    assert chunks[1] is payload and b"".join(chunks) == encode(OnNext(subscriber=1, element=payload))
    assert not output.pending


def test_many_large_payloads_share_one_head_and_keep_their_place() -> None:
    """write_many_large: each payload by reference behind the shared head, after what was buffered."""
    output = Output(part_size=1 << 20)
    output.emit(3, b"<before>")
    payloads = [b"p" * 20_000, b"q" * 20_000, b"r" * 20_000]
    output.write_many_large(on_next_head(on_next_header(1), 20_000, 0), payloads)
    output.emit(3, b"<after>")
    chunks = output.take(1 << 20)
    assert all(chunks[i] is payloads[i // 2] for i in (1, 3, 5))  # by reference
    frames = b"".join(encode(OnNext(subscriber=1, element=payload)) for payload in payloads)
    assert b"".join(chunks) == b"<before>" + frames + b"<after>"
    assert not output.pending


def test_split_elements_interleave_and_later_frames_wait_behind_them() -> None:
    """Two split elements go out one part per stream per round; a frame emitted behind one keeps its place."""
    output = Output(part_size=2)
    one, two = new_stream(1, True, 9), new_stream(2, True, 9)
    output.split(one, b"abcd")
    output.split(two, b"wxyz")
    output.emit(1, b"<after 1>")
    output.emit(3, b"<3 direct>")
    assert output.pending
    got = b"".join(output.take(1 << 20))
    assert got == b"".join(
        [
            b"<3 direct>",
            encode(OnNextPart(subscriber=1, element_id=0, data=b"ab")),
            encode(OnNextPart(subscriber=2, element_id=0, data=b"wx")),
            encode(OnNextLastPart(subscriber=1, element_id=0, data=b"cd")),
            encode(OnNextLastPart(subscriber=2, element_id=0, data=b"yz")),
            b"<after 1>",  # the next round: one part (or what precedes it) per stream per round
        ]
    )
    assert one.next_element_id == two.next_element_id == 1
    assert not output.take(1 << 20)


def test_take_stops_near_the_byte_budget() -> None:
    """take(limit) sends parts until about limit bytes; the rest stays for the next call."""
    output = Output(part_size=10)
    output.split(new_stream(1, True, 1), b"x" * 100)
    first = b"".join(output.take(25))
    assert first.count(b"x") == 30 and output.pending
    rest = b"".join(output.take(1 << 20))
    assert first.count(b"x") + rest.count(b"x") == 100 and not output.pending
