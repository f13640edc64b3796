"""What ``rstreams serve URL`` serves: the built-in demo publishers, or a user's module.

Built-ins (parameters go in the name, ``counter?from=5&to=10&rate=2``):

* ``counter``: the integers ``from`` (0) up to but not including ``to`` (none: endless),
  ``rate`` per second (0: as fast as the subscriber asks). Encoded with ``--codec``.
* ``sensors/{id}``: simulated readings of sensor ``id`` as JSON text,
  ``{"sensor": id, "seq": n, "ts": unix seconds, "value": v}``, where ``value`` follows a
  random walk (the same walk for the same ``id``); ``rate`` per second (10; 0: as fast
  as asked), ``count`` readings (none: endless).

Nothing is produced ahead of demand: each element is made when the subscriber has asked
for it, so a slow subscriber slows the source (and a paced source does not catch up with
a burst after a pause). A bad parameter becomes that subscription's ``onError``
(``ValueError: counter: rate needs a number >= 0, got 'x'``); the server goes on.

A user's publishers (``--publishers module:NAME`` or ``path/to/file.py:NAME``) are what
``rstreams.serve(url, publishers)`` takes: a mapping from names or ``{field}`` patterns
to Publishers or factories, or a callable ``(path, params)``.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import itertools
import os
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rstreams.api import Publisher
from rstreams.errors import ReactiveStreamsError
from rstreams.flow._flow import Flow, from_publisher
from rstreams.flow._public import error, from_async_iterable, from_iterable
from rstreams.net import FLOAT64, INT64, JSON, UTF8, Codec, with_codec

__all__ = [
    "BUILTIN_NAMES",
    "CODECS",
    "PublisherParameterError",
    "PublishersSpecError",
    "builtin_channels",
    "builtin_publishers",
    "load_publishers",
]

T = TypeVar("T")

CODECS: dict[str, Codec[Any] | None] = {
    "raw": None,
    "utf8": UTF8,
    "json": JSON,
    "int64": INT64,
    "float64": FLOAT64,
}
"""Element codecs by their command-line name (``raw``: bytes as they are)."""

BUILTIN_NAMES = ("counter", "sensors/{id}")

SENSOR_RATE = 10.0
"""Default readings per second of ``sensors/{id}``: enough to watch, few enough to read."""


class PublishersSpecError(ReactiveStreamsError, ValueError):
    """``--publishers`` names no usable offer (module, file or attribute missing, wrong type)."""


class PublisherParameterError(ReactiveStreamsError, ValueError):
    """A built-in publisher or channel of ``rstreams serve`` (``counter``, ``sensors/{id}``,
    ``upper``) was opened with a parameter it does not take, or a value it cannot use: that
    subscription's onError (code 1), its message naming the publisher and the parameter."""


def builtin_publishers(codec_name: str = "utf8") -> dict[str, Any]:
    """The built-in offer; ``codec_name`` (a :data:`CODECS` key) encodes ``counter``'s integers."""
    if codec_name not in CODECS:
        raise ValueError(f"unknown codec {codec_name!r}; choose one of {', '.join(CODECS)}")
    codec = CODECS[codec_name]
    if codec is None:  # raw: the integer in decimal, bytes with no content type announced
        counter = with_codec(_checked("counter", _counter(lambda n: str(n).encode())), None)
    elif codec is UTF8:  # text: the integer in decimal, announced as text/plain (§17)
        counter = with_codec(_checked("counter", _counter(str)), UTF8)
    elif codec is FLOAT64:
        counter = with_codec(_checked("counter", _counter(float)), codec)
    else:
        counter = with_codec(_checked("counter", _counter(lambda n: n)), codec)
    sensors = with_codec(_checked("sensors", _sensor), JSON)
    return {"counter": counter, "sensors/{id}": sensors}


def builtin_channels() -> dict[str, Any]:
    """The built-in channels (PROTOCOL.md §21): ``upper`` answers each input element upper-cased."""
    return {"upper": _upper}


def _upper(inputs: Publisher[bytes], params: dict[str, str]) -> Flow[bytes]:
    try:
        _only(params)
    except ValueError as bad:
        return error(PublisherParameterError(f"upper: {bad}"))
    return from_publisher(inputs).map(bytes.upper)


def _checked(
    what: str, factory: Callable[[dict[str, str]], Flow[Any]]
) -> Callable[[dict[str, str]], Flow[Any]]:
    """``factory`` with a bad parameter turned into the stream's onError, naming ``what``."""

    def make(params: dict[str, str]) -> Flow[Any]:
        try:
            return factory(params)
        except ValueError as bad:
            return error(PublisherParameterError(f"{what}: {bad}"))

    return make


def _counter(convert: Callable[[int], Any]) -> Callable[[dict[str, str]], Flow[Any]]:
    def make(params: dict[str, str]) -> Flow[Any]:
        _only(params, "from", "to", "rate")
        _numbers(params)  # check from and to now: a bad one is this subscription's onError
        rate = _rate(params, 0.0)
        if rate == 0:  # synchronous: as fast as the subscriber asks
            # map after the source, so that a bounded counter's end is known with its last element
            return from_iterable(_Replayable(lambda: _numbers(params))).map(convert)
        paced = from_async_iterable(lambda: _paced(map(convert, _numbers(params)), rate))
        return _ending(paced, _length(params))

    return make


def _length(params: dict[str, str]) -> int | None:
    """How many numbers a counter with these parameters yields (``None``: no ``to``, endless)."""
    if "to" not in params:
        return None
    return max(0, _int(params, "to", 0) - _int(params, "from", 0))


def _ending(paced: Flow[T], count: int | None) -> Flow[T]:
    """``paced`` completing with its ``count``-th element: an async iterator tells its end only
    when asked for one more, which a subscriber with exactly ``count`` of demand never does
    (PROTOCOL.md §6.1)."""
    return paced if count is None else paced.take(count)


def _numbers(params: dict[str, str]) -> Iterator[int]:
    start = _int(params, "from", 0)
    if "to" not in params:
        return itertools.count(start)
    return iter(range(start, _int(params, "to", 0)))


class _Replayable:
    """An iterable that makes a fresh iterator per subscription (cold, like ``range``)."""

    def __init__(self, make: Callable[[], Iterator[Any]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[Any]:
        return self._make()


def _sensor(params: dict[str, str]) -> Flow[Any]:
    _only(params, "id", "rate", "count")
    sensor = params["id"]
    rate = _rate(params, SENSOR_RATE)
    count = _int(params, "count", -1) if "count" in params else None
    if count is not None and count < 0:
        raise ValueError(f"count needs an integer >= 0, got {params['count']!r}")
    return _ending(from_async_iterable(lambda: _paced(_readings(sensor, count), rate)), count)


def _readings(sensor: str, count: int | None) -> Iterator[dict[str, Any]]:
    walk = random.Random(f"sensor:{sensor}")  # simulated data, not security
    value = 20.0 + walk.uniform(-5.0, 5.0)
    for seq in itertools.count() if count is None else range(count):
        yield {"sensor": sensor, "seq": seq, "ts": round(time.time(), 3), "value": round(value, 3)}
        value += walk.gauss(0.0, 0.5)


async def _paced(items: Iterator[T], rate: float) -> AsyncIterator[T]:
    """``items`` at most ``rate`` per second (0: no pacing), each made only when asked for."""
    if rate == 0:
        for item in items:
            yield item
        return
    loop = asyncio.get_running_loop()
    period = 1.0 / rate
    due = loop.time()
    while True:
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        for item in itertools.islice(items, 1):  # made now, when due: a reading is stamped as sent
            yield item
            break
        else:
            return
        due = max(due + period, loop.time())  # after a pause: no burst to catch up


def _only(params: dict[str, str], *allowed: str) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        takes = f"takes {', '.join(allowed)}" if allowed else "takes no parameters"
        raise ValueError(f"unknown parameter {unknown[0]!r}; this publisher {takes}")


def _int(params: dict[str, str], key: str, default: int) -> int:
    text = params.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{key} needs an integer, got {text!r}") from None


def _rate(params: dict[str, str], default: float) -> float:
    text = params.get("rate")
    if text is None:
        return default
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0 <= rate < float("inf"):
        raise ValueError(f"rate needs a number of elements per second >= 0, got {text!r}")
    return rate


def load_publishers(spec: str) -> Mapping[str, Any] | Callable[..., Any]:
    """The offer named by ``spec``: ``module:NAME`` or ``path/to/file.py:NAME`` (``NAME``
    defaults to ``PUBLISHERS``).

    Raises:
        PublishersSpecError: the module or file cannot be loaded, has no ``NAME``, or
            ``NAME`` is neither a mapping nor a callable.
    """
    where, colon, attribute = spec.rpartition(":")
    if colon and not where.strip():
        raise PublishersSpecError(f"{spec!r}: no module or file before ':' (module:NAME or file.py:NAME)")
    if not where or (len(where) == 1 and os.sep == "\\"):  # no colon, or a drive letter
        where, attribute = spec, "PUBLISHERS"
    if not attribute.isidentifier():
        raise PublishersSpecError(
            f"{spec!r}: {attribute!r} is not a Python name (module:NAME or file.py:NAME)"
        )
    module = _load_module(where, spec)
    try:
        offer: object = getattr(module, attribute)
    except AttributeError:
        if getattr(module, "__file__", None) is None and Path(where).is_dir():  # a namespace package
            raise _directory(spec, where) from None
        raise PublishersSpecError(f"{spec!r}: {where} has no attribute {attribute!r}") from None
    if isinstance(offer, Mapping) or callable(offer):
        return offer
    raise PublishersSpecError(
        f"{spec!r}: {attribute} must be a mapping of names to Publishers or factories "
        f"(what rstreams.serve takes), got {type(offer).__name__}"
    )


def _directory(spec: str, where: str) -> PublishersSpecError:
    return PublishersSpecError(
        f"{spec!r}: {where!r} is a directory; give the .py file in it that holds the mapping "
        "(path/to/file.py:NAME)"
    )


def _load_module(where: str, spec: str) -> object:
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where)
        if path.is_dir():
            raise _directory(spec, where)
        if not path.is_file():
            raise PublishersSpecError(f"{spec!r}: no such file {where!r}")
        name = f"_rstreams_publishers_{path.stem}"  # never shadows a real module (json.py...)
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise PublishersSpecError(f"{spec!r}: cannot load {where!r} as Python")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            module_spec.loader.exec_module(module)
        except SystemExit as ended:
            del sys.modules[name]
            raise PublishersSpecError(_ended(spec, f"loading {where}", ended)) from None
        except Exception as failed:
            del sys.modules[name]
            raise PublishersSpecError(
                f"{spec!r}: loading {where} failed: {type(failed).__name__}: {failed}"
            ) from failed
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `module:NAME` is looked up from where the command runs
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as missing:
        if Path(where).is_file():  # README.md, pubs.txt: imported as the module README
            raise PublishersSpecError(
                f"{spec!r}: {where!r} is a file of this directory, but not a .py file; --publishers "
                "takes path/to/file.py:NAME or module:NAME"
            ) from None
        raise PublishersSpecError(f"{spec!r}: no module named {missing.name!r}") from None
    except SystemExit as ended:
        raise PublishersSpecError(_ended(spec, f"importing {where}", ended)) from None
    except Exception as failed:
        raise PublishersSpecError(
            f"{spec!r}: importing {where} failed: {type(failed).__name__}: {failed}"
        ) from failed


def _ended(spec: str, doing: str, ended: SystemExit) -> str:
    """What to say when the publishers' module ends the process (``sys.exit``) while it loads."""
    called = "sys.exit()" if ended.code is None else f"sys.exit({ended.code!r})"
    return (
        f"{spec!r}: {doing} ended the process: it called {called} (raised SystemExit) while "
        "being loaded; a file given to --publishers defines publishers, and code that runs it "
        'as a script belongs under `if __name__ == "__main__":`'
    )
