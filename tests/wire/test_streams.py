"""The stream table (wire/_streams.py): verdicts for received signals, misuse for sent ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.errors import LocalProtocolError
from rstreams.wire import (
    DemandExceededError,
    RemoteInvalidDemandError,
    StreamState,
    StreamStateError,
    Subscribe,
)
from rstreams.wire._state import STREAM_TRANSITIONS, Signal
from rstreams.wire._streams import Stream, StreamTable, Violation, new_stream, step

UNBOUNDED = 2**63 - 1


def table(**limits: int) -> StreamTable:
    args = {"max_closed": 8, "max_subscriptions": 4, "max_name_length": 16} | limits
    return StreamTable(**args)


def subscribe(sid: int, demand: int = 0, name: str = "p") -> Subscribe:
    return Subscribe(publisher=name, subscriber=sid, initial_demand=demand)


def test_a_subscribe_opens_a_publishing_stream() -> None:
    """receive_subscribe returns the new stream with the initial demand as credit."""
    t = table()
    st = t.receive_subscribe(subscribe(3, demand=5))
    assert isinstance(st, Stream) and st.publishing and st.credit == 5 and st.state is StreamState.SUBSCRIBED
    assert t.publishing == {3: st}


def test_reusing_an_open_id_ends_the_connection() -> None:
    """A subscribe for an id still open is a violation of the whole connection (§5.3)."""
    t = table()
    t.receive_subscribe(subscribe(1))
    verdict = t.receive_subscribe(subscribe(1))
    assert isinstance(verdict, Violation) and verdict.stream is None
    assert isinstance(verdict.error, StreamStateError) and verdict.error.subscriber == 1


@pytest.mark.parametrize(
    ("frame", "limits", "words"),
    [
        (subscribe(9), {"max_subscriptions": 1}, "at most max_subscriptions=1 subscriptions"),
        (subscribe(9, name="x" * 17), {}, "longer than max_name_length=16 bytes"),
        (subscribe(9, demand=2**63), {}, "rule 3.9"),
    ],
)
def test_refusals_are_onerror_texts(frame: Subscribe, limits: dict[str, int], words: str) -> None:
    """Limits and a negative initialDemand refuse a subscribe (an onError text); the id counts as closed."""
    t = table(**limits)
    t.receive_subscribe(subscribe(1))
    refusal = t.receive_subscribe(frame)
    assert isinstance(refusal, str) and words in refusal
    assert 9 not in t.publishing
    assert t.send_terminal(9, Signal.ON_COMPLETE, "OnComplete") is None  # recently closed: quiet


def test_request_adds_credit_saturating_and_zero_ends_the_stream_only() -> None:
    """request(n) adds with a cap at 2**63-1; request(0) is a stream-scoped rule-3.9 violation."""
    t = table()
    st = t.receive_subscribe(subscribe(1, demand=UNBOUNDED - 1))
    assert t.receive_request(1, 5) is st and isinstance(st, Stream) and st.credit == UNBOUNDED
    verdict = t.receive_request(1, 0)
    assert isinstance(verdict, Violation) and verdict.stream is st
    assert isinstance(verdict.error, RemoteInvalidDemandError)
    assert t.receive_request(2, 1) is None  # unknown id: crossed our terminal, ignored


def test_cancel_closes_and_remembers_the_id() -> None:
    """A received cancel closes the stream (acknowledged by onComplete); later signals are quiet."""
    t = table()
    t.receive_subscribe(subscribe(1))
    st = t.receive_cancel(1)
    assert st is not None and st.state is StreamState.CLOSED and t.publishing == {}
    assert t.receive_cancel(1) is None
    assert t.send_elements(1, 1) is None


def test_ours_checks_the_state_table() -> None:
    """A publisher signal for an unknown id, or one the table does not allow, is a connection violation."""
    t = table()
    unknown = t.ours(5, Signal.ON_NEXT)
    assert isinstance(unknown, Violation) and unknown.stream is None
    t.send_subscribe(5, 0)
    early = t.ours(5, Signal.ON_NEXT)  # onNext before onSubscribe
    assert isinstance(early, Violation) and isinstance(early.error, StreamStateError)
    found = t.ours(5, Signal.ON_SUBSCRIBE)
    assert isinstance(found, tuple) and found[1] is StreamState.ACTIVE


def test_take_refuses_elements_beyond_demand() -> None:
    """take() consumes credit; more than granted is a DemandExceededError verdict; unbounded stays."""
    st = new_stream(1, False, 2)
    assert StreamTable.take(st, 2) is None and st.credit == 0
    verdict = StreamTable.take(st, 1)
    assert isinstance(verdict, Violation) and isinstance(verdict.error, DemandExceededError)
    endless = new_stream(2, False, UNBOUNDED)
    assert StreamTable.take(endless, 10**6) is None and endless.credit == UNBOUNDED


def test_sending_on_unknown_ids_is_misuse_but_recently_closed_ids_are_quiet() -> None:
    """Sent signals: an id that never existed raises; one that closed recently is dropped (rules 3.6/3.12)."""
    t = table()
    with pytest.raises(LocalProtocolError):
        t.send_request_or_cancel(1, Signal.REQUEST)
    t.send_subscribe(1, 0)
    with pytest.raises(LocalProtocolError):
        t.send_subscribe(1, 0)  # still in use
    assert t.send_request_or_cancel(1, Signal.CANCEL) is not None
    assert t.send_request_or_cancel(1, Signal.CANCEL) is None  # rule 3.7: no-op
    assert t.send_request_or_cancel(1, Signal.REQUEST) is None  # rule 3.6: no-op
    st = t.subscribing[1]
    t.close(st, Signal.ON_COMPLETE)
    assert t.send_request_or_cancel(1, Signal.REQUEST) is None


def test_recently_closed_ids_are_bounded() -> None:
    """Only the last max_closed ids are remembered; an older one is unknown again."""
    t = table(max_closed=2)
    for sid in range(3):
        t.receive_subscribe(subscribe(sid))
        t.receive_cancel(sid)
    with pytest.raises(LocalProtocolError):
        t.send_elements(0, 1)
    assert t.send_elements(1, 1) is None and t.send_elements(2, 1) is None


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(list(StreamState)), st.sampled_from(list(Signal)))
def test_step_is_the_table(state: StreamState, signal: Signal) -> None:
    """step() answers exactly what STREAM_TRANSITIONS says for every (state, signal) pair."""
    stream = new_stream(1, True, 0)
    stream.state = state
    assert step(stream, signal) is STREAM_TRANSITIONS.get((state, signal))


def test_the_table_makes_streams_as_new_stream_does() -> None:
    """The table builds its streams field by field (no call of new_stream on the hot path): every
    slot is set, to what ``new_stream(sid, publishing, credit)`` sets it."""
    t = table()
    received = t.receive_subscribe(subscribe(7, 3))
    sent = t.send_subscribe(9, 5)
    assert isinstance(received, Stream)
    for made, publishing, sid, credit in ((received, True, 7, 3), (sent, False, 9, 5)):
        expected = new_stream(sid, publishing, credit)
        for name in Stream.__slots__:
            assert getattr(made, name) == getattr(expected, name), name
