"""Observability: what a server's connections and streams are doing, and where they wait.

``serve(url, publishers, metrics=True)`` counts (``server.metrics()`` returns the numbers);
``metrics="127.0.0.1:9464"`` also serves them at ``http://127.0.0.1:9464/metrics`` in
Prometheus' text format (needs ``prometheus_client``: ``pip install 'rstreams[metrics]'``);
an address it cannot bind raises :class:`MetricsExpositionError`.
Every metric is listed in docs/observability.md. Off (the default), nothing is counted: the
connections' hook is ``None`` and costs one test on the paths that would count.
"""

from __future__ import annotations

from rstreams._exports import claim as _claim
from rstreams.observe._errors import MetricsExpositionError as MetricsExpositionError
from rstreams.observe._errors import MetricsOffError as MetricsOffError
from rstreams.observe._errors import StatsIntervalError as StatsIntervalError
from rstreams.observe._metrics import ConnectionObserver as ConnectionObserver
from rstreams.observe._metrics import ServerMetrics as ServerMetrics
from rstreams.observe._metrics import StreamObserver as StreamObserver
from rstreams.observe._metrics import goodbye_reason as goodbye_reason
from rstreams.observe._metrics import stream_error_reason as stream_error_reason
from rstreams.observe._replay import replay_metrics as replay_metrics

__all__ = [
    "ConnectionObserver",
    "MetricsExpositionError",
    "MetricsOffError",
    "ServerMetrics",
    "StatsIntervalError",
    "StreamObserver",
    "goodbye_reason",
    "replay_metrics",
    "stream_error_reason",
]

_claim(__name__, __all__, globals())
