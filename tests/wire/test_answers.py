"""``answers=True``: a request/response's answer read whole is one :class:`Answer` event.

It stands for the onSubscribe, onNext and onComplete events a core without the option
reports for the same bytes; every answer the core cannot take whole (a qualifier before it,
no demand, an id not ours, before the hello, ...) comes as those events, or the same
violation. The property below holds both cores equal on any mix of such input.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rstreams.wire import (
    Answer,
    Cancel,
    Connection,
    ConnectionConfig,
    Event,
    ExtensionMessage,
    OnComplete,
    OnError,
    OnNext,
    OnNextBatch,
    OnSubscribe,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire._content import encode_content_type
from rstreams.wire.extensions import CONTENT_TYPE, CONTENT_TYPES

CONFIG = ConnectionConfig(extensions=frozenset({CONTENT_TYPES.id}))
HELLO = encode(ServerHello(extensions=(CONTENT_TYPES.id,)))


def answer(sid: int, element: bytes) -> bytes:
    return (
        encode(OnSubscribe(subscriber=sid))
        + encode(OnNext(subscriber=sid, element=element))
        + encode(OnComplete(subscriber=sid))
    )


def flat(events: list[Event]) -> list[object]:
    """The events of a core without the options for the same input: answers and batches spelled out."""
    out: list[object] = []
    for event in events:
        if isinstance(event, Answer):
            sid = event.subscriber
            out += [OnSubscribe(subscriber=sid), OnNext(subscriber=sid, element=event.element)]
            out.append(OnComplete(subscriber=sid))
        elif isinstance(event, OnNextBatch):
            out += [OnNext(subscriber=event.subscriber, element=e) for e in event.elements]
        else:
            out.append(event)
    return out


def client(*, answers: bool) -> Connection:
    return Connection(Side.CLIENT, CONFIG, batch_on_next=answers, answers=answers)


def test_an_answer_read_whole_is_one_event_and_ends_the_subscription() -> None:
    core = client(answers=True)
    core.receive(HELLO)
    core.send(Subscribe(publisher="echo", subscriber=5, initial_demand=1))
    assert core.receive(answer(5, b"12345678")) == [Answer(5, b"12345678")]
    assert not core.id_in_use(5)
    core.send(Subscribe(publisher="echo", subscriber=5, initial_demand=1))  # the id is free again
    core.send(Subscribe(publisher="echo", subscriber=6, initial_demand=1))
    more = encode(OnSubscribe(subscriber=6))
    assert core.receive(answer(5, b"x") + more) == [Answer(5, b"x"), OnSubscribe(subscriber=6)]


def test_without_the_option_an_answer_is_three_events() -> None:
    core = Connection(Side.CLIENT, CONFIG, batch_on_next=True)
    core.receive(HELLO)
    core.send(Subscribe(publisher="echo", subscriber=5, initial_demand=1))
    assert flat(core.receive(answer(5, b"12345678"))) == flat([Answer(5, b"12345678")])
    assert type(core.receive(b"")) is list


def test_an_answer_with_a_qualifier_before_it_comes_as_its_events() -> None:
    core = client(answers=True)
    core.receive(HELLO)
    core.send(Subscribe(publisher="echo", subscriber=2, initial_demand=1))
    qualifier = encode(ExtensionMessage(type=CONTENT_TYPE, payload=encode_content_type(2, "text/plain")))
    events = core.receive(qualifier + answer(2, b"hi"))
    assert [type(e).__name__ for e in events] == ["Qualifier", "OnSubscribe", "OnNext", "OnComplete"]


_answer = st.builds(answer, st.sampled_from([1, 2, 3, 200]), st.binary(max_size=10))
_piece = st.one_of(
    _answer,
    _answer,
    _answer,
    st.builds(lambda sid: encode(OnSubscribe(subscriber=sid)), st.sampled_from([1, 2, 3])),
    st.builds(lambda sid: encode(OnComplete(subscriber=sid)), st.sampled_from([1, 2, 3])),
    st.builds(lambda sid: encode(OnError(subscriber=sid, error="no")), st.sampled_from([1, 2, 3])),
    st.builds(
        lambda sid, e: encode(OnNext(subscriber=sid, element=e)),
        st.sampled_from([1, 2, 3]),
        st.binary(max_size=4),
    ),
    st.builds(
        lambda sid: encode(ExtensionMessage(type=CONTENT_TYPE, payload=encode_content_type(sid, "a/b"))),
        st.sampled_from([1, 2, 3]),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    st.booleans(),
    st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.sampled_from([0, 1, 1, 2])), max_size=3),
    st.sets(st.sampled_from([1, 2, 3])),
    st.lists(_piece, max_size=8),
    st.lists(st.integers(0, 200), max_size=4),
)
@example(True, [(1, 1), (2, 1)], set(), [answer(1, b"a"), answer(2, b"b"), answer(1, b"c")], [])
@example(True, [(1, 1), (2, 2)], {1}, [answer(1, b"a"), answer(2, b"b")], [5, 20])
def test_a_core_with_answers_agrees_with_one_without(
    hello: bool, subscribes: list[tuple[int, int]], cancels: set[int], pieces: list[bytes], cuts: list[int]
) -> None:
    """Same events (answers spelled out), same bytes to send, same state, on any mix of answers,
    near misses and other signals, read in any pieces, before or after the hello."""
    cores = client(answers=True), client(answers=False)
    data = b"".join(pieces)
    for core in cores:
        if hello:
            core.receive(HELLO)
            for sid, demand in dict(subscribes).items():
                core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
            for sid in cancels & set(dict(subscribes)):
                core.send(Cancel(subscriber=sid))
            core.data_to_send()
    got: list[list[object]] = [[], []]
    for i, core in enumerate(cores):
        start = 0
        for cut in [*sorted(set(cuts)), len(data)]:
            if start < cut <= len(data) and core.state.name != "CLOSED":
                got[i] += flat(core.receive(data[start:cut]))
                start = cut
    with_answers, without = cores
    assert repr(got[0]) == repr(got[1])  # (errors compare by identity: by their repr)
    assert with_answers.state is without.state
    assert with_answers.subscriptions(publishing=False) == without.subscriptions(publishing=False)
    assert with_answers.data_to_send() == without.data_to_send()
