"""Varints (PROTOCOL.md §2.1): round trip, minimal length, strict decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstreams.wire import FrameError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint, varint_size

U64 = 2**64 - 1


@pytest.mark.parametrize(
    ("value", "hexed"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (2**63 - 1, "ffffffffffffffff7f"),
        (U64, "ffffffffffffffffff01"),
    ],
)
def test_known_encodings(value: int, hexed: str) -> None:
    """The examples of §2.1 encode and decode exactly."""
    data = bytes.fromhex(hexed)
    assert encode_varint(value) == data
    assert decode_varint(data, 0, len(data)) == (value, len(data))


@given(st.integers(0, U64))
def test_round_trip_and_minimal_length(value: int) -> None:
    """Every value round-trips, with the minimal number of bytes."""
    data = encode_varint(value)
    assert len(data) == varint_size(value) == max(1, -(-value.bit_length() // 7))
    assert decode_varint(data + b"\x99", 0, len(data)) == (value, len(data))
    assert data[-1] != 0 or len(data) == 1


@given(st.integers(0, U64))
def test_every_proper_prefix_is_incomplete(value: int) -> None:
    """A varint cut short asks for more data, never guesses."""
    data = encode_varint(value)
    for cut in range(len(data)):
        with pytest.raises(Incomplete):
            decode_varint(data[:cut], 0, cut)


@pytest.mark.parametrize("value", [-1, 2**64, 2**70])
def test_encode_out_of_range(value: int) -> None:
    """Only 0..2**64-1 can be encoded."""
    with pytest.raises(ValueError, match="varint"):
        encode_varint(value)


@pytest.mark.parametrize(
    "hexed",
    [
        "ffffffffffffffffff02",  # 10 bytes but >= 2**64
        "ffffffffffffffffff7f",
        "ffffffffffffffffffff01",  # 11 bytes
        "8000",  # non-minimal 0
        "ff00",  # non-minimal 127
    ],
)
def test_rejects_overlong_and_non_minimal(hexed: str) -> None:
    """Over-long, overflowing and non-minimal varints are framing errors."""
    data = bytes.fromhex(hexed)
    with pytest.raises(FrameError):
        decode_varint(data, 0, len(data))


def test_overlong_detected_without_waiting() -> None:
    """Ten continuation bytes are an error at once, not a wait for an 11th."""
    data = b"\xff" * 10
    with pytest.raises(FrameError):
        decode_varint(data, 0, len(data))
