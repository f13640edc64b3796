"""A burst of subscribes for an unknown name is refused for that reason, not for a limit.

A peer sends 2,000 subscribes for a name nothing serves in one write, then reads: each must
be refused with onError ``no publisher named 'nope'`` (PROTOCOL.md §5.5), and none with the
``max_subscriptions`` refusal (§11). A subscribe refused at once never held a subscription.
"""

from __future__ import annotations

import socket

import pytest

from rstreams.wire import FrameParser, OnError, ServerHello, Subscribe
from testkit.hostile import frames, hello, server_process

pytestmark = pytest.mark.timeout(60)

BURST = 2000


def test_a_burst_of_unknown_names_is_refused_as_unknown() -> None:
    """2,000 subscribes for an unknown name in one write: 2,000 onErrors naming the name."""
    burst = frames(*(Subscribe(publisher="nope", subscriber=n) for n in range(1, BURST + 1)))
    errors: dict[int, str] = {}
    with server_process("tcp://127.0.0.1:0") as server:
        address = server.address
        assert isinstance(address, tuple)
        with socket.create_connection(address, timeout=30) as sock:
            sock.sendall(hello() + burst)
            parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
            while len(errors) < BURST:
                data = sock.recv(1 << 16)
                assert data, f"the server closed after {len(errors)} refusals"
                for frame in parser.feed(data):
                    assert isinstance(frame, OnError | ServerHello), frame
                    if isinstance(frame, OnError):
                        errors[frame.subscriber] = frame.error
                assert parser.error is None, parser.error
    wrong = [text for text in errors.values() if "no publisher named 'nope'" not in text]
    assert not wrong, f"{len(wrong)} of {BURST} refused for another reason, e.g. {wrong[0]!r}"
