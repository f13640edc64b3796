"""What the Python server of the interop matrix serves:
``rstreams serve URL --publishers tests/interop/offer.py``.

The built-in ``counter`` encoded as INT64 (8-byte elements, sent packed) and the conformance
publishers (``conformance/range``, ``large``, ``error``, ``infinite``, ``stats``, ...), the same
names the Java server of the matrix (``InteropServerMain``) offers.
"""

from __future__ import annotations

from rstreams._cli_publishers import builtin_publishers
from rstreams.api import Publisher
from rstreams.conformance import conformance_publishers
from rstreams.net._routes import WithCodec

_BUILTINS = builtin_publishers("int64")
_CONFORMANCE = conformance_publishers()


def PUBLISHERS(path: str, params: dict[str, str]) -> Publisher[bytes] | WithCodec | None:
    """``counter`` as INT64, otherwise the conformance publisher ``path`` (None: unknown)."""
    builtin = _BUILTINS.get(path)
    if isinstance(builtin, WithCodec):
        return builtin
    return _CONFORMANCE(path, params)
