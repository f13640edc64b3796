"""Decoding elements to Arrow batches (no Spark): fast and element-by-element paths, errors."""

from __future__ import annotations

import datetime
import json

import msgpack
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rstreams.replay import pack
from rstreams.spark import ElementError, arrow_ipc, arrow_rows
from rstreams.spark._codecs import _json_bulk, _msgpack_bulk, _Run, decode_batches, decode_packed

# A hang guard only: the work is fixed and all CPU (no Spark, no network). At load 30 on 2 cores
# the first test took 3.6 s (pyarrow's first decode loads its JSON reader) and each Hypothesis
# property 8 s; 30 s per test was within reach of a loaded machine.
pytestmark = pytest.mark.timeout(300)

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


# Bulk decoding: runs of elements decoded at once (Arrow's JSON reader, msgpack's unpacker)
# must give what element-by-element decoding gives, and still name the element at fault.

ENCODE = {"json": lambda record: json.dumps(record).encode(), "msgpack": msgpack.packb}


def decode_reference(record: dict[str, object]) -> dict[str, object]:
    """What a record becomes, by Python alone (seconds as datetime.fromtimestamp rounds them)."""
    ts = record.get("ts")
    if isinstance(ts, int | float):
        ts = datetime.datetime.fromtimestamp(ts, UTC)
    elif isinstance(ts, str):
        parsed = datetime.datetime.fromisoformat(ts)
        ts = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return {"sensor": record.get("sensor"), "ts": ts, "value": float(record["value"])}  # type: ignore[arg-type]


def packed(elements: list[bytes], per: int) -> list[bytes]:
    return [pack(elements[i : i + per]) for i in range(0, len(elements), per)]


times = st.one_of(
    st.none(),
    st.integers(-(2**33), 2**33),
    st.floats(-1e10, 1e10, allow_nan=False),
    st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1)).map(
        lambda moment: moment.isoformat()
    ),
)
readings = st.fixed_dictionaries(
    {"value": st.one_of(st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False))},
    optional={"sensor": st.one_of(st.none(), st.text(max_size=12)), "ts": times, "other": st.integers(0, 9)},
)


@pytest.mark.parametrize("codec", ["json", "msgpack"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(readings, min_size=1, max_size=40), per=st.integers(1, 7))
def test_bulk_decoding_gives_what_python_gives(codec: str, batch: list[dict[str, object]], per: int) -> None:
    """Any records (strings, ints, floats, absent keys, timestamps as numbers or ISO strings), as
    elements or packed `per` to a wire element, decode as Python would decode them; and when the
    timestamps are all of one kind, in bulk (no element-by-element pass)."""
    elements = [ENCODE[codec](record) for record in batch]
    expected = [decode_reference(record) for record in batch]
    assert decode(elements, codec) == expected
    got = decode_packed(packed(elements, per), 0, codec, SCHEMA, "p")
    assert got.schema.equals(SCHEMA) and got.to_pylist() == expected
    kinds = {str if isinstance(r.get("ts"), str) else float for r in batch if r.get("ts") is not None}
    if len(kinds) <= 1:
        run = _Run.of_elements(elements)
        if codec == "json":
            bulk = _json_bulk(run, SCHEMA)
            assert bulk is not None and bulk.to_pylist() == expected
        else:
            assert _msgpack_bulk(run) == batch


@pytest.mark.parametrize("codec", ["json", "msgpack"])
def test_a_bad_element_in_a_packed_run_is_named(codec: str) -> None:
    """The bulk path gives up on a run with a bad element; the run is then decoded element by
    element, and the error names the element's position across packs."""
    good = ENCODE[codec]({"sensor": "a", "ts": 0, "value": 1})
    elements = [good] * 3000
    elements[2500] = b"\xc1" if codec == "msgpack" else b"{oops"
    with pytest.raises(ElementError) as failure:
        decode_packed(packed(elements, 1024), 10_000, codec, SCHEMA, "p")
    assert failure.value.position == 12_500 and f"is not valid {codec}" in str(failure.value)


def test_msgpack_elements_that_only_parse_together_are_refused() -> None:
    """A truncated element followed by one that carries the missing bytes and a whole record: the
    bytes of the run parse as two good records, but not element by element, and the first is named."""
    whole = msgpack.packb({"sensor": "a", "ts": 0, "value": 1.5})
    cut = len(whole) - 3
    elements = [whole, whole[:cut], whole[cut:] + whole]
    together = msgpack.Unpacker(raw=False)
    together.feed(b"".join(elements))
    assert len(list(together)) == 3  # as many records as elements
    with pytest.raises(ElementError) as failure:
        decode_packed(packed(elements, 3), 0, "msgpack", SCHEMA, "p")
    assert failure.value.position == 1 and "is not valid msgpack" in str(failure.value)


def test_json_element_with_two_objects_is_refused() -> None:
    """Two objects in one element and none in another: as many objects as elements, yet refused."""
    one = json.dumps({"sensor": "a", "ts": 0, "value": 1}).encode()
    elements = [one, one + b" " + one, b'{"sensor": "}', b'{"}']
    with pytest.raises(ElementError) as failure:
        decode(elements, "json", first=5)
    assert failure.value.position == 6 and "is not valid json" in str(failure.value)


def test_json_elements_with_surrounding_whitespace_and_newlines_inside() -> None:
    """JSON lines with their newline, pretty-printed objects: still decoded in bulk, in order."""
    elements = [
        b'{"sensor": "a", "ts": 1, "value": 1}\n',
        b'  {\n  "sensor": "b",\n  "value": 2\n}',
        b'\t{"value": 3}\r\n',
    ]
    assert [row["value"] for row in decode(elements)] == [1.0, 2.0, 3.0]
    assert decode(elements)[1]["sensor"] == "b"


@pytest.mark.parametrize("codec", ["json", "msgpack"])
def test_timestamps_with_zone_offsets_and_dates(codec: str) -> None:
    """ISO timestamps with offsets become UTC; dates come from ISO strings; in bulk and not."""
    schema = pa.schema([pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("day", pa.date32())])
    elements = [
        ENCODE[codec]({"ts": "2024-01-02T03:04:05+02:00", "day": "2024-02-29"}),
        ENCODE[codec]({"ts": "2024-01-02T03:04:05.25Z", "day": None}),
    ]
    one_by_one = next(decode_batches(elements, 0, codec, schema, "p"))
    for batch in (one_by_one, decode_packed([pack(elements)], 0, codec, schema, "p")):
        assert batch.to_pylist() == [
            {"ts": datetime.datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC), "day": datetime.date(2024, 2, 29)},
            {"ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=UTC), "day": None},
        ]


def test_msgpack_records_as_arrays_in_bulk() -> None:
    """Arrays in schema order, all of them: gathered column by column."""
    elements = [msgpack.packb(["s", 1.5, i]) for i in range(5)]
    rows = decode(elements, "msgpack")
    assert [row["value"] for row in rows] == [0.0, 1.0, 2.0, 3.0, 4.0] and rows[0]["sensor"] == "s"


@pytest.mark.parametrize("codec", ["json", "msgpack"])
def test_the_sink_writes_times_as_iso_text_by_column_and_the_source_reads_them_back(codec: str) -> None:
    """The sink's row encoder: a zoned timestamp as UTC with its offset, one without a zone as it
    is, a date as ISO; nulls stay null; maps become objects; decode gives the same values."""
    from decimal import Decimal

    from rstreams.spark._codecs import row_encoder

    paris = datetime.timezone(datetime.timedelta(hours=1))
    schema = pa.schema(
        [
            pa.field("ts", pa.timestamp("us", tz="Europe/Paris")),
            pa.field("local", pa.timestamp("us")),
            pa.field("day", pa.date32()),
            pa.field("tags", pa.map_(pa.string(), pa.int64())),
            pa.field("price", pa.decimal128(6, 2)),
        ]
    )
    batch = pa.record_batch(
        [
            pa.array([datetime.datetime(2024, 1, 2, 4, 4, 5, 250000, tzinfo=paris), None], schema[0].type),
            pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5), None], schema[1].type),
            pa.array([datetime.date(2024, 2, 29), None], schema[2].type),
            pa.array([[("a", 1)], None], schema[3].type),
            pa.array([Decimal("1.50"), None], schema[4].type),
        ],
        schema=schema,
    )
    elements = row_encoder(codec)(batch)
    loads = json.loads if codec == "json" else msgpack.unpackb
    assert [loads(element) for element in elements] == [
        {
            "ts": "2024-01-02T03:04:05.250000+00:00",
            "local": "2024-01-02T03:04:05.000000",
            "day": "2024-02-29",
            "tags": {"a": 1},
            "price": "1.50",
        },
        {"ts": None, "local": None, "day": None, "tags": None, "price": None},
    ]
    read = pa.schema([pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("day", pa.date32())])
    (decoded,) = decode_batches(elements, 0, codec, read, "p")
    assert decoded.to_pylist()[0] == {
        "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=UTC),
        "day": datetime.date(2024, 2, 29),
    }
