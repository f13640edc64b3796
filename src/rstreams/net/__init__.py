"""RS.io over asyncio: serve local publishers, subscribe to remote ones.

::

    server = await rstreams.net.serve("tcp://127.0.0.1:0", {"numbers": rstreams.range(10).map(encode)})
    conn = await rstreams.net.connect(server.url)
    async for element in conn.publisher("numbers"):
        ...

URLs: ``tcp://host:port``, ``tls://host:port``, ``unix:///path``, ``ws://host:port/path``,
``wss://host:port/path``; pipes (a subprocess's stdin/stdout) via :func:`connect_pipe`.
The sans-I/O protocol itself is :mod:`rstreams.wire`; this package is the I/O around it.

Speed: run under uvloop when it is installed (``uvloop.run(main())``, or
``asyncio.run(main(), loop_factory=uvloop.new_event_loop)`` on Python 3.12+); both loops
work, uvloop has the shorter round trips. For fixed-size elements at millions per second,
use batches on both ends: ``with_codec(factory, INT64, batched=True)`` serves a publisher
that emits lists, and ``conn.publisher(name, codec=INT64, batched=True)`` hands the
subscriber one list per packed frame (demand still counts elements).
"""

from __future__ import annotations

from rstreams.net._channels import ChannelInputError as ChannelInputError
from rstreams.net._client import connect as connect
from rstreams.net._client import connect_pipe as connect_pipe
from rstreams.net._codec import ARROW as ARROW
from rstreams.net._codec import FLOAT64 as FLOAT64
from rstreams.net._codec import INT64 as INT64
from rstreams.net._codec import JSON as JSON
from rstreams.net._codec import MSGPACK as MSGPACK
from rstreams.net._codec import RAW as RAW
from rstreams.net._codec import UTF8 as UTF8
from rstreams.net._codec import Codec as Codec
from rstreams.net._codec import ContentTypeError as ContentTypeError
from rstreams.net._codec import DecodeError as DecodeError
from rstreams.net._codec import ElementSizeError as ElementSizeError
from rstreams.net._codec import EncodeError as EncodeError
from rstreams.net._codec import fixed_size as fixed_size
from rstreams.net._connection import Connection as Connection
from rstreams.net._connection import ConnectionStatistics as ConnectionStatistics
from rstreams.net._keepalive import DEFAULT_IDLE_TIMEOUT as DEFAULT_IDLE_TIMEOUT
from rstreams.net._keepalive import DEFAULT_KEEPALIVE as DEFAULT_KEEPALIVE
from rstreams.net._messages import Message as Message
from rstreams.net._messages import MessageCreditError as MessageCreditError
from rstreams.net._metadata import Metadata as Metadata
from rstreams.net._metadata import subscribe_metadata as subscribe_metadata
from rstreams.net._remote_errors import Cancelled as Cancelled
from rstreams.net._remote_errors import InternalError as InternalError
from rstreams.net._remote_errors import InvalidDemand as InvalidDemand
from rstreams.net._remote_errors import LimitExceeded as LimitExceeded
from rstreams.net._remote_errors import ProtocolViolation as ProtocolViolation
from rstreams.net._remote_errors import RemoteStreamError as RemoteStreamError
from rstreams.net._remote_errors import TimedOut as TimedOut
from rstreams.net._remote_errors import Unauthenticated as Unauthenticated
from rstreams.net._remote_errors import Unauthorized as Unauthorized
from rstreams.net._remote_errors import Unavailable as Unavailable
from rstreams.net._remote_errors import UnknownPublisher as UnknownPublisher
from rstreams.net._resume import Resume as Resume
from rstreams.net._routes import UnknownPublisherError as UnknownPublisherError
from rstreams.net._routes import split_name as split_name
from rstreams.net._routes import with_codec as with_codec
from rstreams.net._server import DEFAULT_HANDSHAKE_TIMEOUT as DEFAULT_HANDSHAKE_TIMEOUT
from rstreams.net._server import DEFAULT_MAX_CONNECTIONS as DEFAULT_MAX_CONNECTIONS
from rstreams.net._server import Server as Server
from rstreams.net._server import serve as serve
from rstreams.net._url import Endpoint as Endpoint
from rstreams.net._url import parse_url as parse_url
from rstreams.net._websocket_errors import TextMessageError as TextMessageError
from rstreams.wire._auth import Credentials as Credentials
from rstreams.wire._auth import Token as Token
from rstreams.wire._auth import UserPassword as UserPassword

__all__ = [
    "ARROW",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_MAX_CONNECTIONS",
    "FLOAT64",
    "INT64",
    "JSON",
    "MSGPACK",
    "RAW",
    "UTF8",
    "Cancelled",
    "ChannelInputError",
    "Codec",
    "Connection",
    "ConnectionStatistics",
    "ContentTypeError",
    "Credentials",
    "DecodeError",
    "ElementSizeError",
    "EncodeError",
    "Endpoint",
    "InternalError",
    "InvalidDemand",
    "LimitExceeded",
    "Message",
    "MessageCreditError",
    "Metadata",
    "ProtocolViolation",
    "RemoteStreamError",
    "Resume",
    "Server",
    "TextMessageError",
    "TimedOut",
    "Token",
    "Unauthenticated",
    "Unauthorized",
    "Unavailable",
    "UnknownPublisher",
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

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
# The credentials live in the sans-I/O rstreams.wire._auth, which rstreams.wire does not export:
# this package is their public home (without this line they said rstreams.wire._auth until the
# first lazy `rstreams.connect`, then `rstreams`).
Token.__module__ = UserPassword.__module__ = __name__
