"""A deliberately broken RS.io client adapter: proves the client suite catches what it claims to.

Usage (as an adapter command): ``python broken_client.py MODE URL PUBLISHER SCRIPT``. It speaks
the protocol with raw sockets and breaks one rule per MODE:

- ``greedy``: subscribes with initialDemand 10 whatever the script asks (§6.1);
- ``deaf``: never answers a goodbye, and delivers an element past its demand (§6.3, §9.1);
  after either it hangs up without a goodbye, so the suite sees the end of its input (an
  event) rather than waiting out a deadline;
- ``slow-mute``: starts slowly (``SLOW_START`` seconds before it connects, longer than the
  frame deadline its test sets) and then sends nothing at all.
It prints the adapter's JSON lines for what it receives, like a real adapter.
"""

from __future__ import annotations

import json
import socket
import sys
import time

from rstreams.wire import ClientHello, FrameParser, Goodbye, OnComplete, OnError, OnNext, Subscribe, encode

SLOW_START = 0.5
"""Seconds ``slow-mute`` waits before it connects: a lower bound on its start-up, not a guess."""


def main() -> int:
    mode, url, publisher, _script = sys.argv[1:5]
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    if mode == "slow-mute":
        time.sleep(SLOW_START)
        with socket.create_connection((host, int(port))) as sock:
            while sock.recv(65536):  # until the suite hangs up
                pass
        return 0
    sock = socket.create_connection((host, int(port)), timeout=10)
    demand = 10 if mode == "greedy" else 1
    delivered = 0
    subscribe = Subscribe(publisher=publisher, subscriber=1, initial_demand=demand)
    sock.sendall(encode(ClientHello()) + encode(subscribe))
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=256)
    try:
        while data := sock.recv(65536):
            for frame in parser.feed(data):
                if isinstance(frame, OnNext):
                    print(json.dumps({"event": "next", "hex": frame.element.hex()}), flush=True)
                    delivered += 1
                    if mode == "deaf" and delivered > demand:
                        return _hang_up(sock)
                elif isinstance(frame, OnComplete):
                    print(json.dumps({"event": "complete"}), flush=True)
                    sock.sendall(encode(Goodbye()))
                elif isinstance(frame, OnError):
                    print(json.dumps({"event": "error", "message": frame.error}), flush=True)
                    sock.sendall(encode(Goodbye()))
                elif isinstance(frame, Goodbye) and mode == "deaf":
                    return _hang_up(sock)
                elif isinstance(frame, Goodbye):
                    sock.sendall(encode(Goodbye()))
                    print(json.dumps({"event": "closed", "message": frame.reason}), flush=True)
                    return 0
    except OSError:
        pass
    print(json.dumps({"event": "exit"}), flush=True)
    return 0


def _hang_up(sock: socket.socket) -> int:
    sock.close()
    print(json.dumps({"event": "exit"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
