"""The conformance cases, one module per area; importing this package registers them all."""

from __future__ import annotations

from rstreams.conformance.cases import channels as channels
from rstreams.conformance.cases import close as close
from rstreams.conformance.cases import codes as codes
from rstreams.conformance.cases import demand as demand
from rstreams.conformance.cases import extensions as extensions
from rstreams.conformance.cases import framing as framing
from rstreams.conformance.cases import handshake as handshake
from rstreams.conformance.cases import limits as limits
from rstreams.conformance.cases import messages as messages
from rstreams.conformance.cases import resumption as resumption
from rstreams.conformance.cases import reverse as reverse
from rstreams.conformance.cases import split as split
from rstreams.conformance.cases import state as state

__all__ = [
    "channels",
    "close",
    "codes",
    "demand",
    "extensions",
    "framing",
    "handshake",
    "limits",
    "messages",
    "resumption",
    "reverse",
    "split",
    "state",
]
