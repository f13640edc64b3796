"""Encoding subscribe metadata on the subscribing side (PROTOCOL.md §18.1, §18.3): a dict whose
items were encoded before is not encoded again, and that changes neither the bytes nor what
is refused."""

from __future__ import annotations

import pytest

from rstreams.net._metadata import entries
from rstreams.wire import _metadata
from rstreams.wire._metadata import ENCODED_KEPT, _encode_entries, encode_entries

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def nothing_remembered_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no entries remembered (other tests encode entries too)."""
    monkeypatch.setattr(_metadata, "_encoded", {})
    monkeypatch.setattr(_metadata, "_misses", 0)
    monkeypatch.setattr(_metadata, "_skips", 0)


def test_equal_items_give_the_same_bytes_without_encoding_again() -> None:
    headers: dict[str, str | bytes] = {"traceparent": TRACE, "x-tenant": b"acme"}
    first = entries(headers)
    assert first == encode_entries(headers)
    assert entries(dict(headers)) is first  # a new dict with the same items: remembered
    assert (
        entries({"x-tenant": b"acme", "traceparent": TRACE})
        == encode_entries({"x-tenant": b"acme", "traceparent": TRACE})
        != first
    )  # the order is part of the bytes
    headers["x-tenant"] = "other"  # a dict changed since: its new items
    assert entries(headers) == encode_entries(headers) != first


def test_values_without_a_hash_and_mappings_that_are_not_dicts_are_encoded_each_time() -> None:
    mutable = {"x": bytearray(b"1")}  # bytes-like, taken as bytes (no hash: not remembered)
    assert entries(mutable) == encode_entries({"x": b"1"})
    assert entries(mutable) == encode_entries({"x": b"1"})

    class Headers(dict[str, str]):
        pass

    assert entries(Headers(x="1")) == encode_entries({"x": "1"})


def test_what_is_refused_stays_refused_whatever_was_remembered() -> None:
    assert entries({"x": "1"}) == encode_entries({"x": "1"})
    with pytest.raises(ValueError, match=r"§18\.1"):
        entries({"X": "1"})
    with pytest.raises(TypeError, match="str or bytes"):
        entries({"x": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="mapping"):
        entries([("x", "1")])  # type: ignore[arg-type]


def test_the_remembered_encodings_are_bounded() -> None:
    for i in range(ENCODED_KEPT + 10):
        assert entries({"n": str(i)}) == encode_entries({"n": str(i)})
    assert len(_metadata._encoded) <= ENCODED_KEPT
    assert entries({"n": "new"}) == encode_entries({"n": "new"})  # past the bound: still right


def test_after_many_misses_in_a_row_dicts_are_looked_up_now_and_then_and_still_found() -> None:
    headers = {"x-tenant": "acme"}
    remembered = entries(headers)
    for i in range(ENCODED_KEPT - 1):  # fills what is remembered
        entries({"traceparent": f"f{i:054}"})
    looked_up = 0
    for i in range(3 * ENCODED_KEPT):  # new ones: a lookup in vain each (then only now and then)
        fresh = {"traceparent": f"{i:055x}"}
        looked_up += _metadata._skips == 0
        assert entries(fresh) == _encode_entries(fresh)
    assert ENCODED_KEPT + 2 <= looked_up <= ENCODED_KEPT + 3  # KEPT in vain, then 1 in KEPT
    for _ in range(2 * ENCODED_KEPT):  # the remembered dict comes back: found at the next lookup
        if entries(dict(headers)) is remembered:
            break
    else:
        raise AssertionError("a remembered dict was not found again")
    assert _metadata._misses == 0
    assert entries(dict(headers)) is remembered  # and then every time
    for _ in range(2 * ENCODED_KEPT):  # between lookups too, every dict is checked
        with pytest.raises(ValueError, match=r"§18\.1"):
            entries({"X": "1"})
