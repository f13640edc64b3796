"""RS.io's sans-I/O core: the reactive-streams-io wire protocol as bytes <-> events.

Nothing here does I/O, reads a clock or imports asyncio/socket/ssl (a test checks it).
:class:`Connection` is the one stateful object: feed it bytes with ``receive_data`` /
``receive_eof``, take :data:`Event` objects from ``events_received``, give it frames with
``send`` (or the measured fast paths ``on_next`` / ``on_next_many`` / ``request`` /
``send_subscribe`` / ``send_on_subscribe`` / ``send_on_complete``, which write the same bytes
through the same encoders), and write what
``data_to_send`` returns. PROTOCOL.md at the repository root is the specification this
package implements; its tables and examples are generated from, and tested against,
this code.
"""

from __future__ import annotations

from rstreams.errors import ConnectionBrokenError as ConnectionBrokenError
from rstreams.errors import LocalProtocolError as LocalProtocolError
from rstreams.errors import ProtocolError as ProtocolError
from rstreams.errors import RemoteProtocolError as RemoteProtocolError
from rstreams.wire import extensions as extensions
from rstreams.wire._codes import ErrorCode as ErrorCode
from rstreams.wire._errors import AbruptCloseError as AbruptCloseError
from rstreams.wire._errors import DemandExceededError as DemandExceededError
from rstreams.wire._errors import ExtensionError as ExtensionError
from rstreams.wire._errors import FrameError as FrameError
from rstreams.wire._errors import HandshakeError as HandshakeError
from rstreams.wire._errors import LimitExceededError as LimitExceededError
from rstreams.wire._errors import RemoteInvalidDemandError as RemoteInvalidDemandError
from rstreams.wire._errors import StreamStateError as StreamStateError
from rstreams.wire._errors import UnsupportedVersionError as UnsupportedVersionError
from rstreams.wire._metadata import Metadata as Metadata
from rstreams.wire._parser import FrameParser as FrameParser
from rstreams.wire._state import ConnectionState as ConnectionState
from rstreams.wire._state import StreamState as StreamState
from rstreams.wire.config import ConnectionConfig as ConnectionConfig
from rstreams.wire.connection import Connection as Connection
from rstreams.wire.connection import Side as Side
from rstreams.wire.events import Answer as Answer
from rstreams.wire.events import ConnectionClosed as ConnectionClosed
from rstreams.wire.events import Event as Event
from rstreams.wire.events import ExtensionReceived as ExtensionReceived
from rstreams.wire.events import OnNextBatch as OnNextBatch
from rstreams.wire.events import Qualifier as Qualifier
from rstreams.wire.events import StreamError as StreamError
from rstreams.wire.frames import PROTOCOL_VERSION as PROTOCOL_VERSION
from rstreams.wire.frames import Cancel as Cancel
from rstreams.wire.frames import ClientHello as ClientHello
from rstreams.wire.frames import ExtensionMessage as ExtensionMessage
from rstreams.wire.frames import Frame as Frame
from rstreams.wire.frames import FrameType as FrameType
from rstreams.wire.frames import Goodbye as Goodbye
from rstreams.wire.frames import OnComplete as OnComplete
from rstreams.wire.frames import OnError as OnError
from rstreams.wire.frames import OnNext as OnNext
from rstreams.wire.frames import OnNextLastPart as OnNextLastPart
from rstreams.wire.frames import OnNextPacked as OnNextPacked
from rstreams.wire.frames import OnNextPart as OnNextPart
from rstreams.wire.frames import OnSubscribe as OnSubscribe
from rstreams.wire.frames import Request as Request
from rstreams.wire.frames import ServerHello as ServerHello
from rstreams.wire.frames import Subscribe as Subscribe
from rstreams.wire.frames import encode as encode

__all__ = [
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
    "RemoteInvalidDemandError",
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
]

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
