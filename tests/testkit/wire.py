"""What the wire tests share: a connected pair in memory, three-way feeding, strategies."""

from __future__ import annotations

from hypothesis import strategies as st

from rstreams.wire import (
    Cancel,
    ClientHello,
    Connection,
    ConnectionConfig,
    Event,
    Frame,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire._parser import FrameParser, Parsed

U64 = 2**64 - 1


def parser(**limits: int) -> FrameParser:
    """A parser with generous default limits."""
    args = {"max_element_size": 1 << 20, "max_string_length": 1 << 16, "max_extensions": 64}
    args.update(limits)
    return FrameParser(
        max_element_size=args["max_element_size"],
        max_string_length=args["max_string_length"],
        max_extensions=args["max_extensions"],
    )


def feed_three_ways(data: bytes, expected: list[Frame], sizes: dict[int, int] | None = None) -> None:
    """Parse ``data`` whole, one byte at a time, and with trailing bytes; all must give ``expected``."""
    whole = parser()
    whole.element_sizes.update(sizes or {})
    assert whole.feed(data) == expected
    assert whole.error is None and whole.buffered == 0 and whole.eof() is None

    bytewise = parser()
    bytewise.element_sizes.update(sizes or {})
    got: list[Parsed] = []
    for i in range(len(data)):
        got += bytewise.feed(data[i : i + 1])
    assert got == expected
    assert bytewise.error is None and bytewise.buffered == 0

    trailing = parser()
    trailing.element_sizes.update(sizes or {})
    extra = encode(ClientHello())[:2]  # the start of another frame
    assert trailing.feed(data + extra) == expected
    assert trailing.buffered == len(extra) and trailing.error is None
    assert trailing.eof() is not None


class ConnectionPair:
    """A client and a server joined in memory; :meth:`pump` moves bytes until both are quiet."""

    def __init__(
        self, client_config: ConnectionConfig | None = None, server_config: ConnectionConfig | None = None
    ) -> None:
        self.client = Connection(Side.CLIENT, client_config)
        self.server = Connection(Side.SERVER, server_config)
        self.pump()
        self.client_events: list[Event] = []
        self.server_events: list[Event] = []
        hello_c = self.client.events_received()
        hello_s = self.server.events_received()
        assert [type(e) for e in hello_c] == [ServerHello]
        assert [type(e) for e in hello_s] == [ClientHello]

    def pump(self) -> None:
        for _ in range(10_000):
            moved = False
            for src, dst in ((self.client, self.server), (self.server, self.client)):
                while src.has_data_to_send:
                    moved = True
                    for chunk in src.data_to_send():
                        if dst.state.name != "CLOSED":
                            dst.receive_data(chunk)
            if not moved:
                return
        raise AssertionError("pump did not settle")

    def events(self) -> tuple[list[Event], list[Event]]:
        """Pump, then (client events, server events) since the last call."""
        self.pump()
        return self.client.events_received(), self.server.events_received()

    def open(self, sid: int = 1, *, demand: int = 0, element_size: int = 0, name: str = "p") -> None:
        """Client subscribes with ``sid``; server accepts with onSubscribe."""
        self.client.send(Subscribe(publisher=name, subscriber=sid, initial_demand=demand))
        self.pump()
        assert self.server.events_received() == [
            Subscribe(publisher=name, subscriber=sid, initial_demand=demand)
        ]
        self.server.send(OnSubscribe(subscriber=sid, element_size=element_size))
        self.pump()
        assert self.client.events_received() == [OnSubscribe(subscriber=sid, element_size=element_size)]


def connected(side: Side = Side.SERVER, config: ConnectionConfig | None = None) -> Connection:
    """A connection that has received the peer's hello and whose output/events are drained."""
    conn = Connection(side, config)
    hello = ClientHello() if side is Side.SERVER else ServerHello()
    conn.receive_data(encode(hello))
    conn.data_to_send()
    conn.events_received()
    return conn


def wire(*frames: Frame, element_size: int = 0) -> bytes:
    return b"".join(encode(f, element_size=element_size) for f in frames)


ids = st.integers(0, U64)
small_ids = st.integers(0, 300)
uints = st.integers(0, U64)
texts = st.text(max_size=40)
blobs = st.binary(max_size=300)


@st.composite
def packed(draw: st.DrawFn) -> OnNextPacked:
    size = draw(st.integers(1, 16))
    count = draw(st.integers(1, 8))
    return OnNextPacked(
        subscriber=draw(ids),
        count=count,
        elements=draw(st.binary(min_size=size * count, max_size=size * count)),
    )


frames_without_size = st.one_of(
    st.builds(ClientHello, extensions=st.lists(uints, max_size=5).map(tuple)),
    st.builds(ServerHello, extensions=st.lists(uints, max_size=5).map(tuple)),
    st.builds(Goodbye, reason=texts),
    st.builds(Subscribe, publisher=texts, subscriber=ids, initial_demand=uints),
    st.builds(Request, subscriber=ids, demand=uints),
    st.builds(Cancel, subscriber=ids),
    st.builds(OnSubscribe, subscriber=ids, element_size=st.just(0)),
    st.builds(OnNext, subscriber=ids, element=blobs),
    st.builds(OnNextPart, subscriber=ids, element_id=uints, data=blobs),
    st.builds(OnNextLastPart, subscriber=ids, element_id=uints, data=blobs),
    st.builds(OnComplete, subscriber=ids),
    st.builds(OnError, subscriber=ids, error=texts),
)
"""Every frame whose encoding does not depend on an elementSize (onSubscribe keeps it 0). Hellos
are version 0: another version's hello ends at its version byte (§4.2), whatever follows."""
