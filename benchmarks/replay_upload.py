"""CPU per upload of rows to a replay server's sink log (rstreams.replay.upload, PROTOCOL.md §21.8).

Run: ``python benchmarks/replay_upload.py [--uploads 6] [--way channel|reversed]``. A
:class:`~rstreams.replay.ReplayServer` with one sink log runs in a child process; this process
uploads two kinds of rows to it, ``--uploads`` times each after one warm-up upload: 64 rows of
1 MiB (each one element, split into 64 KiB parts by §21.6 or §8) and 200,000 rows of 45 B
(packed into elements of about 256 KiB). Each upload is discarded after it, so the server's
staging stays empty. Per kind it prints one line: CPU seconds per upload of the client and of
the server (``time.process_time`` of each process around the upload: the server's includes
its idle loop, a few microseconds), min and median, and the wall MB/s (median). ``--way
reversed`` withholds extension input-parts on the server, so uploads take the reverse
subscription instead of the channel. The server child prints its URL, then its CPU time on
every line it reads on stdin.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
KINDS = {"64 x 1 MiB": (64, MIB), "200,000 x 45 B": (200_000, 45)}


def serve(way: str) -> None:
    from rstreams.replay import ReplayLog, ReplayServer
    from rstreams.wire import ConnectionConfig

    config = ConnectionConfig(disabled_extensions=frozenset({9})) if way == "reversed" else None
    server = ReplayServer({}, sinks={"out": ReplayLog("out", capacity=1000)}, config=config).start()
    print(server.url, flush=True)
    for _ in sys.stdin:
        print(time.process_time(), flush=True)


def measure(uploads: int, way: str) -> None:
    from rstreams.replay import request_json, upload

    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--way", way],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    url = child.stdout.readline().strip()

    def server_cpu() -> float:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("\n")
        child.stdin.flush()
        return float(child.stdout.readline())

    try:
        for kind, (count, size) in KINDS.items():
            rows = [bytes([i % 251]) * size for i in range(count)]
            client: list[float] = []
            server: list[float] = []
            rates: list[float] = []
            for attempt in range(uploads + 1):
                token = f"t{attempt}"
                s0, c0, w0 = server_cpu(), time.process_time(), time.perf_counter()
                assert upload(url, "out", token, iter(rows)) == count
                w1, c1, s1 = time.perf_counter(), time.process_time(), server_cpu()
                request_json(url, f"out?discard={token}")
                if attempt:  # the first is the warm-up
                    client.append(c1 - c0)
                    server.append(s1 - s0)
                    rates.append(count * size / MIB / (w1 - w0))
            print(
                f"{way} {kind:<15} CPU per upload: client {min(client):.3f} s (median "
                f"{statistics.median(client):.3f}), server {min(server):.3f} s (median "
                f"{statistics.median(server):.3f}); {statistics.median(rates):.0f} MB/s wall (median)",
                flush=True,
            )
    finally:
        child.stdin.close()
        child.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=6)
    parser.add_argument("--way", choices=("channel", "reversed"), default="channel")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.way)
    else:
        measure(args.uploads, args.way)


if __name__ == "__main__":
    main()
