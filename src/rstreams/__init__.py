"""rstreams: Reactive Streams for Python.

The specification's four interfaces (:mod:`rstreams.api`), building blocks that obey
its rules (:class:`Flow` and the sources below), a TCK (:mod:`rstreams.tck`), and the
RS.io network protocol (:mod:`rstreams.wire`, :mod:`rstreams.net`).
"""

from __future__ import annotations

from rstreams.api import Processor as Processor
from rstreams.api import Publisher as Publisher
from rstreams.api import Subscriber as Subscriber
from rstreams.api import Subscription as Subscription
from rstreams.demand import UNBOUNDED as UNBOUNDED
from rstreams.errors import InvalidDemandError as InvalidDemandError
from rstreams.errors import OverflowStrategyError as OverflowStrategyError
from rstreams.errors import ReactiveStreamsError as ReactiveStreamsError
from rstreams.errors import set_unhandled_error_hook as set_unhandled_error_hook
from rstreams.flow._async_source import from_async_iterable as from_async_iterable
from rstreams.flow._flow import Flow as Flow
from rstreams.flow._flow import from_publisher as from_publisher
from rstreams.flow._iterable import empty as empty
from rstreams.flow._iterable import error as error
from rstreams.flow._iterable import from_iterable as from_iterable
from rstreams.flow._iterable import just as just
from rstreams.flow._iterable import range_ as range  # noqa: A004 - mirrors the builtin on purpose
from rstreams.flow._merge import merge as merge
from rstreams.flow._multicast import MulticastProcessor as MulticastProcessor
from rstreams.flow._push import OverflowStrategy as OverflowStrategy
from rstreams.flow._push import PushSource as PushSource
from rstreams.flow._push import from_push as from_push
from rstreams.flow._rx import from_observable as from_observable
from rstreams.flow._rx import to_observable as to_observable
from rstreams.flow._sinks import SinkResult as SinkResult
from rstreams.flow._time import interval as interval
from rstreams.flow._time import timer as timer
from rstreams.net import Resume as Resume
from rstreams.net import Token as Token
from rstreams.net import UserPassword as UserPassword
from rstreams.net import connect as connect
from rstreams.net import connect_pipe as connect_pipe
from rstreams.net import serve as serve

__version__ = "0.1.0"

__all__ = [
    "UNBOUNDED",
    "Flow",
    "InvalidDemandError",
    "MulticastProcessor",
    "OverflowStrategy",
    "OverflowStrategyError",
    "Processor",
    "Publisher",
    "PushSource",
    "ReactiveStreamsError",
    "Resume",
    "SinkResult",
    "Subscriber",
    "Subscription",
    "Token",
    "UserPassword",
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
    "range",
    "serve",
    "set_unhandled_error_hook",
    "timer",
    "to_observable",
]
