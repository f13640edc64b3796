"""Replay logs: a bounded, positioned, replayable log in front of any Publisher, served over RS.io.

::

    from rstreams.replay import ReplayLog, ReplayServer

    log = ReplayLog("sensors", capacity=100_000).feed(sensor_flow)   # any Publisher of bytes
    with ReplayServer({"sensors": log}, sinks={"results": ReplayLog("results", evict=True)}) as server:
        ...   # any RS.io reader: "sensors?from=0&to=100", "sensors?latest", "sensors?commit=100"

A Reactive Streams publisher only goes forward; a :class:`ReplayLog` gives its elements
positions and keeps them until a reader commits, so a reader that restarts re-reads exactly
what it had not finished (exactly-once), and the producer is asked for more only as readers
commit (backpressure end to end). :class:`ReplayServer` serves logs by name; the naming
convention, the upload convention of sink logs and the guarantees are in ``docs/replay.md``.

Needs no extra: this package uses api, flow and net only. Spark's ``rstreams`` source and sink
(:mod:`rstreams.spark`) are clients of it.
"""

from __future__ import annotations

from rstreams.replay._access import Access as Access
from rstreams.replay._access import AccessError as AccessError
from rstreams.replay._client import AccessDeniedError as AccessDeniedError
from rstreams.replay._client import CertificateRefusedError as CertificateRefusedError
from rstreams.replay._client import LogEndedError as LogEndedError
from rstreams.replay._client import RemoteLogError as RemoteLogError
from rstreams.replay._client import ReplayTimeoutError as ReplayTimeoutError
from rstreams.replay._client import ServerUnavailableError as ServerUnavailableError
from rstreams.replay._client import TLSHandshakeError as TLSHandshakeError
from rstreams.replay._client import fetch_range as fetch_range
from rstreams.replay._client import request_json as request_json
from rstreams.replay._client import stream_range as stream_range
from rstreams.replay._client import upload as upload
from rstreams.replay._cursor import PACK_BYTES as PACK_BYTES
from rstreams.replay._cursor import LogEpochError as LogEpochError
from rstreams.replay._cursor import LogLookupError as LogLookupError
from rstreams.replay._cursor import TrimmedError as TrimmedError
from rstreams.replay._cursor import pack as pack
from rstreams.replay._cursor import unpack as unpack
from rstreams.replay._log import PENDING_TIMEOUT as PENDING_TIMEOUT
from rstreams.replay._log import ReplayLog as ReplayLog
from rstreams.replay._server import QUERY_KEYS as QUERY_KEYS
from rstreams.replay._server import UPLOAD_NAME as UPLOAD_NAME
from rstreams.replay._server import LogRequestError as LogRequestError
from rstreams.replay._server import ReplayServer as ReplayServer
from rstreams.replay._server import ServerAlreadyRunningError as ServerAlreadyRunningError
from rstreams.replay._server import ServerNotRunningError as ServerNotRunningError
from rstreams.replay._server import replay_offer as replay_offer
from rstreams.replay._staging import STAGING_BYTES as STAGING_BYTES
from rstreams.replay._staging import STAGING_TTL as STAGING_TTL
from rstreams.replay._staging import StagingFullError as StagingFullError
from rstreams.replay._store import LogDirectoryError as LogDirectoryError

__all__ = [
    "PACK_BYTES",
    "PENDING_TIMEOUT",
    "QUERY_KEYS",
    "STAGING_BYTES",
    "STAGING_TTL",
    "UPLOAD_NAME",
    "Access",
    "AccessDeniedError",
    "AccessError",
    "CertificateRefusedError",
    "LogDirectoryError",
    "LogEndedError",
    "LogEpochError",
    "LogLookupError",
    "LogRequestError",
    "RemoteLogError",
    "ReplayLog",
    "ReplayServer",
    "ReplayTimeoutError",
    "ServerAlreadyRunningError",
    "ServerNotRunningError",
    "ServerUnavailableError",
    "StagingFullError",
    "TLSHandshakeError",
    "TrimmedError",
    "fetch_range",
    "pack",
    "replay_offer",
    "request_json",
    "stream_range",
    "unpack",
    "upload",
]

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
