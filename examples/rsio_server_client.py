"""RS.io in one file: a server with named publishers, a client that streams from it.

Run it with ``python examples/rsio_server_client.py``. Everything stays on 127.0.0.1.

* ``sensors/{id}?from=N`` is a name pattern: the factory gets ``{"id": ..., "from": ...}``.
* ``async for`` over ``conn.publisher(name)`` keeps a bounded window of demand; the
  server only pulls from its local publisher what the client asked for and what the
  socket can take.
* ``conn.request(name)`` is request/response: one element back.
* ``with_codec(..., INT64)`` declares fixed 8-byte elements, which travel packed
  (many per frame).
"""

from __future__ import annotations

import asyncio
import itertools
import time

import rstreams
from rstreams.net import INT64, JSON, connect, serve, with_codec


def sensor(params: dict[str, str]) -> rstreams.Flow[dict[str, object]]:
    """An endless, lazily produced series of readings for sensor ``id``."""
    start = int(params.get("from", "0"))
    return rstreams.from_iterable(itertools.count(start)).map(
        lambda seq: {"sensor": params["id"], "seq": seq, "value": round(20 + (seq % 7) * 0.5, 1)}
    )


OFFER = {
    "sensors/{id}": sensor,
    "time": lambda params: rstreams.just({"now": time.time()}),
    "squares": with_codec(lambda params: rstreams.range(int(params["n"])).map(lambda i: i * i), INT64),
}


async def main() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, codec=JSON) as server:
        print("serving on", server.url)
        async with await connect(server.url) as conn:
            async for reading in conn.publisher("sensors/kitchen?from=100", codec=JSON):
                print("reading", reading)
                if reading["seq"] >= 104:
                    break  # cancels the remote subscription
            print("request/response:", await conn.request("time", codec=JSON))
            squares = await conn.publisher("squares?n=100000", codec=INT64).collect()
            print(f"{len(squares)} squares, packed; the last is {squares[-1]}")


if __name__ == "__main__":
    asyncio.run(main())
