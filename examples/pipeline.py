"""A fast producer that cannot drown a slow consumer: the in-process pipeline.

Run it with ``python examples/pipeline.py``.

* ``sensor_readings()`` is an async generator that could produce as fast as the CPU
  allows; rstreams only pulls from it what the consumer asked for.
* ``filter`` drops implausible readings (asking upstream for one more each), ``buffer``
  cuts batches of 40, and ``concat_map`` turns each batch into one summary line per sensor,
  batch after batch, in order.
* ``async for`` at the end consumes slowly, with a window of 64 lines: the producer never
  runs further ahead of the lines consumed than demand reaches, i.e. the 64 lines of the
  window (16 batches), the 2 batches ``concat_map`` prefetches and the one it is splitting:
  19 batches of 40 readings, 760. The last line prints the most it was ever ahead.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator

import rstreams

pulled = 0
dropped = 0
most_ahead = 0
BATCH = 40
BOUND = (64 // 4 + 2 + 1) * BATCH  # window in batches + concat_map's prefetch + the current one


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


def plausible(reading: dict[str, float | int | str]) -> bool:
    """Drop implausible readings (counted, so that what the consumer is owed can be told)."""
    global dropped
    keep = float(reading["celsius"]) > 10.0
    dropped += not keep
    return keep


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
    global most_ahead
    started = time.monotonic()
    alerts = 0
    pipeline = (
        rstreams.from_async_iterable(sensor_readings)
        .filter(plausible)
        .buffer(BATCH)  # batches of 40 readings
        .concat_map(summarize)  # each batch -> one line per sensor, in order
    )
    delivered = 0
    async for line in pipeline.iter_async(window=64):
        delivered += 1
        # each batch of 40 kept readings becomes 4 lines (one per sensor): 10 readings a line
        most_ahead = max(most_ahead, pulled - dropped - delivered * BATCH // 4)
        if "max= 3" in line or "max= 4" in line:
            alerts += 1
        if delivered % 40 < 4:  # every tenth batch: its four sensor lines
            print(f"[{time.monotonic() - started:5.2f}s] {line}   (pulled from source so far: {pulled})")
        await asyncio.sleep(0.01)  # a slow consumer: ~100 lines/s
        if time.monotonic() - started > seconds:
            break  # leaving the loop cancels the whole chain
    print(
        f"done: {delivered} summary lines, {pulled} readings pulled from an unbounded source, "
        f"{alerts} hot batches; the source was at most {most_ahead} readings ahead of the lines "
        f"consumed (demand allows {BOUND})."
    )


if __name__ == "__main__":
    asyncio.run(main())
