"""Frames (PROTOCOL.md §3): validation, the published vectors, parse(encode(f)) == f."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstreams.wire import (
    Cancel,
    ClientHello,
    FrameType,
    Goodbye,
    OnError,
    OnNext,
    OnNextPacked,
    OnSubscribe,
    Request,
    Subscribe,
    encode,
)
from rstreams.wire._parser import Parsed
from rstreams.wire._varint import varint_size
from rstreams.wire.frames import FRAME_CLASSES, Frame
from testkit.scripts import load_script
from testkit.wire import feed_three_ways, frames_without_size, packed, parser

ROOT = Path(__file__).resolve().parents[2]


def load_docs_module() -> ModuleType:
    return load_script("docs/make_protocol_docs.py")


def load_vectors() -> list[dict[str, Any]]:
    data = json.loads((ROOT / "docs" / "protocol-vectors.json").read_text())
    vectors: list[dict[str, Any]] = data["vectors"]
    return vectors


VECTORS = load_vectors()


def test_vectors_cover_every_message_type() -> None:
    """docs/protocol-vectors.json has an example of each of the 13 core messages and of every
    extension message PROTOCOL.md defines (§14, §15)."""
    docs = load_docs_module()
    assert {v["code"] for v in VECTORS} == {t.value for t in FrameType} | set(docs.EXTENSION_MESSAGES)


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"{v['type']}:{v['hex'][:20]}")
def test_vector_round_trip(vector: dict[str, Any]) -> None:
    """Each vector encodes to its bytes, and its bytes parse back whole, bytewise and with trailing data."""
    docs = load_docs_module()
    frame = docs.frame_from_json(vector["type"], vector["fields"])
    data = bytes.fromhex(vector["hex"])
    assert data[0] == vector["code"]
    assert encode(frame, element_size=vector["element_size"]) == data
    sizes = {frame.subscriber: vector["element_size"]} if vector["element_size"] else None
    feed_three_ways(data, [frame], sizes)


@given(frames_without_size)
def test_parse_encode_round_trip(frame: Frame) -> None:
    """parse(encode(f)) == f for every frame type, fed whole, bytewise and with trailing bytes."""
    feed_three_ways(encode(frame), [frame])


@given(packed())
def test_packed_round_trip(frame: OnNextPacked) -> None:
    """onNextPacked parses given the subscription's elementSize."""
    feed_three_ways(encode(frame), [frame], {frame.subscriber: frame.element_size})
    assert b"".join(frame.split()) == frame.elements and len(frame.split()) == frame.count


@given(st.integers(1, 64), st.data())
def test_fixed_size_on_next_round_trip(size: int, data: st.DataObject) -> None:
    """On a fixed-size stream onNext has no length prefix and still round-trips."""
    sid = data.draw(st.integers(0, 2**64 - 1))
    frame = OnNext(subscriber=sid, element=data.draw(st.binary(min_size=size, max_size=size)))
    raw = encode(frame, element_size=size)
    assert len(raw) == 1 + varint_size(sid) + size
    feed_three_ways(raw, [frame], {frame.subscriber: size})


@given(st.lists(frames_without_size, max_size=8), st.data())
def test_any_chunking_gives_the_same_frames(frames: list[Frame], data: st.DataObject) -> None:
    """However the byte stream is cut, the same frames come out."""
    raw = b"".join(encode(f) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    p = parser()
    got: list[Parsed] = []
    start = 0
    for cut in [*cuts, len(raw)]:
        got += p.feed(raw[start:cut])
        start = cut
    assert got == frames and p.buffered == 0


@pytest.mark.parametrize(
    ("cls", "kwargs", "exc"),
    [
        (Subscribe, {"publisher": "p", "subscriber": -1}, ValueError),
        (Subscribe, {"publisher": "p", "subscriber": 2**64}, ValueError),
        (Subscribe, {"publisher": b"p", "subscriber": 1}, TypeError),
        (Subscribe, {"publisher": "\ud800", "subscriber": 1}, ValueError),
        (Request, {"subscriber": 1, "demand": True}, TypeError),
        (Request, {"subscriber": 1.0, "demand": 1}, TypeError),
        (OnNext, {"subscriber": 1, "element": bytearray(b"x")}, TypeError),
        (OnNextPacked, {"subscriber": 1, "count": 0, "elements": b""}, ValueError),
        (OnNextPacked, {"subscriber": 1, "count": 2, "elements": b"abc"}, ValueError),
        (ClientHello, {"version": 256}, ValueError),
        (ClientHello, {"extensions": [1]}, TypeError),
        (ClientHello, {"extensions": (-1,)}, ValueError),
        (OnError, {"subscriber": 1, "error": None}, TypeError),
        (Goodbye, {"reason": 3}, TypeError),
        (OnSubscribe, {"subscriber": 1, "element_size": -1}, ValueError),
    ],
)
def test_frames_validate_themselves(cls: type[Frame], kwargs: dict[str, Any], exc: type[Exception]) -> None:
    """Building a frame with a bad field raises at once."""
    with pytest.raises(exc):
        cls(**kwargs)


def test_frames_are_frozen_and_keyword_only() -> None:
    """Frames are immutable value objects built with keywords."""
    frame = Cancel(subscriber=1)
    with pytest.raises(AttributeError):
        frame.subscriber = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Cancel(1)  # type: ignore[call-arg]
    assert Cancel(subscriber=1) == frame and hash(Cancel(subscriber=1)) == hash(frame)


def test_encode_checks_fixed_element_size() -> None:
    """encode refuses an element that does not match the stream's elementSize."""
    with pytest.raises(ValueError, match="exactly 8"):
        encode(OnNext(subscriber=1, element=b"abc"), element_size=8)
    with pytest.raises(ValueError, match="8 bytes each"):
        encode(OnNextPacked(subscriber=1, count=1, elements=b"abc"), element_size=8)


def test_type_table_is_one_to_one() -> None:
    """Each type code has one class and 0x00 is not used."""
    assert len(set(FRAME_CLASSES.values())) == len(FRAME_CLASSES) == 13
    assert 0 not in FRAME_CLASSES
