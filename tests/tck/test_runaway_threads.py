"""A runaway on a thread of the implementation's own that is not a daemon thread: the case fails,
the thread is ended, and the process exits.

The publishers below deliver from an executor's worker (``ThreadPoolExecutor``, which joins
its workers at exit) or from a plain non-daemon thread (which Python joins at exit), and
treat whatever ``on_next`` raises as nothing (``except Exception: pass``); the broken ones
also see a ``cancel()`` only once the demand is used up. Such a stream swallows the
``StreamAbandoned`` the TCK raises and would deliver for good, and the process could not
exit. The TCK fails the case naming the rule and the thread, and once the case is over
raises ``SystemExit`` from ``on_next``, which ends the loop. Run in a child interpreter,
whose exit is the point; the correct twins pass in-process.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest

from rstreams.api import Publisher
from testkit import patience
from testkit.recording import WAIT

ROOT = Path(__file__).resolve().parents[2]

PUBLISHERS = """
import concurrent.futures
import threading

from rstreams.api import Publisher, Subscription


class _Delivery(Subscription):
    def __init__(self, subscriber, elements, honours_cancel):
        self.subscriber = subscriber
        self.elements = elements
        self.honours_cancel = honours_cancel
        self.wake = threading.Condition()
        self.demand = 0
        self.cancelled = False

    def request(self, n):
        with self.wake:
            self.demand = min(self.demand + max(n, 0), 2**63 - 1)
            self.wake.notify()

    def cancel(self):
        with self.wake:
            self.cancelled = True
            self.wake.notify()

    def run(self):
        self.subscriber.on_subscribe(self)
        sent = 0
        while sent < self.elements:
            with self.wake:
                self.wake.wait_for(lambda: self.demand > 0 or self.cancelled)
                if self.cancelled and (self.honours_cancel or self.demand == 0):
                    return  # broken: a cancel is seen only once the demand is used up
                self.demand -= 1
            try:
                self.subscriber.on_next(sent)
            except Exception:  # a raise from on_next: taken as a cancel only when honoured
                if self.honours_cancel:
                    return
            sent += 1
        self.subscriber.on_complete()


class OnAnExecutor(Publisher):
    executor = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="impl-pool")
    honours_cancel = False

    def __init__(self, elements):
        self.elements = elements

    def subscribe(self, subscriber):
        delivery = _Delivery(subscriber, self.elements, self.honours_cancel)
        self.executor.submit(delivery.run)


class OnItsThread(OnAnExecutor):
    def subscribe(self, subscriber):
        delivery = _Delivery(subscriber, self.elements, self.honours_cancel)
        threading.Thread(target=delivery.run, name="impl-own", daemon=False).start()
"""

SCRIPT = """
from rstreams.tck import PublisherVerification, TestEnvironment
from rstreams.tck._registry import run_cases


class Verify(PublisherVerification):
    def __init__(self, cls):
        self.cls = cls

    def create_publisher(self, elements):
        return self.cls(elements)

    def create_failed_publisher(self):
        return None

    def create_env(self):  # time enough for 10,001 elements after the cancel, also on a loaded machine,
        # and a quiet window (which the flood ends early) that a starved flooding thread does not pass
        return TestEnvironment(default_timeout=10.0, default_no_signals_timeout=1.0)


for cls in (OnAnExecutor, OnItsThread):
    print(run_cases(Verify(cls), [CASE]).results[0].message)
    print("--")
print("the run ended")
"""

SPEC312 = "required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling"


@pytest.mark.timeout(90)
def test_a_runaway_on_a_non_daemon_thread_fails_and_the_process_exits() -> None:
    """Both cases fail with the runaway's rule, naming the thread (which Python, or the executor,
    waits for at exit); the process then exits by itself (the TCK once slowed such a stream to 20
    elements a second, for good, and the process never exited)."""
    script = PUBLISHERS + f"\nCASE = {SPEC312!r}\n" + textwrap.dedent(SCRIPT)
    result = patience.run(
        [sys.executable, "-c", script],
        80,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == 0, result.stderr
    executor, own, rest = result.stdout.split("\n--\n")
    for message, thread in ((executor, "impl-pool_0"), (own, "impl-own")):
        assert message.startswith("rule 3.12: 10001 elements arrived after cancel()"), result.stdout
        assert f"the stream runs on the implementation's thread {thread!r}" in message, message
        assert "the TCK ends that thread with SystemExit from on_next" in message, message
    assert "'impl-own' (not a daemon thread: Python waits for it at exit)" in own, own
    assert rest.strip() == "the run ended", result.stdout
    assert "parked" not in result.stderr, result.stderr


def test_the_twins_that_honour_cancel_pass() -> None:
    """The same publishers, taking a cancel and a raise from on_next as the end: spec312 passes."""
    names: dict[str, Any] = {}
    exec(compile(PUBLISHERS, "publishers", "exec"), names)  # the child's publishers, in-process
    from rstreams.tck import PublisherVerification, TestEnvironment
    from rstreams.tck._registry import run_cases

    class Verify(PublisherVerification):
        def __init__(self, cls: type) -> None:
            self.cls = cls

        def create_publisher(self, elements: int) -> Publisher[int]:
            return cast(Publisher[int], self.cls(elements))

        def create_failed_publisher(self) -> None:
            return None

        def create_env(self) -> TestEnvironment:  # signals from threads of their own: WAIT for each
            return TestEnvironment(default_timeout=WAIT, default_no_signals_timeout=0.03)

    for name in ("OnAnExecutor", "OnItsThread"):
        twin = type(name, (names[name],), {"honours_cancel": True})
        result = run_cases(Verify(twin), [SPEC312]).results[0]
        assert result.outcome == "passed", (name, result)
