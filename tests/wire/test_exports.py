"""The public surface of rstreams.wire is pinned."""

from __future__ import annotations

import rstreams.wire as wire

EXPECTED = {
    "PROTOCOL_VERSION",
    "AbruptCloseError",
    "Answer",
    "Cancel",
    "ClientHello",
    "Connection",
    "ConnectionBrokenError",
    "ConnectionClosed",
    "ConnectionConfig",
    "ConnectionState",
    "DemandExceededError",
    "ErrorCode",
    "Event",
    "ExtensionError",
    "ExtensionMessage",
    "ExtensionReceived",
    "Frame",
    "FrameError",
    "FrameParser",
    "FrameType",
    "Goodbye",
    "HandshakeError",
    "RemoteInvalidDemandError",
    "LimitExceededError",
    "LocalProtocolError",
    "Metadata",
    "OnComplete",
    "OnError",
    "OnNext",
    "OnNextBatch",
    "OnNextLastPart",
    "OnNextPacked",
    "OnNextPart",
    "OnSubscribe",
    "ProtocolError",
    "Qualifier",
    "RemoteProtocolError",
    "Request",
    "ServerHello",
    "Side",
    "StreamError",
    "StreamState",
    "StreamStateError",
    "Subscribe",
    "UnsupportedVersionError",
    "encode",
    "extensions",
}


def test_all_is_pinned() -> None:
    """__all__ lists exactly the documented names, and each exists."""
    assert set(wire.__all__) == EXPECTED
    for name in wire.__all__:
        assert hasattr(wire, name)
