"""Element codecs for Spark: RS.io elements (bytes) to Arrow record batches, rows to bytes.

Codecs (the ``codec`` option):

* ``json`` (default) and ``msgpack``: one element is one record, an object whose keys
  are the schema's field names (missing keys are nulls) or an array in schema order.
  Timestamps may be numbers (seconds since the epoch) or ISO-8601 strings; dates ISO
  strings.
* ``arrow``: one element is an Arrow IPC *stream* (a schema and record batches); its
  columns are selected by name and cast to the schema. Positions count elements; for
  ``maxRecordsPerBatch`` (rows) the log must count each element's rows: serve it as
  ``ReplayLog(..., rows=arrow_rows)``.

Decoding is in bulk, with no Python step per element where the data allows:

* ``json``: the elements of a run (up to :data:`BATCH_ROWS`) are joined with newlines and
  read by Arrow's C++ JSON reader into the schema's columns. The join is safe because a
  raw newline cannot occur inside a JSON string and ``}`` newline ``{`` cannot occur inside
  a JSON value: when each element starts with ``{`` and ends with ``}`` (surrounding
  whitespace allowed) and the reader finds as many records as elements, record ``i`` is
  element ``i``. Records as arrays, and values the reader does not take, go the way of
  msgpack below.
* ``msgpack``: one streaming unpacker over the run's bytes makes the records, and its
  offsets are checked against the element boundaries (so each element is exactly one
  msgpack object); values are gathered per column and each column converted by Arrow at
  once (timestamps and dates by Arrow's casts).

When anything does not fit (an element that is not valid data, a value the column cannot
hold, a null in a non-null field), the run is decoded element by element so that the
error names the first bad element's position, the field and the value (:class:`ElementError`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rstreams.errors import ReactiveStreamsError

__all__ = [
    "CODECS",
    "ElementError",
    "arrow_ipc",
    "arrow_rows",
    "decode_batches",
    "decode_packed",
    "row_encoder",
]

CODECS = ("json", "msgpack", "arrow")
BATCH_ROWS = 65_536
"""Rows per Arrow batch handed to Spark (the notes' measured sweet spot, 64 Ki)."""


class ElementError(ReactiveStreamsError, ValueError):
    """An element could not be decoded or does not fit the schema."""

    def __init__(self, publisher: str, position: int, problem: str) -> None:
        super().__init__(f"rstreams source {publisher!r}: element at position {position} {problem}")
        self.publisher = publisher
        self.position = position
        self.problem = problem


def check_codec(codec: str) -> str:
    if codec not in CODECS:
        raise ValueError(f"option codec must be one of {', '.join(CODECS)}; got {codec!r}")
    return codec


def _loads(codec: str) -> Callable[[bytes], Any]:
    if codec == "msgpack":
        import msgpack

        return lambda data: msgpack.unpackb(data, raw=False)
    return json.loads


class _Run:
    """Consecutive elements as one buffer: their lengths and their bytes end to end."""

    __slots__ = ("data", "lengths")

    def __init__(self, lengths: np.ndarray[Any, np.dtype[np.int64]], data: bytes) -> None:
        self.lengths = lengths
        self.data = data

    @classmethod
    def of_elements(cls, elements: list[bytes]) -> _Run:
        return cls(np.fromiter(map(len, elements), np.int64, len(elements)), b"".join(elements))

    @classmethod
    def of_packs(cls, packs: list[bytes]) -> _Run:
        """From packed elements (docs/replay.md, *The pack format*), without unpacking them."""
        lengths = []
        parts = []
        for packed in packs:
            count = int.from_bytes(packed[:4], "big")
            lengths.append(np.frombuffer(packed, ">u4", count, 4))
            parts.append(memoryview(packed)[4 + 4 * count :])
        joined = np.concatenate(lengths).astype(np.int64) if lengths else np.zeros(0, np.int64)
        return cls(joined, b"".join(parts))

    def __len__(self) -> int:
        return len(self.lengths)

    def ends(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        return np.cumsum(self.lengths)

    def elements(self) -> list[bytes]:
        data = self.data
        ends = self.ends().tolist()
        return [data[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def decode_batches(
    elements: list[bytes], first: int, codec: str, schema: pa.Schema, publisher: str
) -> Iterator[pa.RecordBatch]:
    """Record batches with exactly ``schema`` from ``elements`` (positions ``first, first+1, ...``).

    Raises:
        ElementError: an element is not valid ``codec`` data or does not fit ``schema``.
    """
    if codec == "arrow":
        for index, data in enumerate(elements):
            yield from _arrow_element(data, first + index, schema, publisher)
        return
    for start in range(0, len(elements), BATCH_ROWS):
        run = _Run.of_elements(elements[start : start + BATCH_ROWS])
        yield decode_run(run, first + start, codec, schema, publisher)


def decode_packed(
    packs: list[bytes], first: int, codec: str, schema: pa.Schema, publisher: str
) -> pa.RecordBatch:
    """One record batch from packed ``json`` or ``msgpack`` elements (positions from ``first``).

    Raises:
        ElementError: as :func:`decode_batches`.
    """
    return decode_run(_Run.of_packs(packs), first, codec, schema, publisher)


def decode_run(run: _Run, first: int, codec: str, schema: pa.Schema, publisher: str) -> pa.RecordBatch:
    if codec == "json":
        batch = _json_bulk(run, schema)
        if batch is not None:
            return batch
    records = _msgpack_bulk(run) if codec == "msgpack" else None
    if records is None:
        records = _load_each(run.elements(), first, codec, publisher)
    return _records_to_batch(records, first, schema, publisher)


def _json_lines(run: _Run) -> bytes | None:
    """The run's elements joined by newlines, if each is one JSON object (see the module
    docstring); ``None`` if one is not."""
    if not len(run):
        return b""
    lengths = run.lengths
    ends = run.ends()
    data = np.frombuffer(run.data, np.uint8)
    if lengths.min() > 0 and (data[ends - lengths] == 0x7B).all() and (data[ends - 1] == 0x7D).all():
        joined: bytes = np.insert(data, ends[:-1], 0x0A).tobytes()
        return joined
    elements = [element.strip() for element in run.elements()]  # surrounding whitespace
    if all(element[:1] == b"{" and element[-1:] == b"}" for element in elements):
        return b"\n".join(elements)
    return None


def _json_bulk(run: _Run, schema: pa.Schema) -> pa.RecordBatch | None:
    """Arrow's C++ JSON reader over the run; ``None`` when it does not apply.

    Timestamps are first read as numbers (seconds since the epoch) and converted, then
    as ISO strings. Anything else unusual (arrays as records, a value that does not fit,
    a null in a non-null field) returns ``None``: the records are then decoded in Python,
    and a bad element named.
    """
    from pyarrow import json as pa_json

    lines = _json_lines(run)
    if lines is None:
        return None
    times = [i for i, field in enumerate(schema) if pa.types.is_timestamp(field.type)]
    attempts = [schema]
    if times:
        numeric = schema
        for i in times:
            numeric = numeric.set(i, pa.field(schema[i].name, pa.float64(), nullable=True))
        attempts.insert(0, numeric)
    read = pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, len(lines) + 1))
    for parse in attempts:
        options = pa_json.ParseOptions(explicit_schema=_nullable(parse), unexpected_field_behavior="ignore")
        try:
            table = pa_json.read_json(pa.py_buffer(lines), read_options=read, parse_options=options)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            continue
        if table.num_rows != len(run):
            return None
        columns = []
        for i, field in enumerate(schema):
            column = table.column(field.name).combine_chunks()
            if parse is not schema and i in times:
                try:
                    column = _seconds_to_timestamps(column, field.type)
                except _CONVERSION_ERRORS:  # out of range: named element by element
                    return None
            if not field.nullable and column.null_count:
                return None
            columns.append(column)
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return None


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, nullable=True) for f in schema])


def _msgpack_bulk(run: _Run) -> list[Any] | None:
    """The run's msgpack records, if each element is exactly one msgpack object; else ``None``."""
    import msgpack

    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(len(run.data), 1))
    unpacker.feed(run.data)
    records: list[Any] = []
    ends: list[int] = []
    try:
        for record in unpacker:
            records.append(record)
            ends.append(unpacker.tell())
    except (ValueError, msgpack.UnpackException):  # malformed data: found element by element
        return None
    if len(records) != len(run) or not np.array_equal(ends, run.ends()):
        return None
    return records


def _load_each(elements: list[bytes], first: int, codec: str, publisher: str) -> list[Any]:
    loads = _loads(codec)
    records: list[Any] = []
    for index, data in enumerate(elements):
        try:
            records.append(loads(data))
        except Exception as error:
            raise ElementError(publisher, first + index, f"is not valid {codec}: {error}") from None
    return records


def _records_to_batch(records: list[Any], first: int, schema: pa.Schema, publisher: str) -> pa.RecordBatch:
    columns = _gather(records, schema.names)
    if columns is None:
        columns = _gather_each(records, first, schema.names, publisher)
    arrays = [_column(values, field, first, publisher) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _gather(records: list[Any], names: list[str]) -> list[list[Any]] | None:
    """The values per column when the records are all objects or all arrays of the schema's
    width (a loop in C per column); ``None`` otherwise."""
    try:
        return [[record.get(name) for record in records] for name in names]
    except AttributeError:  # not all objects
        pass
    width = len(names)
    if not all(type(record) in (list, tuple) and len(record) == width for record in records):
        return None
    return [list(values) for values in zip(*records, strict=True)] if records else [[] for _ in names]


def _gather_each(records: list[Any], first: int, names: list[str], publisher: str) -> list[list[Any]]:
    """:func:`_gather` record by record (objects and arrays mixed); names the first record of
    neither shape."""
    width = len(names)
    columns: list[list[Any]] = [[] for _ in names]
    for index, record in enumerate(records):
        if isinstance(record, dict):
            for column, name in zip(columns, names, strict=True):
                column.append(record.get(name))
        elif isinstance(record, list | tuple) and len(record) == width:
            for column, value in zip(columns, record, strict=True):
                column.append(value)
        else:
            raise ElementError(
                publisher,
                first + index,
                f"is not a record of the schema ({', '.join(names)}): {_short(record)}",
            )
    return columns


_CONVERSION_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
    TypeError,
    ValueError,
    OverflowError,
)


def _column(values: list[Any], field: pa.Field, first: int, publisher: str) -> pa.Array:
    """``values`` as an Arrow array of ``field``'s type: by Arrow in bulk, else value by value
    (what :func:`_convert` accepts); the first value that fits neither is named."""
    try:
        array = _vector(values, field.type)
    except _CONVERSION_ERRORS:
        try:
            array = _convert(values, field.type)
        except _CONVERSION_ERRORS:
            array = None
    if array is None or (not field.nullable and array.null_count):
        _locate(values, field, first, publisher)
    assert array is not None
    return array


def _vector(values: list[Any], kind: pa.DataType) -> pa.Array:
    """``values`` converted by Arrow at once; raises (one of ``_CONVERSION_ERRORS``) when Arrow
    does not take them: numbers as seconds and ISO strings for timestamps, ISO strings for dates."""
    if pa.types.is_timestamp(kind):
        array = pa.array(values)
        if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
            return _seconds_to_timestamps(array, kind)
        if pa.types.is_string(array.type):
            try:  # with a zone offset
                return array.cast(pa.timestamp(kind.unit, "UTC")).cast(kind)
            except pa.ArrowInvalid:  # without: UTC
                return array.cast(pa.timestamp(kind.unit)).cast(kind)
        if pa.types.is_null(array.type) or pa.types.is_timestamp(array.type):
            return array.cast(kind)
        raise TypeError(f"{array.type} is not a timestamp")
    if pa.types.is_date(kind):
        array = pa.array(values)
        if not any(test(array.type) for test in (pa.types.is_string, pa.types.is_null, pa.types.is_date)):
            raise TypeError(f"{array.type} is not a date")
        return array.cast(kind)
    return pa.array(values, type=kind)


def _seconds_to_timestamps(seconds: pa.Array, kind: pa.DataType) -> pa.Array:
    """Seconds since the epoch (integers or floats) as timestamps of ``kind`` (unit ``us``),
    rounded to the microsecond half to even, as Python's ``datetime.fromtimestamp`` does."""
    import pyarrow.compute as pc

    if pa.types.is_integer(seconds.type):
        micros = pc.multiply_checked(seconds.cast(pa.int64()), 1_000_000)
    else:
        whole = pc.floor(seconds)
        fraction = pc.round(pc.multiply(pc.subtract(seconds, whole), 1e6), round_mode="half_to_even")
        micros = pc.add_checked(
            pc.multiply_checked(whole.cast(pa.int64()), 1_000_000), fraction.cast(pa.int64())
        )
    return micros.cast(pa.timestamp("us", kind.tz)).cast(kind)


def _convert(values: list[Any], kind: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(kind):
        values = [_to_datetime(value) for value in values]
    elif pa.types.is_date(kind):
        values = [datetime.date.fromisoformat(v) if isinstance(v, str) else v for v in values]
    return pa.array(values, type=kind)


def _to_datetime(value: Any) -> Any:
    if isinstance(value, bool):
        raise TypeError("a bool is not a timestamp")
    if isinstance(value, int | float):
        return datetime.datetime.fromtimestamp(value, datetime.UTC)
    if isinstance(value, str):
        parsed = datetime.datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
    return value


def _locate(values: list[Any], field: pa.Field, first: int, publisher: str) -> None:
    """Raise the :class:`ElementError` for the first value of ``values`` that does not fit."""
    for index, value in enumerate(values):
        if value is None:
            if not field.nullable:
                raise ElementError(
                    publisher, first + index, f"has no value for non-null field {field.name!r}"
                )
            continue
        try:
            _convert([value], field.type)
        except Exception as error:
            raise ElementError(
                publisher,
                first + index,
                f"does not fit the schema: field {field.name!r} ({field.type}) cannot hold "
                f"{_short(value)}: {error}",
            ) from None
    raise ElementError(publisher, first, f"column {field.name!r} ({field.type}) could not be converted")


def _arrow_element(data: bytes, position: int, schema: pa.Schema, publisher: str) -> Iterator[pa.RecordBatch]:
    try:
        table = pa.ipc.open_stream(data).read_all()
    except Exception as error:
        raise ElementError(publisher, position, f"is not an Arrow IPC stream: {error}") from None
    try:
        table = table.select(schema.names).cast(schema)
    except Exception as error:
        raise ElementError(
            publisher, position, f"does not fit the schema {schema.names}: {type(error).__name__}: {error}"
        ) from None
    yield from table.to_batches()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def row_encoder(codec: str) -> Callable[[pa.RecordBatch], list[bytes]]:
    """``record batch -> one element per row`` for the sink (``json`` or ``msgpack``).

    Timestamps and dates become ISO text a column at a time, by Arrow: a timestamp with a time
    zone as UTC, ``2024-05-01T12:00:00.250000+00:00``; one without (``TIMESTAMP_NTZ``) as it
    is, ``2024-05-01T12:00:00.250000``; a date ``2024-05-01``. Maps become objects. Then each
    row is one ``json.dumps`` or msgpack ``pack`` of plain Python values (timestamps nested in
    structs or lists, and decimals, through ``_plain``, one value at a time).
    """
    if codec == "msgpack":
        import msgpack

        pack = msgpack.Packer(default=_plain).pack
        return lambda batch: [pack(row) for row in _plain_rows(batch)]
    if codec == "json":
        dumps = json.JSONEncoder(default=_plain, separators=(",", ":")).encode
        return lambda batch: [dumps(row).encode() for row in _plain_rows(batch)]
    raise ValueError(f"the rstreams sink writes json or msgpack elements; got codec {codec!r}")


def _plain_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    columns = [_time_text(column) for column in batch.columns]
    plain = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
    rows: list[dict[str, Any]] = plain.to_pylist(maps_as_pydicts="strict")
    return rows


def _time_text(column: pa.Array) -> pa.Array:
    """A timestamp or date column as ISO text (nulls stay null); any other column as it is."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        if kind.tz is None:
            return pc.strftime(column, format="%Y-%m-%dT%H:%M:%S")
        utc = pc.strftime(column.cast(pa.timestamp(kind.unit, "UTC")), format="%Y-%m-%dT%H:%M:%S")
        return pc.binary_join_element_wise(utc, "+00:00", "")
    if pa.types.is_date(kind):
        return column.cast(pa.string())
    return column


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    return str(value)


def arrow_rows(data: bytes) -> int:
    """The rows of one ``arrow`` element (``ReplayLog(rows=arrow_rows)``); 0 if it is not Arrow IPC.

    Reads only the batches' headers: the column buffers are not copied.
    """
    try:
        return sum(batch.num_rows for batch in pa.ipc.open_stream(pa.py_buffer(data)))
    except (pa.ArrowInvalid, OSError):
        return 0  # the reader that decodes it reports the element and its position


def arrow_ipc(batch: pa.RecordBatch) -> bytes:
    """One Arrow record batch as IPC stream bytes (an ``arrow`` codec element)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue())
