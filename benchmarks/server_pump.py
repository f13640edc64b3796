"""Deterministic cost of rstreams' serving side alone: a server's Pump driven through a fake transport.

``hotpath.py`` counts both ends of a loopback connection together, with the event loop and the
kernel's socket calls between them; a change of ~100 instructions on the server drowns there
(a figure moves by 1-2 k with the memory layout alone). This drives only the server: a
:class:`~rstreams.net._pump.Pump` made as ``serve()`` makes one, with a fake transport whose
``writelines`` keeps what it is given. The client's frames for one operation are recorded once
from a real client core (``Pump(client=True)``'s, fed the server's answers while recording),
then the same bytes are fed to ``data_received`` once per operation, with no event loop turn
between them (each read's answer is written inside ``data_received``, as on a socket). What
remains per operation is the server's read, routing, serving and write, plus the fake
transport's two calls (``writelines``, ``get_write_buffer_size``: Python calls, as the socket
transport's own are).

  rr       one request/response: a subscribe for ``echo?d=12345678`` with demand 1, answered
           by onSubscribe, onNext and onComplete (the client reuses the id, as it does)
  latency  one element on an open stream: ``request(1)``, answered by one onNext
  refuse   a subscribe for a name nobody offers, answered by onError
  small    one 8-byte element of a stream asked for 128 at a time (a read of ``request(128)``
           is one operation; the figure is per element)
  large    one 64 KiB element of a stream asked for 4 at a time (per element)

Usage::

    python benchmarks/server_pump.py rr latency                 # Python calls per operation
    python benchmarks/server_pump.py latency --top 20           # ... and the functions called most
    python benchmarks/server_pump.py rr latency --instructions  # instructions (valgrind)
    python benchmarks/server_pump.py rr --instructions --no-timers

``--instructions`` runs this script under valgrind (cachegrind, no cache simulation) with
``--count`` and with twice as many operations and reports the difference per operation, as
``hotpath.py`` does; with no socket and no loop turn the runs repeat to within a few
instructions per operation, so ~100 instructions of difference stand out in a run of seconds.
The client's side is not counted (its bytes are recorded before the warm-up), and neither is
the event loop: compare these figures with each other, and ``hotpath.py``'s with the ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hotpath import Counter, valgrind_instructions
from net_rstreams import CONFIG, _bench, _echo

from rstreams.net._keepalive import DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE
from rstreams.net._pump import Pump
from rstreams.net._transport import TransportHandler
from rstreams.wire import Connection as Core

MODES = ("rr", "latency", "refuse", "small", "large")
PER_OPERATION = {"small": 128, "large": 4}
"""Elements a read asks for in the stream modes (figures are per element)."""
WARM_UP = 500
"""Operations before measuring (fixed, so that runs of different lengths difference cleanly)."""
COUNTS = {"rr": 20_000, "latency": 20_000, "refuse": 20_000, "small": 2_000, "large": 2_000}
COUNTS_UNDER_VALGRIND = {"rr": 2_000, "latency": 2_000, "refuse": 2_000, "small": 200, "large": 500}
OFFER = {"bench": _bench, "echo": _echo}


class FakeTransport:
    """What the pump writes to: always writable, never backed up; keeps what was written."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def writelines(self, chunks: list[bytes]) -> bool:
        self.written += chunks
        return True

    def take(self) -> bytes:
        """What was written since the last call, as one ``bytes``."""
        data, self.written = b"".join(self.written), []
        return data

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def pause_reading(self) -> None:
        raise AssertionError("the server stopped reading")

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_handler(self, handler: TransportHandler) -> None:
        pass


class Peer:
    """The client's side while recording: its core, fed what the server wrote."""

    def __init__(self, transport: FakeTransport) -> None:
        self.core: Core = Pump(client=True, config=CONFIG).outbox.core  # as connect() makes it
        self.transport = transport

    def sent(self) -> bytes:
        return b"".join(self.core.data_to_send())

    def hear(self) -> list[Any]:
        """Feed what the server wrote to the client's core; its events."""
        return self.core.receive(self.transport.take())


def _serve(transport: FakeTransport, timers: bool) -> Pump:
    pump = Pump(  # with serve()'s timers, or none
        client=False,
        offer=OFFER,
        config=CONFIG,
        keepalive=DEFAULT_KEEPALIVE if timers else None,
        idle_timeout=DEFAULT_IDLE_TIMEOUT if timers else None,
    )
    pump.connection_made(transport)  # writes the server's hello
    return pump


def _record(mode: str, pump: Pump, peer: Peer) -> bytes:
    """The client's bytes of one operation of ``mode``, recorded from its core (after the
    hellos and, for the stream modes, the subscribe), checked to repeat."""
    core = peer.core
    pump.data_received(memoryview(bytearray(peer.sent())))  # the client's hello
    peer.hear()
    if mode in ("rr", "refuse"):
        name = "echo?d=12345678" if mode == "rr" else "missing"
        frames = []
        for _ in range(2):  # the id is free again once answered: the same bytes each time
            core.send_subscribe(name, 1, 1)
            frames.append(peer.sent())
            pump.data_received(memoryview(bytearray(frames[-1])))
            peer.hear()
        if frames[0] != frames[1]:
            raise AssertionError("a request's bytes differ between round trips")
        return frames[0]
    size = 8 if mode in ("latency", "small") else 64 * 1024
    core.send_subscribe(f"bench?n=1000000000&size={size}", 1, 0)
    pump.data_received(memoryview(bytearray(peer.sent())))
    peer.hear()  # onSubscribe
    core.request(1, PER_OPERATION.get(mode, 1))
    return peer.sent()


def _feeder(mode: str, pump: Pump, frame: bytes) -> Callable[[], object]:
    """``feed()``: one operation. A stream's refill may leave work for the next loop turn (room
    or demand left): its flush runs at once, in place of the turn (the loop is not counted)."""
    data = memoryview(bytearray(frame))  # as a socket's read hands it over
    feed = pump.data_received
    if mode not in PER_OPERATION:
        return lambda: feed(data)
    outbox = pump.outbox

    def feed_stream() -> None:
        feed(data)
        while outbox.flush_scheduled:
            outbox.flush_now()

    return feed_stream


def _check(mode: str, pump: Pump, transport: FakeTransport, feed: Callable[[], object]) -> bytes:
    """One operation; its answer, which ``rr``, ``latency`` and ``refuse`` write inside the read."""
    transport.take()
    feed()
    if pump.outbox.flush_scheduled or pump.serving.refills:
        raise AssertionError(f"{mode}: an operation left work for a later loop turn")
    answer = transport.take()
    if not answer:
        raise AssertionError(f"{mode}: no answer")
    return answer


async def measure(mode: str, count: int, *, profile: bool, top: int, timers: bool = True) -> dict[str, Any]:
    transport = FakeTransport()
    pump = _serve(transport, timers)
    feed = _feeder(mode, pump, _record(mode, pump, Peer(transport)))
    first = _check(mode, pump, transport, feed)
    if _check(mode, pump, transport, feed) != first and mode != "large":
        raise AssertionError(f"{mode}: the answers of two operations differ")
    for _ in range(WARM_UP):
        feed()
    gc.collect()
    counter = Counter(top > 0) if profile else None
    if counter is not None:
        sys.setprofile(counter)
    try:
        for _ in range(count):
            feed()
    finally:
        sys.setprofile(None)
    if pump.outbox.ended is not None:
        raise AssertionError(f"{mode}: the connection ended: {pump.outbox.ended!r}")
    if counter is None:
        return {}
    per = count * PER_OPERATION.get(mode, 1)
    result: dict[str, Any] = {
        "calls": counter.calls / per,
        "rstreams": counter.ours / per,
        "c_calls": counter.c_calls / per,
    }
    if counter.by_function is not None:
        result["top"] = [(name, n / per) for name, n in counter.by_function.most_common(top)]
    return result


def instructions(mode: str, count: int, *, timers: bool = True) -> float:
    """Instructions per operation (per element in the stream modes), counted by valgrind:
    runs of ``count`` and ``2 * count`` operations (at once, one process each), differenced
    (as ``hotpath.instructions``)."""
    flags = [] if timers else ["--no-timers"]
    runs = [[__file__, mode, "--count", str(n), "--no-profile", *flags] for n in (count, 2 * count)]
    once, twice = valgrind_instructions(runs)
    return (twice - once) / (count * PER_OPERATION.get(mode, 1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("modes", nargs="+", choices=MODES)
    parser.add_argument("--count", type=int, default=0, help="operations measured (default: per mode)")
    parser.add_argument("--top", type=int, default=0, help="also list the N functions called most")
    parser.add_argument("--instructions", action="store_true", help="instructions per operation (valgrind)")
    parser.add_argument(
        "--no-timers",
        dest="timers",
        action="store_false",
        help="no keepalive and no idle timeout (as hotpath's)",
    )
    parser.add_argument("--no-profile", dest="profile", action="store_false", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    defaults = COUNTS_UNDER_VALGRIND if args.instructions else COUNTS
    if args.instructions and args.profile:  # every mode's runs at once (each a process of its own)
        counts = {mode: args.count or defaults[mode] for mode in args.modes}
        with ThreadPoolExecutor(len(counts)) as pool:
            figures = pool.map(lambda mode: instructions(mode, counts[mode], timers=args.timers), counts)
            for mode, per in zip(counts, figures, strict=True):
                unit = "element" if mode in PER_OPERATION else "operation"
                runs = f"{counts[mode]} vs {2 * counts[mode]} operations"
                print(f"{mode:8} {per:10,.0f} instructions per {unit} (server alone; {runs})")
        return
    for mode in args.modes:
        count = args.count or defaults[mode]
        unit = "element" if mode in PER_OPERATION else "operation"
        result = asyncio.run(measure(mode, count, profile=args.profile, top=args.top, timers=args.timers))
        if not result:
            continue
        print(
            f"{mode:8} {result['calls']:8.1f} Python calls per {unit} "
            f"({result['rstreams']:.1f} in rstreams), {result['c_calls']:.1f} builtin calls"
        )
        for name, per_op in result.get("top", []):
            print(f"    {per_op:8.2f}  {name}")


if __name__ == "__main__":
    main()
