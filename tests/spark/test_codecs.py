"""Decoding elements to Arrow batches (no Spark): fast and element-by-element paths, errors."""

from __future__ import annotations

import datetime
import json

import msgpack
import pyarrow as pa
import pytest

from rstreams.spark import ElementError, arrow_ipc, arrow_rows
from rstreams.spark._codecs import decode_batches

pytestmark = pytest.mark.timeout(30)

UTC = datetime.UTC
SCHEMA = pa.schema(
    [
        pa.field("sensor", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("value", pa.float64(), nullable=False),
    ]
)


def decode(elements: list[bytes], codec: str = "json", first: int = 0) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for batch in decode_batches(elements, first, codec, SCHEMA, "p"):
        assert batch.schema.equals(SCHEMA)  # what Spark checks, nullability included
        rows.extend(batch.to_pylist())
    return rows


def test_json_objects_with_epoch_timestamps() -> None:
    """The fast path: numbers as seconds since the epoch, extra keys ignored."""
    rows = decode([json.dumps({"sensor": "a", "ts": 1.5, "value": 2.0, "extra": 1}).encode()])
    assert rows == [{"sensor": "a", "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, UTC), "value": 2.0}]


def test_json_iso_timestamps_arrays_and_missing_nullable_fields() -> None:
    """ISO strings, records as arrays in schema order, and absent nullable keys (null)."""
    rows = decode([b'{"ts": "2024-01-02T03:04:05", "value": 1}', b'["b", 0, 3.5]'])
    assert rows[0] == {"sensor": None, "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "value": 1.0}
    assert rows[1]["sensor"] == "b" and rows[1]["value"] == 3.5


def test_msgpack_and_arrow_codecs() -> None:
    """msgpack records; Arrow IPC elements selected by name and cast to the schema."""
    packed = msgpack.packb({"sensor": "m", "ts": 0, "value": 1.25})
    assert decode([packed], "msgpack")[0]["value"] == 1.25
    batch = pa.record_batch({"value": pa.array([1, 2], pa.int32()), "sensor": ["x", "y"], "ts": [0, 1]})
    arrow_rows = decode([arrow_ipc(batch.cast(batch.schema))], "arrow")
    assert [r["sensor"] for r in arrow_rows] == ["x", "y"]


@pytest.mark.parametrize(
    ("element", "problem"),
    [
        (b"{oops", "is not valid json"),
        (b'{"sensor": "a", "ts": 0, "value": "hot"}', "field 'value' (double) cannot hold 'hot'"),
        (b'{"sensor": "a", "ts": 0}', "has no value for non-null field 'value'"),
        (b"[1, 2]", "is not a record of the schema"),
        (b'{"sensor": "a", "ts": true, "value": 1}', "field 'ts'"),
    ],
)
def test_bad_elements_name_their_position(element: bytes, problem: str) -> None:
    """The error names the element's position in the log (first + index) and the problem."""
    good = json.dumps({"sensor": "a", "ts": 0, "value": 1}).encode()
    with pytest.raises(ElementError) as failure:
        decode([good, good, element, good], first=100)
    assert failure.value.position == 102 and problem in str(failure.value), str(failure.value)


def test_arrow_element_that_does_not_fit() -> None:
    """An Arrow element without a schema column is named by position."""
    with pytest.raises(ElementError, match="position 7 does not fit the schema"):
        decode([arrow_ipc(pa.record_batch({"other": [1]}))], "arrow", first=7)


def test_arrow_rows_counts_without_decoding() -> None:
    """arrow_rows: the rows of an Arrow IPC element (all its batches); 0 for bytes that are not one."""
    batch = pa.record_batch({"seq": pa.array(range(7))})
    assert arrow_rows(arrow_ipc(batch)) == 7
    assert arrow_rows(b"not arrow") == 0
