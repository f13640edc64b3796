"""The public surface of rstreams.net is pinned: changing it is a deliberate act."""

from __future__ import annotations

import pytest

import rstreams.net
from testkit import patience


def test_net_all_is_pinned() -> None:
    assert sorted(rstreams.net.__all__) == sorted(
        [
            "DEFAULT_HANDSHAKE_TIMEOUT",
            "DEFAULT_IDLE_TIMEOUT",
            "DEFAULT_KEEPALIVE",
            "DEFAULT_MAX_CONNECTIONS",
            "ARROW",
            "FLOAT64",
            "INT64",
            "JSON",
            "MSGPACK",
            "RAW",
            "UTF8",
            "ChannelInputError",
            "Codec",
            "Connection",
            "ContentTypeError",
            "ConnectionStatistics",
            "Credentials",
            "DecodeError",
            "ElementSizeError",
            "EncodeError",
            "Endpoint",
            "Message",
            "MessageCreditError",
            "Metadata",
            "RemoteStreamError",
            "Cancelled",
            "InternalError",
            "InvalidDemand",
            "LimitExceeded",
            "ProtocolViolation",
            "TextMessageError",
            "TimedOut",
            "Unauthenticated",
            "Unauthorized",
            "Unavailable",
            "UnknownPublisher",
            "Resume",
            "Server",
            "Token",
            "UnknownPublisherError",
            "UserPassword",
            "connect",
            "connect_pipe",
            "fixed_size",
            "parse_url",
            "serve",
            "split_name",
            "subscribe_metadata",
            "with_codec",
        ]
    )
    for name in rstreams.net.__all__:
        assert getattr(rstreams.net, name) is not None


@pytest.mark.timeout(120)  # (above its child's 60 s of own time)
def test_net_imports_without_websockets_installed_lazily() -> None:
    """websockets is imported only when a ws:// or wss:// URL is used (it is an optional extra)."""
    import sys

    code = "import sys, rstreams.net; print('websockets' in sys.modules)"
    result = patience.run([sys.executable, "-c", code], 60, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
