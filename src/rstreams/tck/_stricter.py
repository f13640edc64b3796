"""Every place this port is stricter than the JVM TCK (v1.0.4), with the rule and why.

One :class:`Stricter` entry per difference. ``docs/make_tck_docs.py`` renders the list
into docs/tck.md, and a test checks that every case an entry names exists, so the list
and the code cannot drift apart. An entry with no cases applies to every case of the
verification it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rstreams.tck._subscriber_support import SERIAL_EARLY_CALLS, SERIAL_WINDOW
from rstreams.tck._test_subscribers import GIVE_WAY_SIGNALS
from rstreams.tck._watchdog import MIN_BLOCKED

__all__ = ["STRICTER", "Stricter"]


@dataclass(frozen=True, slots=True)
class Stricter:
    """One difference: where (cases, by Python name), the rule, what is checked, and why."""

    verification: str
    cases: tuple[str, ...]
    rule: str
    what: str
    why: str


_SPEC109_ON_SUBSCRIBE: Final = "required_spec109_must_issue_on_subscribe_for_non_null_subscriber"

STRICTER: Final[tuple[Stricter, ...]] = (
    Stricter(
        "PublisherVerification",
        (),
        "1.1",
        "The TCK's subscribers record every element beyond the demand they signalled, in every case.",
        "The JVM TCK checks the count only where a case looks for it, so over-delivery elsewhere passes.",
    ),
    Stricter(
        "PublisherVerification",
        (),
        "1.3",
        "The subscriber most cases use (ManualSubscriber) fails when a signal arrives on one thread while"
        f" another thread is still inside one; for its first {GIVE_WAY_SIGNALS} signals before a cancel"
        " it gives way to other threads (sleep(0)) while inside, so a publisher that signals from a"
        " pool without serialising is caught in the required cases, with the stochastic case skipped.",
        "The JVM TCK checks rule 1.3 only in the stochastic case, which asks for one element at a time"
        " from inside onNext and which implementations may skip.",
    ),
    Stricter(
        "PublisherVerification",
        (),
        "1.4",
        "An on_error that carries no exception instance (a message string, an exception class) fails"
        " the case: the subscriber most cases use (ManualSubscriber) and the failed-publisher probe"
        " check what they get.",
        "The JVM's types make it impossible (onError takes a Throwable); Python's do not, and the"
        " Subscriber that reads the error's type or traceback breaks.",
    ),
    Stricter(
        "PublisherVerification",
        (),
        "1.7",
        "Every subscriber the TCK makes, in every case and on empty streams too, fails on any signal"
        " after a terminal one.",
        "In the JVM TCK only an optional case sees a second on_complete of an empty publisher, and it"
        " reports a skip.",
    ),
    Stricter(
        "PublisherVerification",
        (_SPEC109_ON_SUBSCRIBE,),
        "1.9",
        "Two subscribers subscribe to the empty publisher; subscribe() must return normally for both"
        " (a publisher that serves one subscriber rejects the second with on_subscribe, then on_error).",
        "A publisher whose subscribe() raises on a second subscriber is otherwise seen only by optional"
        " cases, which skip.",
    ),
    Stricter(
        "all",
        (),
        "1.9, 3.15, 3.16",
        "Every call the TCK makes into the implementation must return normally: subscribe() (1.9),"
        " cancel() (3.15), request() (3.16); a raise fails naming the rule, the exception's type and text.",
        "The JVM TCK lets most such exceptions escape as they are, without the rule.",
    ),
    Stricter(
        "PublisherVerification",
        ("required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",),
        "3.8",
        "A subscriber requests 1 then 2 inside on_subscribe and again inside its first on_next: all 6"
        " must arrive. The 6 elements requested by the first subscriber must arrive too (3.2).",
        "With a synchronous publisher every JVM request arrives while no demand is outstanding, so a"
        " publisher that replaces outstanding demand instead of adding to it passes.",
    ),
    Stricter(
        "PublisherVerification",
        ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",),
        "3.12, 1.8",
        "A cancel made inside on_next, with 2**63-1 requested from the longest stream allowed (up to"
        " 2**31-1 elements), must stop the stream: trailing elements may come, a flow still going after"
        " the default timeout fails with the count. So must request(2**63-1) then cancel() made inside"
        " on_subscribe.",
        "No JVM case checks a cancel made from within on_next or on_subscribe; a publisher that loses it"
        " (one that sets its subscription up only after on_subscribe returned) floods.",
    ),
    Stricter(
        "PublisherVerification",
        ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",),
        "2.13, 1.8",
        "A subscriber raises from inside on_next #3 with 2**63-1 requested: the publisher must take it as a"
        " cancel. Trailing elements may come (and the raise may travel back out of a synchronous"
        " request()); a flow still going after the default timeout fails (rstreams' own report of that"
        " raise, rstreams.errors.report_unhandled, is muted meanwhile). A flood that also swallows"
        " StreamAbandoned is ended by the watchdog and, once its case is over and it swallowed another"
        " 10,000, halted by a SystemExit from on_next.",
        "No JVM case makes a Subscriber raise, so a publisher that catches the raise and delivers on passes.",
    ),
    Stricter(
        "PublisherVerification",
        ("required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",),
        "3.12",
        "After the subscriber cancels inside on_next #11, the stream must stop, as above.",
        "The JVM case cancels there but never looks at what comes after.",
    ),
    Stricter(
        "all",
        (),
        "3.12",
        "A stream that delivers more than 10,000 elements after the TCK cancelled it (or after its case"
        " ended) is a runaway: a failure with the count, and every further on_next raises StreamAbandoned"
        " so that the publisher's loop unwinds.",
        "An abandoned runaway otherwise keeps a core busy for the rest of the process and slows every"
        " later case.",
    ),
    Stricter(
        "all",
        (),
        "any",
        "An optional case that finds a *required* rule broken (a failure citing another rule than its"
        " own) reports the outcome violated, which fails the run, instead of a skip.",
        "The JVM TCK turns everything that goes wrong in an optional case into a skip, and drops failures"
        " recorded on other threads silently.",
    ),
    Stricter(
        "PublisherVerification",
        ("stochastic_spec103_must_signal_on_methods_sequentially",),
        "3.2, 1.5",
        "A stream that stalls is reported at once by the rule its stall breaks (a request made inside"
        " on_next not served: 3.2; no on_complete after the last element: 1.5); the wait lasts one"
        " timeout per step while elements keep coming.",
        "The JVM case waits ten timeouts and then reports rule 1.3, which the stall does not break.",
    ),
    Stricter(
        "IdentityProcessorVerification",
        ("required_spec105_must_signal_on_complete_when_finite_stream_terminates",),
        "1.5",
        "A processor whose upstream completed before any subscriber arrived passes on_complete to a"
        " subscriber that arrives later.",
        "No JVM case creates the situation: it always subscribes before an asynchronous upstream can end.",
    ),
    Stricter(
        "IdentityProcessorVerification",
        ("must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream",),
        "1.4",
        "A processor whose upstream failed before any subscriber arrived passes on_error to a subscriber"
        " that arrives later.",
        "As for completion: the JVM TCK never lets the upstream end first.",
    ),
    Stricter(
        "SubscriberWhiteboxVerification",
        (
            "required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives"
            "_another_on_subscribe_signal",
        ),
        "2.5",
        "Cancelling the original subscription instead of (or besides) the new one also fails.",
        "The JVM case only waits for a cancel of the new one.",
    ),
    Stricter(
        "SubscriberBlackboxVerification",
        (
            "required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and"
            "_receives_another_on_subscribe_signal",
        ),
        "2.5",
        "Cancelling the original subscription fails, and so does any request() on the second one.",
        "A subscriber that requests first and checks for a duplicate afterwards breaks the rule.",
    ),
    Stricter(
        "SubscriberBlackboxVerification",
        ("required_spec201_blackbox_must_signal_demand_via_subscription_request",),
        "2.1",
        "Up to min(n, 512) requested elements are sent before on_complete.",
        "The JVM emit loop tests cancellation the wrong way round and so sends no element at all.",
    ),
    Stricter(
        "SubscriberWhiteboxVerification",
        ("required_spec201_must_signal_demand_via_subscription_request",),
        "3.10, 2.13",
        "The element answering the puppet's demand is sent from inside the Subscriber's request(n),"
        " on its stack, as rule 3.10 allows; an on_next that then raises fails the case. A processor"
        " verified as a Subscriber gets the same.",
        "The JVM TCK's publishers never signal inside request(), so a Subscriber (or processor) that"
        " breaks when one does passes every case.",
    ),
    Stricter(
        "SubscriberBlackboxVerification",
        ("required_spec201_blackbox_must_signal_demand_via_subscription_request",),
        "3.10, 2.13",
        "The first element is sent from inside the Subscriber's first request(n), on its stack, as rule"
        " 3.10 allows; an on_next that then raises (the subscription not stored yet, demand counted only"
        " after request() returned) fails the case.",
        "The JVM TCK's publishers never signal inside request(), so a Subscriber that breaks when one"
        " does passes every case.",
    ),
    Stricter(
        "SubscriberBlackboxVerification",
        (
            "required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding"
            "_request_call",
            "required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_with_preceding"
            "_request_call",
        ),
        "2.9, 2.10",
        "The case ends by checking that nothing was recorded on another thread.",
        "The JVM cases have no final check, so an error raised back into the publisher passes.",
    ),
    Stricter(
        "PublisherVerification",
        (),
        "1.1, 1.7, 2.12",
        "A subscriber whose case has ended still checks what reaches it: an element beyond its demand,"
        " a signal after a terminal one, a second on_subscribe. The next case of the same verification"
        " fails on such a breach, naming the case whose stream it was; at the end of a run (run_cases,"
        " verify_publisher) a breach no later case found fails the case whose stream it was, and under"
        " pytest the class's teardown_class fails on it. A breach committed after the run returned fails"
        " its case in report.recheck(), called once the publisher has stopped; under pytest, one"
        " committed after the class was torn down fails the end of the session, naming class, case and rule.",
        "A black-box wait is finite: a stream that breaks a rule only after its case stopped watching"
        " (a second on_complete 150 ms later) passes every JVM case.",
    ),
    Stricter(
        "SubscriberBlackboxVerification",
        (),
        "3.9",
        "Every request(n) the Subscriber under test makes is checked for n > 0 as it is made, not only the"
        " request a case waits for (the same holds for a Subscriber under the whitebox verification and for"
        " a processor's requests upstream).",
        "The JVM TCK looks at n only in expectRequest, so a Subscriber that asks for 1 and then request(0)"
        " after each element passes.",
    ),
    Stricter(
        "PublisherVerification",
        (
            "required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them"
            "_rejection_must_trigger_on_error_after_on_subscribe",
        ),
        "1.6, 3.6, 3.7, 3.15, 3.16, 1.7",
        "After the failed publisher's on_error, request(10) and cancel() on its subscription must return"
        " normally and signal nothing: the subscription counts as cancelled.",
        "The JVM case stops at on_error, so a failed publisher that signals on_error again on every request"
        " (or raises) passes; its spec107 checks the same only after on_complete.",
    ),
    Stricter(
        "PublisherVerification",
        ("required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled",),
        "3.15, 3.7",
        "After on_complete (and the request(10) that must do nothing), cancel() must return normally.",
        "No JVM case cancels a completed subscription, so a cancel() that raises 'already completed' passes.",
    ),
    Stricter(
        "SubscriberWhiteboxVerification",
        (),
        "2.7",
        "The Subscription handed to the Subscriber under test fails a request() or cancel() that enters"
        " while another call is still inside, from any thread, naming both calls and their threads. Its"
        f" first {SERIAL_EARLY_CALLS} calls, and every call once a second thread has called, stay inside"
        f" {SERIAL_WINDOW * 1000:g} ms longer, so unserialised calls are likely to meet. The same holds for"
        " the blackbox verification and for a processor's calls upstream.",
        "The JVM TCK lists rule 2.7 as untested: a Subscriber that requests from two threads without"
        " serialising passes.",
    ),
    Stricter(
        "all",
        (),
        "1.9, 2.2, 3.2, 3.4, 3.5",
        "A case whose thread sits blocked inside the implementation under test for the default timeout"
        f" (at least {MIN_BLOCKED * 1000:g} ms), with no signal, no CPU time and no step of its own, fails"
        " at once naming the rule, the call the TCK was making and the implementation's frames: a"
        " Subscriber blocked in a signal (2.2; the message says when the signal came from inside its own"
        " request(), the deadlock of a lock held around request() and taken again in on_next), a"
        " subscribe() (1.9), a request() (3.4; 3.2 when called from inside a signal the implementation"
        " was delivering) or a cancel() (3.5) that does not return.",
        "The JVM TCK has no limit on a call into the implementation: a deadlocked Subscriber or Publisher"
        " hangs the run, and a plain case timeout (120 s) would say only that the case overran.",
    ),
)
