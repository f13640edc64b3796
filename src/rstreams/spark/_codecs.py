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

Decoding is columnar: elements are parsed, values gathered per column, and each column
converted by pyarrow at once (the fast path into Spark). When a column does not
convert, the elements are checked one by one so that the error names the first bad
element's position, the field and the value (:class:`ElementError`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from rstreams.errors import ReactiveStreamsError

__all__ = [
    "CODECS",
    "ElementError",
    "arrow_ipc",
    "arrow_rows",
    "decode_batches",
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
    loads = _loads(codec)
    for start in range(0, len(elements), BATCH_ROWS):
        chunk = elements[start : start + BATCH_ROWS]
        fast = _fast_json(chunk, schema) if codec == "json" else None
        if fast is not None:
            yield fast
            continue
        records: list[Any] = []
        for index, data in enumerate(chunk):
            try:
                records.append(loads(data))
            except Exception as error:
                raise ElementError(
                    publisher, first + start + index, f"is not valid {codec}: {error}"
                ) from None
        yield _records_to_batch(records, first + start, schema, publisher)


def _fast_json(chunk: list[bytes], schema: pa.Schema) -> pa.RecordBatch | None:
    """Arrow's C++ JSON reader over the chunk as JSON lines; ``None`` when it does not apply.

    Timestamps are first read as numbers (seconds since the epoch) and converted, then
    as ISO strings. Anything unusual (arrays as records, a newline inside an element,
    a value that does not fit, a null in a non-null field) returns ``None``, and the
    element-by-element path decodes the chunk and names the element at fault.
    """
    import pyarrow.compute as pc
    from pyarrow import json as pa_json

    data = b"\n".join(chunk)
    times = [i for i, field in enumerate(schema) if pa.types.is_timestamp(field.type)]
    attempts = [schema]
    if times:
        numeric = schema
        for i in times:
            numeric = numeric.set(i, pa.field(schema[i].name, pa.float64(), nullable=True))
        attempts.insert(0, numeric)
    for parse in attempts:
        options = pa_json.ParseOptions(explicit_schema=_nullable(parse), unexpected_field_behavior="ignore")
        try:
            table = pa_json.read_json(pa.py_buffer(data), parse_options=options)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            continue
        if table.num_rows != len(chunk):
            return None
        columns = []
        for i, field in enumerate(schema):
            column = table.column(field.name).combine_chunks()
            if parse is not schema and i in times:
                micros = pc.multiply(column, 1_000_000.0).cast(pa.int64(), safe=False)
                column = micros.cast(field.type)
            if not field.nullable and column.null_count:
                return None
            columns.append(column)
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return None


def _nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type, nullable=True) for f in schema])


def _records_to_batch(records: list[Any], first: int, schema: pa.Schema, publisher: str) -> pa.RecordBatch:
    names = schema.names
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
    arrays = [_column(values, field, first, publisher) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _column(values: list[Any], field: pa.Field, first: int, publisher: str) -> pa.Array:
    try:
        array = _convert(values, field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        array = None
    if array is None or (not field.nullable and array.null_count):
        _locate(values, field, first, publisher)
    assert array is not None
    return array


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


def row_encoder(codec: str) -> Callable[[Any], bytes]:
    """``Row -> bytes`` for the sink (``json`` or ``msgpack``; timestamps become ISO strings)."""
    if codec == "msgpack":
        import msgpack

        return lambda row: msgpack.packb(row.asDict(recursive=True), default=_plain)
    if codec == "json":
        return lambda row: json.dumps(
            row.asDict(recursive=True), default=_plain, separators=(",", ":")
        ).encode()
    raise ValueError(f"the rstreams sink writes json or msgpack elements; got codec {codec!r}")


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
