"""A Python RS.io client whose session a Java server keeps across a cut link (PROTOCOL.md §16).

    python resume_client.py URL TOTAL

Connects with ``resume=True``, reads ``counter?from=0&to=TOTAL`` as INT64 with at most 64
elements requested at a time and, halfway, prints ``cut`` and waits for a line on standard
input (the test cuts the link meanwhile, with elements in flight). Prints ``resumed`` with the
count and exits 0 if every value came once and in order, else prints what came and exits 1.
"""

from __future__ import annotations

import asyncio
import sys

from rstreams.net import INT64, connect


async def main(url: str, total: int) -> int:
    got: list[int] = []
    async with await connect(url, resume=True) as conn:
        async for value in conn.publisher(f"counter?from=0&to={total}", codec=INT64).iter_async(window=64):
            got.append(value)
            if len(got) == total // 2:
                print("cut", flush=True)
                await asyncio.to_thread(sys.stdin.readline)
    if got != list(range(total)):
        gap = next((i for i, value in enumerate(got) if value != i), len(got))
        print(f"wrong: {len(got)} values, the first wrong or missing at {gap}", flush=True)
        return 1
    print(f"resumed {len(got)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], int(sys.argv[2]))))
