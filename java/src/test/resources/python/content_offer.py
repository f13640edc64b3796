"""What ``rstreams serve URL --publishers content_offer.py:PUBLISHERS`` serves to the Java
client in ``ContentMetadataInteropTest`` (extensions content-types and metadata, PROTOCOL.md
§17-§18): ``json`` as JSON, ``words`` as UTF8, ``longs`` as INT64, ``raw`` without a codec, and
``echo``, one UTF8 element naming the subscribe's metadata (``key=value`` pairs, sorted), and
``values``, :data:`VALUES` as JSON (what ``Codec.JSON`` must read as the same values).
"""

from __future__ import annotations

from typing import Any

from rstreams import just
from rstreams.net import INT64, JSON, UTF8, subscribe_metadata, with_codec
from rstreams.net._routes import WithCodec

VALUES = [
    {"a": [1, "\u00e9", None, True], "b": {"c": 1.5}},
    "\U0001f600 </",
    12345678901234567890123,
    -7,
    [],
]
"""JSON values each side must read as the other wrote them (ContentMetadataInteropTest)."""


def PUBLISHERS(path: str, params: dict[str, str]) -> Any:
    """The publisher ``path`` names (None: unknown)."""
    if path == "json":
        return with_codec(just({"a": [1, "\u00e9"]}), JSON)
    if path == "values":
        return with_codec(just(*VALUES), JSON)
    if path == "words":
        return with_codec(just("h\u00e9", "h\u00e9"), UTF8)
    if path == "longs":
        return with_codec(just(0, 1, 2), INT64)
    if path == "raw":
        return just(b"\x01\x02")
    if path == "echo":
        metadata = subscribe_metadata()
        text = ",".join(f"{key}={metadata.text(key)}" for key in sorted(metadata))
        echo: WithCodec = with_codec(just(text), UTF8)
        return echo
    return None
