"""The conformance cases, one module per area; importing this package registers them all."""

from __future__ import annotations

from rstreams.conformance.cases import handshake as handshake

__all__ = ["handshake"]
