"""Instructions per element of each side of a network benchmark: its client process and its server
process, counted apart.

``hotpath.py`` counts both ends in one process; the timed scenarios run the two ends as two
processes on two CPUs, where the slower side sets the rate. This runs a network script's
``client --mode stream`` (or ``rr``, ``latency``; ``net_rstreams.py``, ``net_ceiling.py``, ...) under valgrind
(cachegrind, no cache simulation) with ``count`` and ``2 * count`` elements and reports the
difference per element for each process::

    python benchmarks/sides.py net_rstreams.py --size 65536 --count 300
    python benchmarks/sides.py net_ceiling.py --size 65536 --count 300 --style batched
    python benchmarks/sides.py net_rstreams.py --size 65536 --count 3000 --client-only
    python benchmarks/sides.py net_rstreams.py --mode rr --count 2000
    python benchmarks/sides.py net_rstreams.py --mode latency --count 2000 --no-timers
    python benchmarks/sides.py net_ceiling.py --mode rr --count 2000

Each client runs a warm-up of ``count // 10`` elements before its measured run, so the
difference covers ``1.1 * count`` elements. ``--mode rr`` and ``--mode latency`` run the
script's mode of that name (``net_ceiling.py`` has only ``rr``: its round trip is its
latency) and report per round trip or per element; their warm-up is a fixed 200
operations, so the difference covers ``count`` of them (``count`` at least 200). Other
arguments (``--no-timers``, ``--metadata 100``) go to the script.

``--client-only`` leaves the server native: it then keeps the client's socket full, so the
client's reads are as large as its buffer (steadier counts, and the client's cost at full
speed). Counts of runs differ by about 1k per element (start-up work that varies between
runs does not cancel out fully): prefer a ``count`` in the thousands with ``--client-only``.

``--outside-copies`` also reports the instructions outside ``memcpy``/``memmove``. glibc copies
64 KiB with ``rep movsb``, which valgrind counts once per byte, or with a vector loop (a few
thousand instructions), depending on how source and target align: the copies make most of the
noise of a large element's figure; the rest varies by a few tens of instructions per element
(when the reads are as large as the client's buffer, as with ``--client-only``).
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD_TIMEOUT = 600.0
"""Seconds the client waits for its server child's port (under valgrind it starts slowly)."""
WARM_UP = 200
"""Round trips (elements) each script's rr and latency modes run before measuring
(``_netcommon.round_trips``, ``net_rstreams.mode_latency``, ``net_ceiling.client_main``)."""


def _as_client(argv: list[str]) -> None:
    """Run ``argv`` (a script and its arguments) as ``__main__`` with a patient server start."""
    sys.path.insert(0, str(HERE))
    import _netcommon

    _netcommon.server_child.__wrapped__.__defaults__ = (CHILD_TIMEOUT,)  # type: ignore[attr-defined]
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


def _outside_copies(path: Path) -> int:
    """Instructions of a cachegrind output file outside the functions named memcpy or memmove."""
    total = 0
    copying = False
    with path.open() as lines:
        for line in lines:
            if line.startswith("fn="):
                copying = re.search(r"mem(cpy|move)", line) is not None
            elif line[:1].isdigit() and not copying:
                fields = line.split()
                if len(fields) > 1:
                    total += int(fields[1])
    return total


def _counts(
    script: str, mode: str, count: int, extra: list[str], both: bool
) -> tuple[dict[str, int], dict[str, int]]:
    """Instructions per role (``client``, ``server``): all of them, and those outside copies."""
    with tempfile.TemporaryDirectory() as files:
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={files}/cg.%p"]
        command += ["--trace-children=yes"] if both else []
        command += [sys.executable, __file__, "--as-client", str(HERE / script), "client", "--mode", mode]
        command += ["--count", str(count), *extra]
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ)
        if done.returncode:
            raise RuntimeError(f"the run failed: {done.stderr[-3000:]}")
        commands: dict[str, str] = {}
        counts: dict[str, int] = {}
        outside: dict[str, int] = {}
        read: set[str] = set()
        for line in done.stderr.splitlines():
            seen = re.match(r"==(\d+)== Command: (.*)", line)
            if seen:
                commands[seen.group(1)] = seen.group(2)  # the last program a process ran (taskset execs)
            refs = re.match(r"==(\d+)== I\s+refs:\s+([\d,]+)", line)
            if refs:
                pid = refs.group(1)
                role = "server" if " server" in commands.get(pid, "") else "client"
                counts[role] = counts.get(role, 0) + int(refs.group(2).replace(",", ""))
                if pid not in read:  # (one file per process: an exec writes over the first program's)
                    read.add(pid)
                    outside[role] = outside.get(role, 0) + _outside_copies(Path(f"{files}/cg.{pid}"))
    return counts, outside


def main() -> None:
    if sys.argv[1:2] == ["--as-client"]:
        _as_client(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("script", help="a network script in benchmarks/ (net_rstreams.py, net_ceiling.py)")
    parser.add_argument(
        "--mode",
        default="stream",
        choices=["stream", "rr", "latency"],
        help="the script's mode (default stream)",
    )
    parser.add_argument("--count", type=int, default=300, help="elements (round trips) of the shorter run")
    parser.add_argument("--size", type=int, default=65536, help="stream mode: bytes per element")
    parser.add_argument("--window", type=int, default=256, help="stream mode")
    parser.add_argument("--client-only", action="store_true", help="count the client; the server runs as is")
    parser.add_argument(
        "--outside-copies", action="store_true", help="also count the instructions outside memcpy/memmove"
    )
    args, extra = parser.parse_known_args()
    if args.mode == "stream":
        extra += ["--size", str(args.size), "--window", str(args.window)]
        elements = 1.1 * args.count  # each run is a warm-up of count // 10 and the measured run
        unit = "element"
    else:
        if args.count < WARM_UP:
            parser.error(f"--mode {args.mode} needs --count of at least {WARM_UP} (its warm-up)")
        elements = args.count  # the warm-up (WARM_UP operations) is the same in both runs
        unit = "round trip" if args.mode == "rr" else "element"
    both = not args.client_only
    once, once_outside = _counts(args.script, args.mode, args.count, extra, both)
    twice, twice_outside = _counts(args.script, args.mode, 2 * args.count, extra, both)
    for role in sorted(twice):
        per = (twice[role] - once.get(role, 0)) / elements
        print(f"{args.script} {role:6} {per:10,.0f} instructions per {unit}")
        if args.outside_copies:
            per = (twice_outside[role] - once_outside.get(role, 0)) / elements
            print(f"{args.script} {role:6} {per:10,.0f} of them outside memcpy/memmove")


if __name__ == "__main__":
    main()
