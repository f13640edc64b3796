"""An interactive transformer on a channel (PROTOCOL.md §21): ``python examples/rsio_channel.py``.

The client streams requests (arithmetic questions, as JSON) and the server streams results
back on one subscription. The server's channel factory receives the requests as an
ordinary Publisher and returns the Publisher of results; demand is exact in both
directions: the server asks the client for questions only as fast as its results are
taken, so a slow reader slows the question source, with nothing queued in between.

It exits 0 when every check holds.
"""

from __future__ import annotations

import asyncio
from typing import Any

import rstreams
from rstreams.api import Publisher
from rstreams.net import JSON, connect, serve


def calculator(questions: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
    """``calc?precision=N``: each question ``{"op": "+", "a": 1, "b": 2}`` -> its answer."""
    digits = int(params.get("precision", "3"))
    operations = {"+": float.__add__, "-": float.__sub__, "*": float.__mul__, "/": float.__truediv__}

    def answer(question: dict[str, Any]) -> dict[str, Any]:
        result = operations[question["op"]](float(question["a"]), float(question["b"]))
        return {"question": question, "answer": round(result, digits)}

    return rstreams.from_publisher(questions).map(answer)


async def main() -> list[dict[str, Any]]:
    pulled: list[int] = []  # how many questions the client's source handed out, as they go

    def questions(n: int) -> rstreams.Flow[dict[str, Any]]:
        def ask(i: int) -> dict[str, Any]:
            pulled.append(i)
            return {"op": "+-*/"[i % 4], "a": i, "b": 7}

        return rstreams.from_iterable(range(n)).map(ask)

    server = await serve("tcp://127.0.0.1:0", {}, codec=JSON, channels={"calc": calculator})
    async with server, await connect(server.url) as conn:
        results = conn.channel("calc?precision=2", questions(1000), codec=JSON)
        answers: list[dict[str, Any]] = []
        async for item in results:
            answers.append(item)
            if len(answers) == 5:
                break  # cancels the channel: the question source is cancelled too
        assert len(pulled) < 1000, "the questions were pulled ahead of the answers"
        everything = await conn.channel("calc", questions(8), codec=JSON).collect()
    for item in answers:
        print(item["question"], "->", item["answer"])
    print(f"{len(everything)} answers for 8 questions; the first channel pulled {len(pulled) - 8} of 1000")
    return answers


if __name__ == "__main__":
    asyncio.run(main())
