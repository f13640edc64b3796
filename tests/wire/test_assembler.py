"""Joining split elements (wire/_assembler.py): whole elements back, limits as verdicts."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.wire import LimitExceededError
from rstreams.wire._assembler import Assembler
from rstreams.wire._streams import Violation, new_stream


def assembler(element: int = 100, parts: int = 2, total: int = 150) -> Assembler:
    return Assembler(max_element_size=element, max_parts_in_flight=parts, max_reassembly_bytes=total)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=100), st.lists(st.integers(1, 99), max_size=6))
def test_any_split_joins_back(element: bytes, cuts: list[int]) -> None:
    """However an element is cut into parts, the last part returns it whole and nothing stays held."""
    a = assembler()
    s = new_stream(1, False, 1)
    bounds = [0, *sorted({c for c in cuts if c < len(element)}), len(element)]
    pieces = [element[x:y] for x, y in itertools.pairwise(bounds)]
    assert a.starts(1, 0)
    for piece in pieces[:-1]:
        assert a.add(s, 0, piece, last=False) is None
        assert not a.starts(1, 0) and a.unfinished(1) == 1
    assert a.add(s, 0, pieces[-1], last=True) == element
    assert a.held == (0, 0) and a.unfinished(1) == 0


def test_element_too_large_ends_only_its_stream() -> None:
    """Growing past max_element_size is a verdict naming the stream (§11)."""
    a = assembler(element=10)
    s = new_stream(4, False, 1)
    assert a.add(s, 0, b"x" * 6, last=False) is None
    verdict = a.add(s, 0, b"x" * 6, last=False)
    assert isinstance(verdict, Violation) and verdict.stream is s
    assert isinstance(verdict.error, LimitExceededError) and verdict.error.limit == "max_element_size"


def test_too_many_elements_in_flight_end_the_connection() -> None:
    """More than max_parts_in_flight unfinished elements is a connection verdict."""
    a = assembler(parts=2)
    s = new_stream(1, False, 3)
    a.add(s, 0, b"a", last=False)
    a.add(s, 1, b"b", last=False)
    verdict = a.add(s, 2, b"c", last=False)
    assert isinstance(verdict, Violation) and verdict.stream is None
    assert isinstance(verdict.error, LimitExceededError) and verdict.error.limit == "max_parts_in_flight"


def test_too_many_bytes_in_flight_end_the_connection() -> None:
    """Bytes held over all streams beyond max_reassembly_bytes is a connection verdict."""
    a = assembler(element=100, total=150)
    one, two = new_stream(1, False, 1), new_stream(2, False, 1)
    a.add(one, 0, b"x" * 90, last=False)
    verdict = a.add(two, 0, b"y" * 90, last=False)
    assert isinstance(verdict, Violation) and verdict.stream is None
    assert isinstance(verdict.error, LimitExceededError) and verdict.error.limit == "max_reassembly_bytes"


def test_drop_and_clear_free_what_was_held() -> None:
    """drop(sid) forgets one stream's unfinished elements; clear() everything."""
    a = assembler(parts=4)
    one, two = new_stream(1, False, 2), new_stream(2, False, 1)
    a.add(one, 0, b"ab", last=False)
    a.add(one, 1, b"c", last=False)
    a.add(two, 0, b"d", last=False)
    assert a.held == (3, 4) and a.unfinished(1) == 2
    a.drop(1)
    assert a.held == (1, 1) and a.unfinished(1) == 0
    a.clear()
    assert a.held == (0, 0) and a.unfinished(2) == 0
