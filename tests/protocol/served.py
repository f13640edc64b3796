"""What the server of tests/protocol serves (``rstreams serve URL --publishers THIS_FILE``).

One publisher per built-in content type of PROTOCOL.md §17.3, each with the table's example
element, so that the client written from the document can check the bytes the table shows;
``raw`` (no type announced), ``big`` (one element larger than ``split_threshold``, sent in
parts, §8) and ``counter`` (the integers 0 .. ``to - 1`` as decimal text).
"""

from __future__ import annotations

from typing import Any

import rstreams
from rstreams.net import ARROW, FLOAT64, INT64, JSON, MSGPACK, UTF8, fixed_size, with_codec

BIG = bytes(range(256)) * 400
"""102,400 bytes: above the default split_threshold of 64 KiB (§8, §11)."""


def _warm_arrow() -> None:
    """Encode one Arrow element at start-up: the first encoding imports most of pyarrow, which
    would otherwise stall the server's loop in the middle of the tests."""
    try:
        ARROW.encode(_arrow_table())
    except ImportError:
        pass  # no pyarrow: typed/arrow fails its subscription, and its test is skipped


def _arrow_table() -> Any:
    import pyarrow as pa

    return pa.table({"n": [7]})


def _counter(params: dict[str, str]) -> rstreams.Flow[str]:
    return rstreams.from_iterable(range(int(params.get("to", "10")))).map(str)


PUBLISHERS: dict[str, Any] = {
    "typed/utf8": with_codec(rstreams.from_iterable(["hé"]), UTF8),
    "typed/json": with_codec(rstreams.from_iterable([{"a": [1, "é"]}]), JSON),
    "typed/msgpack": with_codec(rstreams.from_iterable([{"a": [1, b"x"]}]), MSGPACK),
    "typed/arrow": with_codec(lambda params: rstreams.from_iterable([_arrow_table()]), ARROW),
    "typed/int64": with_codec(rstreams.from_iterable([1, -2]), INT64),
    "typed/float64": with_codec(rstreams.from_iterable([1.5]), FLOAT64),
    "typed/octets": with_codec(rstreams.from_iterable([b"ab"]), fixed_size(2)),
    "raw": with_codec(rstreams.from_iterable([b"\x00\xff"]), None),
    "big": with_codec(rstreams.from_iterable([BIG]), None),
    "counter": with_codec(_counter, UTF8),
}

_warm_arrow()
