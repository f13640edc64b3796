"""A deliberately broken RS.io client adapter: proves the client suite catches what it claims to.

Usage (as an adapter command): ``python broken_client.py MODE URL PUBLISHER SCRIPT``. It speaks
the protocol with raw sockets and breaks one rule per MODE:

- ``greedy``: subscribes with initialDemand 10 whatever the script asks (§6.1);
- ``deaf``: never answers a goodbye, and keeps delivering past demand (§6.3, §9.1).
It prints the adapter's JSON lines for what it receives, like a real adapter.
"""

from __future__ import annotations

import json
import socket
import sys

from rstreams.wire import ClientHello, FrameParser, Goodbye, OnComplete, OnError, OnNext, Subscribe, encode


def main() -> int:
    mode, url, publisher, _script = sys.argv[1:5]
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    demand = 10 if mode == "greedy" else 1
    subscribe = Subscribe(publisher=publisher, subscriber=1, initial_demand=demand)
    sock.sendall(encode(ClientHello()) + encode(subscribe))
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=256)
    try:
        while data := sock.recv(65536):
            for frame in parser.feed(data):
                if isinstance(frame, OnNext):
                    print(json.dumps({"event": "next", "hex": frame.element.hex()}), flush=True)
                elif isinstance(frame, OnComplete):
                    print(json.dumps({"event": "complete"}), flush=True)
                    sock.sendall(encode(Goodbye()))
                elif isinstance(frame, OnError):
                    print(json.dumps({"event": "error", "message": frame.error}), flush=True)
                    sock.sendall(encode(Goodbye()))
                elif isinstance(frame, Goodbye) and mode != "deaf":
                    sock.sendall(encode(Goodbye()))
                    print(json.dumps({"event": "closed", "message": frame.reason}), flush=True)
                    return 0
    except OSError:
        pass
    print(json.dumps({"event": "exit"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
