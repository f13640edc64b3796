"""Your own publishers, served by the ``rstreams`` command without writing a server.

Serve them, then read them from another terminal::

    rstreams serve tcp://127.0.0.1:9000 --publishers examples/my_publishers.py:PUBLISHERS
    rstreams subscribe tcp://127.0.0.1:9000 'squares?to=5'        # 0 1 4 9 16
    rstreams subscribe tcp://127.0.0.1:9000 hello/ann             # hello, ann
    rstreams subscribe tcp://127.0.0.1:9000 planets --codec json  # one JSON object a line
    rstreams subscribe tcp://127.0.0.1:9000 'squares?to=x'        # exit 1: ValueError: squares: to needs ...

``PUBLISHERS`` is exactly what ``rstreams.serve(url, publishers)`` takes: names, or
patterns with ``{field}`` placeholders, mapped to Publishers or to factories
``(params) -> Publisher``. Query parameters (``squares?to=5``) and pattern fields
(``hello/{who}``) arrive in ``params`` as strings. Elements are bytes unless a
publisher is wrapped in ``with_codec`` (or the server runs with ``--codec``, which then
encodes each element: a factory's elements are values of that codec, not bytes). A
Publisher that signals ``on_error`` ends that subscription with its error's type and message,
as ``squares`` does for a bad ``to``. A factory that raises (or returns something that is not
a Publisher) ends only that subscription too, but the subscriber reads a fixed text,
``publisher 'squares' could not be created: its factory failed (PROTOCOL.md §19.2)``: the
exception, whose text could hold what a client must not see, goes to the server's log
(docs/security.md).
"""

from __future__ import annotations

import rstreams
from rstreams.net import JSON, with_codec


def squares(params: dict[str, str]) -> rstreams.Flow[bytes]:
    """``squares?to=N``: 0, 1, 4, ... (N-1)**2 as decimal text (N defaults to 10)."""
    to = params.get("to", "10")
    if not to.isdigit():
        return rstreams.error(ValueError(f"squares: to needs a whole number, got {to!r}"))
    return rstreams.range(int(to)).map(lambda n: str(n * n).encode())


def hello(params: dict[str, str]) -> rstreams.Flow[bytes]:
    """``hello/{who}``: one greeting."""
    return rstreams.just(f"hello, {params['who']}".encode())


PLANETS = [
    {"name": "Mercury", "moons": 0},
    {"name": "Venus", "moons": 0},
    {"name": "Earth", "moons": 1},
    {"name": "Mars", "moons": 2},
]

PUBLISHERS = {
    "squares": squares,
    "hello/{who}": hello,
    "planets": with_codec(rstreams.from_iterable(PLANETS), JSON),
}
