"""The rstreams TCK: checks that a Publisher, Subscriber or Processor obeys the specification.

A port of the Reactive Streams JVM TCK (v1.0.4): the same cases, named like the JVM's
methods in snake_case, with the same categories (required, optional, stochastic,
untested). Use it from pytest by subclassing a verification class whose name starts with
``Test``, or without pytest through the ``verify_*`` functions, which return a
:class:`Report`::

    from rstreams.tck import PublisherVerification, verify_publisher

    class TestMyPublisher(PublisherVerification):
        def create_publisher(self, elements):
            return my_publisher(elements)

    report = verify_publisher(my_publisher)
    assert report.ok, str(report)

A breach a stream commits after the run returned (a second ``on_complete`` from a thread
still running) is found by ``report.recheck()``, called once the implementation stopped;
under pytest, one committed after the class was torn down fails the end of the session.

This package does not import pytest. A skipped case raises :class:`SkipTest` (a
:class:`unittest.SkipTest`), a failed one :class:`TCKFailure` (an AssertionError) whose
message starts with the rule that broke first; an optional case that finds a required rule
broken raises :class:`RequiredRuleViolated`, reported with the outcome ``violated``.
The ``verify_*`` functions take one set of keyword-only options: ``env`` (the timeouts;
each case runs in a fresh copy), ``case_timeout``, ``skip_stochastic``, ``max_elements``,
and for processors ``buffer_size`` and ``max_supported_subscribers``.

Timeouts come from :class:`TestEnvironment` (environment variables
``RSTREAMS_TCK_DEFAULT_TIMEOUT_MS``, ``RSTREAMS_TCK_DEFAULT_NO_SIGNALS_TIMEOUT_MS``,
``RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS``, ``RSTREAMS_TCK_PUBLISHER_REFERENCE_GC_TIMEOUT_MS``);
a verification's ``create_env()`` may return one with other values. Each case runs in a
worker thread for at most ``case_timeout`` seconds (120 by default), so an implementation
that blocks fails its case, saying where, instead of hanging the run; one whose thread sits
blocked inside the implementation for the default timeout with nothing moving (a deadlock)
fails then, naming the rule, the call and the implementation's frames; a stream that keeps
flooding after the TCK cancelled it is stopped by :class:`StreamAbandoned` raised from
``on_next``. Where this port is stricter than the JVM TCK: docs/tck.md.
"""

from __future__ import annotations

from rstreams.tck._env import TestEnvironment as TestEnvironment
from rstreams.tck._processor import IdentityProcessorVerification as IdentityProcessorVerification
from rstreams.tck._processor import verify_processor as verify_processor
from rstreams.tck._publisher import PublisherVerification as PublisherVerification
from rstreams.tck._publisher import verify_publisher as verify_publisher
from rstreams.tck._registry import CaseResult as CaseResult
from rstreams.tck._registry import Report as Report
from rstreams.tck._registry import RequiredRuleViolated as RequiredRuleViolated
from rstreams.tck._registry import SkipTest as SkipTest
from rstreams.tck._registry import StreamAbandoned as StreamAbandoned
from rstreams.tck._registry import TCKFailure as TCKFailure
from rstreams.tck._registry import run_cases as run_cases
from rstreams.tck._subscriber import SubscriberBlackboxVerification as SubscriberBlackboxVerification
from rstreams.tck._subscriber import SubscriberWhiteboxVerification as SubscriberWhiteboxVerification
from rstreams.tck._subscriber import verify_subscriber_blackbox as verify_subscriber_blackbox
from rstreams.tck._subscriber import verify_subscriber_whitebox as verify_subscriber_whitebox
from rstreams.tck._test_subscribers import ManualSubscriber as ManualSubscriber

__all__ = [
    "CaseResult",
    "IdentityProcessorVerification",
    "ManualSubscriber",
    "PublisherVerification",
    "Report",
    "RequiredRuleViolated",
    "SkipTest",
    "StreamAbandoned",
    "SubscriberBlackboxVerification",
    "SubscriberWhiteboxVerification",
    "TCKFailure",
    "TestEnvironment",
    "run_cases",
    "verify_processor",
    "verify_publisher",
    "verify_subscriber_blackbox",
    "verify_subscriber_whitebox",
]

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
