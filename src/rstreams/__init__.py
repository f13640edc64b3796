"""rstreams: Reactive Streams for Python.

The specification's four interfaces (:mod:`rstreams.api`), building blocks that obey
its rules (:class:`Flow` and the sources below), a TCK (:mod:`rstreams.tck`), and the
RS.io network protocol (:mod:`rstreams.wire`, :mod:`rstreams.net`).

Importing ``rstreams`` (or a subpackage such as the sans-I/O :mod:`rstreams.wire`) loads
only the interfaces, the errors and the demand arithmetic. Everything else named here is
imported on first use (PEP 562), so ``import rstreams.wire`` never loads asyncio, ssl or
socket, and ``rstreams.connect`` loads the network layer only when it is first touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rstreams._exports import claim as _claim
from rstreams.api import Processor as Processor
from rstreams.api import Publisher as Publisher
from rstreams.api import Subscriber as Subscriber
from rstreams.api import Subscription as Subscription
from rstreams.demand import UNBOUNDED as UNBOUNDED
from rstreams.errors import InvalidDemandError as InvalidDemandError
from rstreams.errors import OverflowStrategyError as OverflowStrategyError
from rstreams.errors import ReactiveStreamsError as ReactiveStreamsError
from rstreams.errors import set_unhandled_error_hook as set_unhandled_error_hook

if TYPE_CHECKING:
    from rstreams.flow._element import NoSuchElementError as NoSuchElementError
    from rstreams.flow._flow import Flow as Flow
    from rstreams.flow._flow import GroupedFlow as GroupedFlow
    from rstreams.flow._flow import from_publisher as from_publisher
    from rstreams.flow._public import MulticastProcessor as MulticastProcessor
    from rstreams.flow._public import PushSource as PushSource
    from rstreams.flow._public import combine_latest as combine_latest
    from rstreams.flow._public import concat as concat
    from rstreams.flow._public import empty as empty
    from rstreams.flow._public import error as error
    from rstreams.flow._public import from_async_iterable as from_async_iterable
    from rstreams.flow._public import from_iterable as from_iterable
    from rstreams.flow._public import from_observable as from_observable
    from rstreams.flow._public import from_push as from_push
    from rstreams.flow._public import interval as interval
    from rstreams.flow._public import just as just
    from rstreams.flow._public import merge as merge
    from rstreams.flow._public import race as amb
    from rstreams.flow._public import race as race
    from rstreams.flow._public import range_ as range  # noqa: A004 - mirrors the builtin on purpose
    from rstreams.flow._public import timer as timer
    from rstreams.flow._public import zip_ as zip  # noqa: A004 - mirrors the builtin on purpose
    from rstreams.flow._push import OverflowStrategy as OverflowStrategy
    from rstreams.flow._rx import to_observable as to_observable
    from rstreams.flow._sinks import SinkResult as SinkResult
    from rstreams.flow._timeops import StreamTimeoutError as StreamTimeoutError
    from rstreams.net import Resume as Resume
    from rstreams.net import Token as Token
    from rstreams.net import UserPassword as UserPassword
    from rstreams.net import connect as connect
    from rstreams.net import connect_pipe as connect_pipe
    from rstreams.net import serve as serve

__version__ = "0.1.0"

# name -> (module, attribute) it is loaded from on first access
_LAZY: dict[str, tuple[str, str]] = {
    "Flow": ("rstreams.flow._flow", "Flow"),
    "GroupedFlow": ("rstreams.flow._flow", "GroupedFlow"),
    "MulticastProcessor": ("rstreams.flow._public", "MulticastProcessor"),
    "NoSuchElementError": ("rstreams.flow._element", "NoSuchElementError"),
    "OverflowStrategy": ("rstreams.flow._push", "OverflowStrategy"),
    "PushSource": ("rstreams.flow._public", "PushSource"),
    "SinkResult": ("rstreams.flow._sinks", "SinkResult"),
    "StreamTimeoutError": ("rstreams.flow._timeops", "StreamTimeoutError"),
    "amb": ("rstreams.flow._public", "race"),
    "combine_latest": ("rstreams.flow._public", "combine_latest"),
    "concat": ("rstreams.flow._public", "concat"),
    "empty": ("rstreams.flow._public", "empty"),
    "error": ("rstreams.flow._public", "error"),
    "from_async_iterable": ("rstreams.flow._public", "from_async_iterable"),
    "from_iterable": ("rstreams.flow._public", "from_iterable"),
    "from_observable": ("rstreams.flow._public", "from_observable"),
    "from_publisher": ("rstreams.flow._flow", "from_publisher"),
    "from_push": ("rstreams.flow._public", "from_push"),
    "interval": ("rstreams.flow._public", "interval"),
    "just": ("rstreams.flow._public", "just"),
    "merge": ("rstreams.flow._public", "merge"),
    "range": ("rstreams.flow._public", "range_"),
    "timer": ("rstreams.flow._public", "timer"),
    "to_observable": ("rstreams.flow._rx", "to_observable"),
    "race": ("rstreams.flow._public", "race"),
    "zip": ("rstreams.flow._public", "zip_"),
    "Resume": ("rstreams.net", "Resume"),
    "Token": ("rstreams.net", "Token"),
    "UserPassword": ("rstreams.net", "UserPassword"),
    "connect": ("rstreams.net", "connect"),
    "connect_pipe": ("rstreams.net", "connect_pipe"),
    "serve": ("rstreams.net", "serve"),
}


def __getattr__(name: str) -> Any:
    """Load a lazily exported name on first use, with the others of its subpackage.

    All names from the same subpackage (``rstreams.flow`` or ``rstreams.net``) are bound at
    once, and those defined in private modules report ``rstreams`` as their module.
    """
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'rstreams' has no attribute {name!r}")
    group = where[0].split(".")[1]
    loaded = {
        other: getattr(importlib.import_module(module), attr)
        for other, (module, attr) in _LAZY.items()
        if module.split(".")[1] == group
    }
    _claim(__name__, loaded, loaded)
    globals().update(loaded)
    return loaded[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "UNBOUNDED",
    "Flow",
    "GroupedFlow",
    "InvalidDemandError",
    "MulticastProcessor",
    "NoSuchElementError",
    "OverflowStrategy",
    "OverflowStrategyError",
    "Processor",
    "Publisher",
    "PushSource",
    "ReactiveStreamsError",
    "Resume",
    "SinkResult",
    "StreamTimeoutError",
    "Subscriber",
    "Subscription",
    "Token",
    "UserPassword",
    "amb",
    "combine_latest",
    "concat",
    "connect",
    "connect_pipe",
    "empty",
    "error",
    "from_async_iterable",
    "from_iterable",
    "from_observable",
    "from_publisher",
    "from_push",
    "interval",
    "just",
    "merge",
    "race",
    "range",
    "serve",
    "set_unhandled_error_hook",
    "timer",
    "to_observable",
    "zip",
]
