"""A fast producer that cannot drown a slow consumer: the in-process pipeline.

Run it with ``python examples/pipeline.py`` (or ``bash scripts/demo.sh``).

* ``sensor_readings()`` is an async generator that could produce as fast as the CPU
  allows; rstreams only pulls from it what the consumer asked for.
* ``map``/``filter``/``buffer`` shape the stream; ``flat_map`` fans out to a per-batch
  enrichment step with bounded concurrency.
* ``async for`` at the end consumes slowly, with a window of 64 elements: the printed
  "pulled" counter shows the producer never runs more than that window ahead.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator

import rstreams

pulled = 0


async def sensor_readings() -> AsyncIterator[dict[str, float | int | str]]:
    """An unbounded source of readings; counts how many were actually pulled."""
    global pulled
    rng = random.Random(7)
    sensors = ["s1", "s2", "s3", "s4"]
    seq = 0
    while True:
        seq += 1
        pulled += 1
        yield {"seq": seq, "sensor": sensors[seq % 4], "celsius": round(rng.gauss(21.0, 4.0), 2)}


def summarize(batch: list[dict[str, float | int | str]]) -> rstreams.Flow[str]:
    """One line per sensor for a batch of readings."""
    by_sensor: dict[str, list[float]] = {}
    for reading in batch:
        by_sensor.setdefault(str(reading["sensor"]), []).append(float(reading["celsius"]))
    lines = [
        f"{name}: n={len(values):2d} mean={sum(values) / len(values):6.2f}C max={max(values):6.2f}C"
        for name, values in sorted(by_sensor.items())
    ]
    return rstreams.from_iterable(lines)


async def main(seconds: float = 3.0) -> None:
    started = time.monotonic()
    alerts = 0
    pipeline = (
        rstreams.from_async_iterable(sensor_readings)
        .filter(lambda r: float(r["celsius"]) > 10.0)  # drop implausible readings
        .buffer(40)  # batches of 40 readings
        .concat_map(summarize)  # each batch -> one line per sensor, in order
    )
    delivered = 0
    async for line in pipeline.iter_async(window=64):
        delivered += 1
        if "max= 3" in line or "max= 4" in line:
            alerts += 1
        if delivered % 40 < 4:  # every tenth batch: its four sensor lines
            print(f"[{time.monotonic() - started:5.2f}s] {line}   (pulled from source so far: {pulled})")
        await asyncio.sleep(0.01)  # a slow consumer: ~100 lines/s
        if time.monotonic() - started > seconds:
            break  # leaving the loop cancels the whole chain
    print(
        f"done: {delivered} summary lines, {pulled} readings pulled from an unbounded source, "
        f"{alerts} hot batches; the source never ran ahead of demand."
    )


if __name__ == "__main__":
    asyncio.run(main())
