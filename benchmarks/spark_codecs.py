"""Rows/s of the Spark source's element decoding, without Spark: in bulk and element by element.

    python benchmarks/spark_codecs.py                 # every codec and row shape, 1 M rows each
    python benchmarks/spark_codecs.py --rows 262144 --codec msgpack

For each codec (``json``, ``msgpack``, ``arrow``) and row shape (``value``: ``{"value": N}``;
``sensor``: ``{"sensor": "sensor-K", "ts": seconds, "value": x}`` into ``sensor string,
ts timestamp, value double``), one process, one CPU:

* ``bulk``: what an executor's ``read()`` does with a range: packed wire elements (1,024
  elements or ~256 KiB each, as the server sends them) decoded in runs of 64 Ki rows into
  Arrow record batches (``rstreams.spark._codecs.decode_packed``; for ``arrow``, one IPC
  element of 64 Ki rows at a time);
* ``each``: the element-by-element path (one ``json.loads`` / ``msgpack.unpackb`` per row,
  then the same column conversion), which runs only when a run does not decode in bulk;
* ``loopback``: the source's ``read()`` of the whole range from a ``ReplayServer`` in this
  process over loopback TCP (server and decoding share the process and the GIL).

Prints one JSON line per measurement, then the 1-minute load average before and after: on a
shared machine the figures move with the load; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import msgpack
import pyarrow as pa

from rstreams.replay import ReplayLog, ReplayServer, pack
from rstreams.replay._cursor import _cut
from rstreams.spark import arrow_ipc
from rstreams.spark._codecs import BATCH_ROWS, _load_each, _records_to_batch, decode_batches, decode_packed

SHAPES = {
    "value": pa.schema([pa.field("value", pa.int64())]),
    "sensor": pa.schema(
        [
            pa.field("sensor", pa.string()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("value", pa.float64()),
        ]
    ),
}


def rows_of(shape: str, count: int) -> list[dict[str, Any]]:
    if shape == "value":
        return [{"value": i} for i in range(count)]
    return [
        {"sensor": f"sensor-{i % 8}", "ts": 1.7e9 + i / 8000, "value": round(20 + (i * 0.37) % 5, 3)}
        for i in range(count)
    ]


def elements_of(codec: str, rows: list[dict[str, Any]], schema: pa.Schema) -> list[bytes]:
    if codec == "json":
        return [json.dumps(row).encode() for row in rows]
    if codec == "msgpack":
        return [msgpack.packb(row) for row in rows]
    return [
        arrow_ipc(_records_to_batch(rows[start : start + BATCH_ROWS], start, schema, "bench"))
        for start in range(0, len(rows), BATCH_ROWS)
    ]


def packs_of(elements: list[bytes]) -> list[bytes]:
    """As the server sends a range with ``pack=1024``."""
    packs, index = [], 0
    while index < len(elements):
        chunk = _cut(elements[index : index + 1024])
        packs.append(pack(chunk))
        index += len(chunk)
    return packs


def timed(run: Callable[[], int]) -> tuple[int, float]:
    started = time.perf_counter()
    rows = run()
    return rows, time.perf_counter() - started


def bulk(codec: str, elements: list[bytes], schema: pa.Schema) -> int:
    if codec == "arrow":
        return sum(b.num_rows for b in decode_batches(elements, 0, codec, schema, "bench"))
    rows, run, count = 0, [], 0
    for packed in packs_of(elements):
        run.append(packed)
        count += int.from_bytes(packed[:4], "big")
        if count >= BATCH_ROWS:
            rows += decode_packed(run, 0, codec, schema, "bench").num_rows
            run, count = [], 0
    if run:
        rows += decode_packed(run, 0, codec, schema, "bench").num_rows
    return rows


def each(codec: str, elements: list[bytes], schema: pa.Schema) -> int:
    rows = 0
    for start in range(0, len(elements), BATCH_ROWS):
        records = _load_each(elements[start : start + BATCH_ROWS], start, codec, "bench")
        rows += _records_to_batch(records, start, schema, "bench").num_rows
    return rows


def loopback(codec: str, elements: list[bytes], schema: pa.Schema) -> int:
    from pyspark.sql.pandas.types import from_arrow_schema

    from rstreams.spark._source import RangePartition, _Options

    log = ReplayLog("bench", capacity=len(elements))
    log.append(elements)
    with ReplayServer({"bench": log}) as server:
        given = {"url": server.url, "publisher": "bench", "codec": codec}
        options = _Options(given, from_arrow_schema(schema))
        return sum(b.num_rows for b in options.read(RangePartition(server.url, "bench", 0, len(elements))))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--codec", choices=("json", "msgpack", "arrow"), action="append")
    parser.add_argument("--shape", choices=tuple(SHAPES), action="append")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    for codec in args.codec or ["json", "msgpack", "arrow"]:
        for shape in args.shape or list(SHAPES):
            schema = SHAPES[shape]
            elements = elements_of(codec, rows_of(shape, args.rows), schema)
            ways: dict[str, Callable[[str, list[bytes], pa.Schema], int]] = {"bulk": bulk}
            ways["loopback"] = loopback
            if codec != "arrow":
                ways["each"] = each
            for way, run in ways.items():
                rows, seconds = timed(lambda: run(codec, elements, schema))  # noqa: B023 (called at once)
                if rows != args.rows:
                    raise SystemExit(f"{codec} {shape} {way}: {rows:,} rows of {args.rows:,}")
                figure = {"codec": codec, "shape": shape, "way": way, "rows_per_s": round(rows / seconds)}
                print(json.dumps(figure), flush=True)
    after = os.getloadavg()[0]
    print(json.dumps({"load_1min_before": load_before, "load_1min_after": after, "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
