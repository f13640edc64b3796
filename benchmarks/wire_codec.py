"""Throughput of the sans-I/O core: 8-byte elements through encode, parse, and a connection pair.

Run: ``python benchmarks/wire_codec.py [n]``. Each line is the best of 5 runs (ns per element
and elements per second). No I/O: this is the CPU cost the net layer builds on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from rstreams.demand import UNBOUNDED
from rstreams.wire import Connection, OnNext, OnNextPacked, OnSubscribe, Side, Subscribe, encode
from rstreams.wire._parser import FrameParser


def best_of(fn: Callable[[], int], repeat: int = 5) -> float:
    """Best ns per element over ``repeat`` runs of ``fn`` (which returns the element count)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time_ns()
        count = fn()
        best = min(best, (time.process_time_ns() - t0) / count)
    return best


def report(name: str, ns: float) -> None:
    print(f"{name:<58} {ns:8.1f} ns/el  {1e3 / ns:7.2f} M el/s")


def pair(element_size: int = 0) -> tuple[Connection, Connection]:
    """A subscribed client/server pair with unbounded demand on subscriber id 1."""
    client, server = Connection(Side.CLIENT), Connection(Side.SERVER)
    client.send(Subscribe(publisher="bench", subscriber=1, initial_demand=UNBOUNDED))
    for data in client.data_to_send():
        server.receive_data(data)
    for data in server.data_to_send():
        client.receive_data(data)
    server.send(OnSubscribe(subscriber=1, element_size=element_size))
    for data in server.data_to_send():
        client.receive_data(data)
    server.events_received()
    client.events_received()
    return client, server


def main(n: int = 200_000) -> None:
    elements = [i.to_bytes(8, "little") for i in range(n)]
    wire = b"".join(encode(OnNext(subscriber=1, element=e)) for e in elements)
    chunks = [wire[i : i + 65536] for i in range(0, len(wire), 65536)]

    def encode_frames() -> int:
        for e in elements:
            encode(OnNext(subscriber=1, element=e))
        return n

    def parse() -> int:
        parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=64)
        count = 0
        for chunk in chunks:
            count += len(parser.feed(chunk))
        assert count == n
        return n

    def send(element_size: int) -> Callable[[], int]:
        def run() -> int:
            _, server = pair(element_size)
            send_on_next = server.on_next
            for e in elements:
                send_on_next(1, e)
            server.data_to_send()
            return n

        return run

    def receive() -> int:
        client, _ = pair()
        count = 0
        for chunk in chunks:
            client.receive_data(chunk)
            count += len(client.events_received())
        assert count == n
        return n

    def end_to_end() -> int:
        client, server = pair()
        send_on_next = server.on_next
        count = 0
        for start in range(0, n, 256):  # a 256-element window per turn, like the net layer
            for e in elements[start : start + 256]:
                send_on_next(1, e)
            for data in server.data_to_send():
                client.receive_data(data)
            count += len(client.events_received())
        assert count == n
        return n

    def packed() -> int:
        client, server = pair(8)
        block = b"".join(elements[:1024])
        count = 0
        for _ in range(n // 1024):
            server.send(OnNextPacked(subscriber=1, count=1024, elements=block))
            for data in server.data_to_send():
                client.receive_data(data)
            for event in client.events_received():
                count += event.count  # type: ignore[union-attr]
        return count

    report("encode(OnNext(...)) 8 B, generic encoder", best_of(encode_frames))
    report("FrameParser.feed, 8 B onNext frames, 64 KiB chunks", best_of(parse))
    report("Connection.on_next 8 B (length-prefixed)", best_of(send(0)))
    report("Connection.on_next 8 B (elementSize 8)", best_of(send(8)))
    report("Connection.receive_data + events_received, 8 B onNext", best_of(receive))
    report("end to end: on_next -> receive_data -> events, 256/turn", best_of(end_to_end))
    report("end to end: OnNextPacked 1024 x 8 B", best_of(packed))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
