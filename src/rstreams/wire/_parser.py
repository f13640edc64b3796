"""Incremental frame parser: bytes in, complete frames out (PROTOCOL.md §2, §3).

Theory of operation:

* :meth:`FrameParser.feed` takes whatever the transport read. When nothing is buffered
  the chunk is parsed in place (``bytes`` slicing gives each element its own ``bytes``
  with one copy); otherwise the chunk is appended to the remainder and parsed once the
  remainder has reached the length the pending frame declared (``_need``), so a large
  element arriving in many small reads is copied once, not once per read.
* Frames are committed only when complete; a partial frame at the end stays buffered.
* A large onNext cut by the end of a read is kept as its first piece until the rest arrives,
  then joined: one copy of its bytes in all when the read came in a :class:`ReadBuffer`
  that lends its bytes (the piece is a view; the reader reads into another buffer next),
  else two (the piece is copied out of the read first).
* Every length prefix is checked against its limit the moment it is read, before its
  bytes arrive, so a hostile prefix cannot make the parser wait for (and buffer) more
  than ``max_element_size`` / ``max_string_length`` bytes.
* ``OnNext`` has an inlined fast path: one- or two-byte varints for the id and the
  length (ids below 16384, elements below 16 KiB; anything else goes through
  ``decode_varint``, which also reports non-minimal encodings).
  With ``batch_on_next=True`` consecutive such frames for one subscriber become one
  :class:`~rstreams.wire.events.OnNextBatch`; runs of frames of equal length are found
  with strided slices (``data[pos:stop:stride]`` must repeat the 3-byte header) and cut
  with ``struct`` (``3x8s`` repeated), so no Python code runs per element.
* Framing depends on one thing the peer declared earlier: ``element_sizes`` maps
  subscriber ids to their ``OnSubscribe.element_size`` (§7), because an onNext on such
  a stream has no length prefix. The parser records it when it parses an
  ``OnSubscribe`` and forgets it at ``OnComplete``/``OnError``, so frames later in the
  same chunk parse correctly. It is framing state, owned here and read by nobody else:
  the connection keeps its own per-subscription state in its stream table
  (:mod:`rstreams.wire._streams`), whether it accepted the onSubscribe or dropped it.
* Every frame but the common onNext is decoded by one method per type, found in a
  table indexed by the type byte (:data:`_DECODERS`). subscribeMetadata (``0x94``, §18)
  has one of its own: a payload that the connection's last decoded one describes but for
  one value (a new traceparent per request) or the id is read as it arrives, and given as
  ``(subscriber, Metadata)`` instead of a frame (:attr:`FrameParser.metadata_window`).
* A request/response's answer, onSubscribe + one short onNext + onComplete of one
  subscriber back to back, is taken in one pass (:meth:`FrameParser._answer`): the same
  three frames as the decoders give, one call instead of six; with ``answers=True``, one
  :class:`~rstreams.wire.events.Answer` that stands for them (the connection checks it as
  those three frames, or spells it out into them).
* Malformed input stops parsing: the frames before the bad one are returned and
  :attr:`FrameParser.error` holds the :class:`~rstreams.errors.RemoteProtocolError`.
  The parser raises nothing for bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from struct import Struct
from typing import TypeAlias

from rstreams.errors import RemoteProtocolError
from rstreams.wire._errors import ExtensionError, FrameError, LimitExceededError
from rstreams.wire._metadata import Metadata, Remembered, nothing_remembered
from rstreams.wire._varint import Incomplete, decode_varint
from rstreams.wire.events import Answer, OnNextBatch
from rstreams.wire.extensions import BY_TYPE, SUBSCRIBE_METADATA
from rstreams.wire.frames import (
    FIRST_EXTENSION_TYPE,
    PROTOCOL_VERSION,
    ClientHello,
    ExtensionMessage,
    Frame,
    FrameType,
    Goodbye,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Request,
    ServerHello,
    Subscribe,
    make_cancel,
    make_on_complete,
    make_on_next,
    make_on_subscribe,
    make_request,
    make_subscribe,
)

__all__ = ["FrameParser", "HeldMetadata", "Parsed", "ReadBuffer"]

HeldMetadata: TypeAlias = tuple[int, Metadata]
"""A subscribeMetadata (§18.1) that :attr:`FrameParser.metadata_window` described, read as it
arrived: ``(subscriber, Metadata)``, what the connection holds for the subscribe it qualifies."""
Parsed: TypeAlias = Frame | OnNextBatch | Answer | HeldMetadata
"""What :meth:`FrameParser.feed` gives, in the order it was read: frames (§3); with
``batch_on_next``, an :class:`~rstreams.wire.events.OnNextBatch` for consecutive onNext frames
of one subscriber; with ``answers``, an :class:`~rstreams.wire.events.Answer` for a
request/response's three frames; and a :data:`HeldMetadata` for a subscribeMetadata the metadata
window read. The connection tells them apart by ``type()`` (a HeldMetadata is the one tuple)."""

_new = object.__new__
_set_subscriber = OnNext.__dict__["subscriber"].__set__  # slot descriptors skip the frozen check
_set_element = OnNext.__dict__["element"].__set__
_set_type = ExtensionMessage.__dict__["type"].__set__
_set_payload = ExtensionMessage.__dict__["payload"].__set__
_set_name = Subscribe.__dict__["publisher"].__set__
_set_requester = Request.__dict__["subscriber"].__set__
_set_failed = OnError.__dict__["subscriber"].__set__
_set_error = OnError.__dict__["error"].__set__
_set_requested = Request.__dict__["demand"].__set__
_set_sid = Subscribe.__dict__["subscriber"].__set__
_set_demand = Subscribe.__dict__["initial_demand"].__set__

_ON_NEXT = int(FrameType.ON_NEXT)
_CANCEL = int(FrameType.CANCEL)
_CLIENT_HELLO = int(FrameType.CLIENT_HELLO)
_GOODBYE = int(FrameType.GOODBYE)
_ON_COMPLETE = int(FrameType.ON_COMPLETE)
_ON_ERROR = int(FrameType.ON_ERROR)
_ON_NEXT_LAST_PART = int(FrameType.ON_NEXT_LAST_PART)
_ON_NEXT_PACKED = int(FrameType.ON_NEXT_PACKED)
_ON_NEXT_PART = int(FrameType.ON_NEXT_PART)
_ON_SUBSCRIBE = int(FrameType.ON_SUBSCRIBE)
_REQUEST = int(FrameType.REQUEST)
_REQUESTS_OF_ONE = tuple(Request(subscriber=sid, demand=1) for sid in range(0x80))
"""``request(1)`` on each subscriber id below 128, parsed once: frames are frozen values, so a
read of one of these hands out the same object each time (what building it cost was a good part
of the serving side's work for one element at a time)."""
_SERVER_HELLO = int(FrameType.SERVER_HELLO)
_SUBSCRIBE = int(FrameType.SUBSCRIBE)
_BYTE = [bytes((i,)) for i in range(256)]
_ON_NEXT_BYTE = _BYTE[_ON_NEXT]
_ACCEPTED = [make_on_subscribe(sid, 0) for sid in range(0x80)]
_COMPLETED = [make_on_complete(sid) for sid in range(0x80)]
"""The frames onSubscribe(sid, 0) and onComplete(sid) of the one-byte ids, made once: frames
are immutable, so every such message parses to the same object (as subscribeMetadata's do)."""
_HEAD = Struct("5B")
"""A large onNext's header, read at once: type, a one-byte id, a three-byte length."""
_ONE_MAX = 3 + 0x7F
"""The longest read that :meth:`FrameParser.feed` looks at as one frame (an onNext of 127 bytes)."""
_PENDING_MIN = 16 * 1024
"""An incomplete onNext at least this big is collected as pieces and joined once."""
_RUN_MIN, _RUN_MAX = 8, 4096
"""Bounds of how many equal frames one strided probe looks at: it grows while runs go on
and shrinks back when they break, so interleaved streams do not pay for long probes."""


_CUT = 64
_CUTTERS_MAX = 4096
_cutters: dict[int, Struct] = {}


def _cut(data: bytes, pos: int, count: int, hdr: int, length: int) -> list[bytes]:
    """The elements of ``count`` onNext frames with ``hdr``-byte headers and ``length``-byte
    elements at ``data[pos:]``: ``Struct("3x8s3x8s...").unpack_from`` makes them in C, 4-5x
    faster than slicing in a Python loop."""
    out: list[bytes] = []
    stride = hdr + length
    while count >= _CUT:
        out += _cutter(hdr, length, _CUT).unpack_from(data, pos)
        pos += _CUT * stride
        count -= _CUT
    if count:
        out += _cutter(hdr, length, count).unpack_from(data, pos)
    return out


_takers: dict[int, Callable[..., tuple[bytes]]] = {}


def _taker(length: int) -> Callable[..., tuple[bytes]]:
    """``unpack_from(buffer, offset)`` of one ``length``-byte element: its ``bytes`` made in C
    straight from the buffer (no memoryview slice first)."""
    taker = _takers.get(length)
    if taker is None:
        if len(_takers) >= _CUTTERS_MAX:
            _takers.clear()
        taker = _takers[length] = Struct(f"{length}s").unpack_from
    return taker


def _cutter(hdr: int, length: int, count: int) -> Struct:
    key = (hdr << 24) | (length << 8) | count
    cutter = _cutters.get(key)
    if cutter is None:
        if len(_cutters) >= _CUTTERS_MAX:  # many distinct lengths: start over, stay small
            _cutters.clear()
        cutter = _cutters[key] = Struct(f"{hdr}x{length}s" * count)
    return cutter


class ReadBuffer(bytearray):
    """A reader's buffer whose bytes a :class:`FrameParser` may keep a view of past a feed.

    The reader (a transport) feeds a memoryview of what it read into the buffer. When a large
    onNext runs past the end of that read, the parser keeps a view of its start instead of a
    copy and sets :attr:`lent`; the reader then reads into another buffer next (clearing the
    flag), so the view stays valid until the next feed returns, by which time the parser has
    joined the element or copied the view. The parser keeps a view of one read at most.

    During a run of large onNext frames of one length the parser also says how long the next
    read should be to end where a frame ends (:attr:`fits`): reads of that size cut no element,
    so nothing is lent and the reader keeps reading into this one buffer, which stays warm in
    the cache, rather than into two in turns."""

    __slots__ = ("fits", "lent")

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.lent = False
        """A parser keeps a view of these bytes: do not read into them before the next feed."""
        self.fits = 0
        """The size of the next read that ends where a large frame ends (at most this buffer's
        length), set by the parser in a run of large frames; 0: no such size known. For the
        next read only: the reader clears it when it uses it."""


class FrameParser:
    """Turns a byte stream into frames; see the module docstring."""

    __slots__ = (
        "_answers",
        "_batch",
        "_buf",
        "_known",
        "_last_subscribe",
        "_lent",
        "_max_element",
        "_max_extensions",
        "_max_string",
        "_missing",
        "_need",
        "_pending_sid",
        "_pieces",
        "_probe",
        "_stride",
        "element_sizes",
        "error",
        "metadata_window",
        "taken",
    )

    def __init__(
        self,
        *,
        max_element_size: int,
        max_string_length: int,
        max_extensions: int,
        batch_on_next: bool = False,
        answers: bool = False,
    ) -> None:
        self._batch = batch_on_next
        self._answers = answers  # a request/response's answer as one Answer, not its three frames
        self._buf = bytearray()
        self._need = 0
        self._pieces: list[bytes | memoryview] | None = None  # a large onNext payload, arriving
        self._lent = False  # its last piece is a view into a ReadBuffer (see _large_frames)
        self._missing = 0  # bytes of that payload still to come
        self._pending_sid = 0
        self._stride = 0  # the bytes of that onNext frame, header and payload
        self._probe = _RUN_MIN
        self._known: tuple[tuple[int, ...] | None, int, int, Callable[..., tuple[bytes]]] = (
            None,
            0,
            0,
            _taker(_PENDING_MIN),
        )
        """The last large onNext header of 5 bytes taken whole, its id and its length (headers of
        equal bytes mean the same: no framing state changes what they mean while large frames are
        looked for, see :meth:`feed`)."""
        self._max_element = max_element_size
        self._max_string = max_string_length
        self._max_extensions = max_extensions
        self.metadata_window: Remembered = _NO_WINDOW
        """The connection's last subscribeMetadata decoded whole (extension metadata, §18), set
        by the connection: one that it describes is given as ``(subscriber, Metadata)`` instead
        of a frame (:meth:`_subscribe_metadata`). None before that (a parser of its own)."""
        self._last_subscribe: tuple[bytes, Frame] = (b"", _ACCEPTED[0])
        """The last read that was one short subscribe, and its frame: a read of the same bytes
        (a request repeated: the same name, id and demand) is that frame again, not decoded
        anew (frames are immutable). At most ~130 bytes held (one-byte lengths only)."""
        self.element_sizes: dict[int, int] = {}
        """Our subscriber id -> fixed element size, for subscriptions with ``element_size != 0``."""
        self.error: RemoteProtocolError | None = None
        """The first malformed-input error; once set, :meth:`feed` returns nothing more."""
        self.taken = 0
        """Bytes of its input the last :meth:`feed` took (less than all only with a ``limit``)."""

    @property
    def buffered(self) -> int:
        """Bytes held back because they do not yet form a complete frame."""
        if self._pieces is not None:
            return sum(map(len, self._pieces)) + 1  # + 1: the header, roughly
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview, limit: int = 0) -> list[Parsed]:
        """Parse ``data`` (after any buffered remainder); return the complete frames in it
        (batched, answers and read subscribeMetadata as :data:`Parsed` says).

        ``limit``: take only about that many bytes of small frames (whole frames: at least
        one), and leave the rest of ``data`` to be fed again; large onNext frames are taken
        whole whatever the limit (their cost is a copy, not per-frame work). :attr:`taken`
        says how many bytes of ``data`` were taken (all of them without a limit).
        """
        total = self.taken = len(data)
        error = self.error  # a local: self.error is not narrowed below (_parse may set it)
        if error is not None:
            return []
        frames: list[Parsed] = []
        if self._pieces is not None or (
            total >= _PENDING_MIN and not self._buf and data[0] == _ON_NEXT and not self.element_sizes
        ):  # the rest of a large onNext payload, or large onNext frames first (worth looking)
            pos = self._large_frames(data, frames)  # copied once each, straight from the read
            if pos:
                if pos == total:
                    return frames
                data = data[pos:]
        if limit and len(data) > limit:
            if not self._buf:
                pos = self._parse_part(data, limit, frames)
                if pos:
                    self.taken = total - len(data) + pos
                    return frames
            else:  # the rest of a buffered frame first: only ``limit`` more bytes join it
                self.taken = total - len(data) + limit
                data = data[:limit]
        if self._buf:
            self._buf += data
            if len(self._buf) < self._need:
                return frames
            chunk = bytes(self._buf)
        else:
            # Exactly one request or one short onNext with one-byte fields (an element at a time
            # reads one on each side), or one answer: the frames the parse loop makes, without the
            # loop (an onNext under a max_element_size below 128 is left to its general path).
            # Other short reads cost an indexing here. (No frames yet: data is all that was fed.)
            if total == 3 and not frames:
                kind, sid, n = data  # (one pass over the view: indexing it costs a call a byte)
                if kind == _REQUEST and sid < 0x80 and n < 0x80:
                    if n == 1:  # one more element: the frame of one element at a time, made once
                        frames.append(_REQUESTS_OF_ONE[sid])
                        return frames
                    request = _new(Request)  # read from data itself: nothing to copy
                    _set_requester(request, sid)
                    _set_requested(request, n)
                    frames.append(request)
                    return frames
            # (a read's memoryview copied by its own method: bytes(view) costs three times as much)
            chunk = data.tobytes() if type(data) is memoryview else bytes(data)  # bytes: itself
            if 3 <= total <= _ONE_MAX and not frames:
                n = total
                kind = chunk[0]
                if kind == _ON_NEXT:
                    sid = chunk[1]
                    if (
                        sid < 0x80
                        and n == chunk[2] + 3
                        and not self.element_sizes
                        and self._max_element >= 0x80
                    ):
                        if self._batch:
                            batch = _new(OnNextBatch)
                            batch.subscriber = sid
                            batch.elements = [chunk[3:]]
                            frames.append(batch)
                        else:
                            frame = _new(OnNext)
                            _set_subscriber(frame, sid)
                            _set_element(frame, chunk[3:])
                            frames.append(frame)
                        return frames
                # One request/response's answer (onSubscribe, onNext, onComplete) is the whole read:
                # _answer takes it in one pass, as the loop would, and the loop is not entered
                elif kind == _ON_SUBSCRIBE:
                    if n > 5 and n == chunk[5] + 8 and self._answer(chunk, 0, n, frames):
                        return frames
                # One subscribe with a short name and one-byte fields is the whole read (each request
                # of a request/response, at the server): the last one's frame if it is that one again,
                # else its decoder, without the loop around it
                elif kind == _SUBSCRIBE:
                    last = self._last_subscribe
                    if chunk == last[0]:
                        frames.append(last[1])
                        return frames
                    if n == chunk[1] + 4 and chunk[1] < 0x80 and chunk[n - 2] < 0x80 and chunk[n - 1] < 0x80:
                        try:
                            subscribe = self._subscribe(chunk, 1, n)[0]
                        except RemoteProtocolError as exc:  # a name above max_string_length, or not UTF-8
                            self.error = exc
                        else:
                            self._last_subscribe = (chunk, subscribe)
                            frames.append(subscribe)
                        return frames
        pos = self._parse(chunk, frames)
        if self._buf:  # parsed (as a copy, chunk): start a new one
            self._buf = bytearray()
        if pos < len(chunk) and self.error is None and not self._start_pending(chunk, pos):
            self._buf = bytearray(chunk[pos:]) if pos else bytearray(chunk)
        return frames

    def _parse_part(self, data: bytes | bytearray | memoryview, limit: int, frames: list[Parsed]) -> int:
        """The whole frames in the first ``limit`` bytes of ``data`` and the one that runs past
        them (so at least one frame, however long); returns where they end, nothing buffered.
        0: the first frame does not end in ``data`` (the caller parses it all, buffering that
        frame's start)."""
        n = len(data)
        end = limit
        pos = self._parse(bytes(data[:end]), frames)
        while self.error is None and pos < end and pos + self._need <= n:
            end = pos + self._need  # the frame at ``pos`` ends there (or its header is longer)
            pos += self._parse(bytes(data[pos:end]), frames)
        return pos if self.error is None else n

    def _large_frames(self, data: bytes | bytearray | memoryview, frames: list[Parsed]) -> int:
        """Take the rest of a pending large onNext payload and the large onNext frames at the start
        of ``data``; return the bytes consumed.

        Each element is copied once, from ``data`` into its ``bytes``, rather than first
        copying the whole read into one ``bytes`` and slicing it; a pending one is joined from
        its pieces and the start of ``data``. The common header (a one-byte id, a three-byte
        length) is decoded inline; in batch mode consecutive elements of one subscriber become
        one :class:`OnNextBatch`. A payload that runs past the end of ``data`` is kept as pieces
        until the rest arrives: a piece is a view when ``data`` is a read into a
        :class:`ReadBuffer` (lent to us until the next feed, which the buffer is told), else a
        copy. Anything else (small or malformed) is left to _parse.
        """
        n = len(data)
        pos = 0
        is_batch = self._batch
        batch: list[bytes] | None = None  # the elements of the OnNextBatch being filled
        batch_sid = -1
        cut = -1  # where a payload that runs past the end of data starts
        pieces = self._pieces
        if pieces is not None:  # the rest of a pending payload
            missing = self._missing
            if n < missing:
                cut = 0
                self._missing = missing - n
                if self._lent:  # its buffer is read into again after this feed: copy it now
                    pieces[-1] = bytes(pieces[-1])
            else:
                # joined now, while data is valid: a view of it, no copy first
                pieces.append(data[:missing] if type(data) is memoryview else memoryview(data)[:missing])
                element = b"".join(pieces)
                self._pieces = None
                pos = missing
                sid = self._pending_sid
                if is_batch:
                    batch, batch_sid = [element], sid
                    run = _new(OnNextBatch)  # OnNextBatch(sid, batch) without its __init__ call
                    run.subscriber = sid
                    run.elements = batch
                    frames.append(run)
                else:
                    frames.append(make_on_next(sid, element))
                if self.element_sizes:  # framing without length prefixes: left to _parse
                    return pos
        if cut < 0:
            max_element = self._max_element
            head = _HEAD.unpack_from
            # The last header taken whole (5 bytes), in this feed or an earlier one, with its id
            # and length: the same again (the next element of a run) is not decoded again.
            known, sid, length, take = self._known
            try:
                while pos + 5 <= n:  # (a large element's header takes 5 bytes at least)
                    fields = head(data, pos)
                    if fields == known:  # an onNext with the same id and length as the one before
                        p = pos + 5
                    else:
                        kind, sid, low, middle, high = fields
                        if kind != _ON_NEXT:
                            break
                        if sid < 0x80 and low >= 0x80 and middle >= 0x80 and 0 < high < 0x80:
                            p = pos + 5
                            length = (low & 0x7F) | (middle & 0x7F) << 7 | high << 14
                        else:
                            sid, p = decode_varint(data, pos + 1, n)
                            length, p = decode_varint(data, p, n)
                        if length < _PENDING_MIN or length > max_element:
                            break
                        take = _taker(length)
                        if p == pos + 5:
                            known = fields
                            self._known = (fields, sid, length, take)
                        else:
                            known = None
                    end = p + length
                    if end > n:
                        cut = p
                        self._pending_sid = sid
                        self._missing = end - n
                        self._stride = end - pos
                        break
                    element = take(data, p)[0]  # (bytes(data[p:end]), made in C without a slice)
                    pos = end
                    if not is_batch:
                        frames.append(make_on_next(sid, element))
                    elif sid == batch_sid:
                        batch.append(element)  # type: ignore[union-attr]  # set with batch_sid
                    else:
                        batch, batch_sid = [element], sid
                        run = _new(OnNextBatch)  # OnNextBatch(sid, batch) without its __init__ call
                        run.subscriber = sid
                        run.elements = batch
                        frames.append(run)
            except (Incomplete, FrameError):
                pass
            if cut < 0:
                if pos == n and known is not None:  # the read ended where a frame of the run did
                    buffer = data.obj if type(data) is memoryview else None
                    if type(buffer) is ReadBuffer:  # the next may too: whole frames of 5 + length
                        buffer.fits = len(buffer) // (5 + length) * (5 + length)  # (0: none fits)
                return pos
        # Keep data[cut:] as the payload's next piece.
        buffer = data.obj if type(data) is memoryview else None
        if type(buffer) is ReadBuffer:
            # the next read: the rest of this payload and as many whole frames as fit after it
            whole = (len(buffer) - self._missing) // self._stride
            buffer.fits = self._missing + whole * self._stride if whole > 0 else 0
            buffer.lent = True
            piece: bytes | memoryview = data[cut:] if cut else data  # type: ignore[assignment]  # a memoryview
            self._lent = True
        else:
            piece = bytes(data[cut:])
            self._lent = False
        if self._pieces is None:
            self._pieces = [piece]
        else:
            self._pieces.append(piece)
        return n

    def _start_pending(self, chunk: bytes, pos: int) -> bool:
        """If ``chunk[pos:]`` starts a large onNext, keep its payload as pieces (no re-copying)."""
        n = len(chunk)
        if self._need < _PENDING_MIN or chunk[pos] != _ON_NEXT or self.element_sizes:
            return False
        try:
            sid, p = decode_varint(chunk, pos + 1, n)
            length, p = decode_varint(chunk, p, n)  # checked against max_element_size by _parse
        except Incomplete:
            return False
        self._pending_sid = sid
        self._stride = p - pos + length
        self._pieces = [memoryview(chunk)[p:]]  # chunk is immutable bytes: a view is safe to keep
        self._lent = False
        self._missing = length - (n - p)
        return True

    def eof(self) -> FrameError | None:
        """The error to report if the input ends now (a truncated frame), else ``None``."""
        if (self._buf or self._pieces is not None) and self.error is None:
            return FrameError(
                f"input ended inside a frame ({self.buffered} bytes of an incomplete frame)", section="9.3"
            )
        return None

    # -- the loop --------------------------------------------------------------------------
    def _parse(self, data: bytes, frames: list[Parsed]) -> int:
        """Append every complete frame of ``data`` to ``frames``; return where parsing stopped.

        The common frame, an onNext whose id and length take one or two bytes each (no
        length on a stream with an elementSize), is decoded inline here: it is most of the traffic,
        and a call per frame would cost more than decoding it. Every other frame, and any
        onNext the inline decoding declines, goes through its type's decoder in the table
        :data:`_DECODERS` (the general onNext decoder also reports non-minimal varints).
        """
        n = len(data)
        pos = 0
        append = frames.append
        sizes = self.element_sizes  # changes while parsing: onSubscribe adds, terminals remove
        general = self._max_element < 0x80  # a limit this small: let the general path check it
        max_element = self._max_element
        batch = self._batch
        new, set_subscriber, set_element = _new, _set_subscriber, _set_element
        decoders = _DECODERS
        try:
            while pos < n:
                kind = data[pos]
                if kind != _ON_NEXT:
                    if kind == _REQUEST and pos + 2 < n and data[pos + 1] < 0x80 and data[pos + 2] < 0x80:
                        if data[pos + 2] == 1:  # _request's common case, inlined: one element at a time
                            append(_REQUESTS_OF_ONE[data[pos + 1]])
                        else:
                            request = new(Request)
                            _set_requester(request, data[pos + 1])
                            _set_requested(request, data[pos + 2])
                            append(request)
                        pos += 3
                        continue
                    if kind == _ON_SUBSCRIBE:
                        end = self._answer(data, pos, n, frames)
                        if end:
                            pos = end
                            continue
                    frame, pos = decoders[kind](self, data, pos + 1, n)
                    append(frame)
                    continue
                if general or pos + 2 >= n:
                    frame, pos = self._on_next(data, pos + 1, n)
                    append(frame)
                    continue
                sid = data[pos + 1]
                q = pos + 2  # where the length starts
                if sid >= 0x80:  # a two-byte id (128 ... 16383); -1: leave it to the general path
                    second = data[q]
                    sid = (sid & 0x7F) | (second << 7) if 0 < second < 0x80 else -1
                    q += 1
                length = sizes.get(sid, 0) if sizes else 0
                if length:  # a stream with an elementSize: no length prefix (§7)
                    hdr = q - pos
                else:
                    length = data[q] if q < n else -1
                    hdr = q + 1 - pos
                    if length >= 0x80:  # a two-byte length (128 ... 16383)
                        second = data[q + 1] if q + 1 < n else 0
                        length = (length & 0x7F) | (second << 7) if 0 < second < 0x80 else -1
                        hdr += 1
                        if length > max_element:
                            length = -1
                if sid < 0 or length < 0:
                    frame, pos = self._on_next(data, pos + 1, n)
                    append(frame)
                    continue
                end = pos + hdr + length
                if end > n:
                    raise Incomplete(end)
                if batch:
                    if end < n:  # more behind it: perhaps a run of equal frames
                        pos = self._take_run(data, pos, n, sid, hdr, length, frames)
                        continue
                    element = data[pos + hdr : end]  # the last frame (one element a read): no run
                    last = frames[-1] if frames else None
                    if type(last) is OnNextBatch and last.subscriber == sid:
                        last.elements.append(element)
                    else:
                        run = new(OnNextBatch)  # OnNextBatch(sid, [element]) without its __init__ call
                        run.subscriber = sid
                        run.elements = [element]
                        append(run)
                    pos = end
                    continue
                frame = new(OnNext)
                set_subscriber(frame, sid)
                set_element(frame, data[pos + hdr : end])
                append(frame)
                pos = end
        except Incomplete as inc:
            self._need = (inc.end - pos) if inc.end else (n - pos + 1)
        except RemoteProtocolError as exc:
            self.error = exc
        return pos

    def _answer(self, data: bytes, pos: int, n: int, frames: list[Parsed]) -> int:
        """A request/response's answer in one pass: an onSubscribe (elementSize 0) at ``pos``
        (the caller read its type byte) followed by one short onNext and the onComplete of the
        same subscriber, all in ``data`` and all with one-byte fields. Appends the three frames
        :meth:`_on_subscribe`, the onNext path and :meth:`_on_complete` would have (the onNext
        as an :class:`OnNextBatch` in batch mode), or the one :class:`Answer` that stands for
        them with ``answers``, and returns where they end; 0 (nothing appended) for anything else,
        which the decoders then take frame by frame."""
        if pos + 5 >= n:
            return 0
        sid = data[pos + 1]  # 07 sid 00 | 08 sid length element | 0C sid
        length = data[pos + 5]
        end = pos + 6 + length
        if (  # byte by byte: cheaper than two startswith calls (their arguments are parsed as a tuple)
            sid >= 0x80
            or data[pos + 2]
            or data[pos + 3] != _ON_NEXT
            or data[pos + 4] != sid
            or length >= 0x80
            or length > self._max_element
            or end + 1 >= n
            or data[end] != _ON_COMPLETE
            or data[end + 1] != sid
        ):
            return 0
        if self.element_sizes:
            self.element_sizes.pop(sid, None)
        element = data[end - length : end]
        if self._answers:
            answer = _new(Answer)  # Answer(sid, element) without its __init__ call
            answer.subscriber = sid
            answer.element = element
            frames.append(answer)
            return end + 2
        frames.append(_ACCEPTED[sid])
        if self._batch:
            batch = _new(OnNextBatch)
            batch.subscriber = sid
            batch.elements = [element]
            frames.append(batch)
        else:
            frame = _new(OnNext)
            _set_subscriber(frame, sid)
            _set_element(frame, element)
            frames.append(frame)
        frames.append(_COMPLETED[sid])
        return end + 2

    def _take_run(
        self,
        data: bytes,
        pos: int,
        n: int,
        sid: int,
        hdr: int,
        length: int,
        frames: list[Parsed],
    ) -> int:
        """Batch mode: the complete onNext at ``pos`` and the equal frames right behind it
        (same ``hdr``-byte header, same ``length``) join the :class:`OnNextBatch` at the end
        of ``frames`` if it is this subscriber's, else start one; return where they end.

        Runs are found with strided slices: column ``offset`` of ``k`` frames is
        ``data[pos + offset : stop : stride]``, and ``lstrip`` of its first byte says how
        many frames repeat it. ``_probe`` bounds ``k``: it grows while runs fill it, stays
        when the data ran out first (the run may go on in the next read), and starts small
        again when a run breaks.
        """
        stride = hdr + length
        probe = self._probe
        available = (n - pos) // stride  # complete frames from here on
        k = min(available, probe)  # those that may repeat this one
        if k > 1 and probe == _RUN_MIN and data[pos + stride : pos + stride + hdr] != data[pos : pos + hdr]:
            k = 1  # not in a run, and the next frame differs (another stream or length): no probe
        if k > 1:
            stop = pos + k * stride
            for offset in range(hdr):
                column = data[pos + offset : stop : stride]
                same = k - len(column.lstrip(_BYTE[data[pos + offset]]))
                if same < k:
                    k = same
                    stop = pos + k * stride
            if k == probe:
                self._probe = min(probe << 2, _RUN_MAX)
            elif k < available:
                self._probe = _RUN_MIN
            elements = _cut(data, pos, k, hdr, length)
        else:
            stop = pos + stride
            elements = [data[pos + hdr : stop]]
        last = frames[-1] if frames else None
        if type(last) is OnNextBatch and last.subscriber == sid:
            last.elements += elements
        else:
            batch = _new(OnNextBatch)  # OnNextBatch(sid, elements) without its __init__ call
            batch.subscriber = sid
            batch.elements = elements
            frames.append(batch)
        return stop

    # -- one decoder per type (§3): fields start at ``p``; each returns (frame, end) -----------
    def _on_next(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        if p < n and data[p] < 0x80:
            sid = data[p]
            p += 1
        else:
            sid, p = decode_varint(data, p, n)
        size = self.element_sizes.get(sid, 0) if self.element_sizes else 0
        if size:
            length = size
        elif p < n and data[p] < 0x80:
            length = data[p]
            p += 1
        else:
            length, p = decode_varint(data, p, n)
        if length > self._max_element:
            raise _too_big("onNext element", length, self._max_element, sid)
        end = p + length
        if end > n:
            raise Incomplete(end)
        return make_on_next(sid, data[p:end]), end

    # The small frames below take one-byte varints inline (``data[p] < 0x80``: ids below 128,
    # small demands) and call decode_varint for anything else, which also reports
    # non-minimal and over-long encodings.
    def _request(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        if p + 1 < n and data[p] < 0x80 and data[p + 1] < 0x80:  # make_request, inlined
            frame = _new(Request)
            _set_requester(frame, data[p])
            _set_requested(frame, data[p + 1])
            return frame, p + 2
        sid, p = decode_varint(data, p, n)
        demand, p = decode_varint(data, p, n)
        return make_request(sid, demand), p

    def _cancel(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        sid, p = decode_varint(data, p, n)
        return make_cancel(sid), p

    def _on_complete(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        if p < n and data[p] < 0x80:
            sid = data[p]
            p += 1
        else:
            sid, p = decode_varint(data, p, n)
        if self.element_sizes:
            self.element_sizes.pop(sid, None)
        return (_COMPLETED[sid] if sid < 0x80 else make_on_complete(sid)), p

    def _on_error(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        if p < n and data[p] < 0x80:
            sid = data[p]
            p += 1
        else:
            sid, p = decode_varint(data, p, n)
        text, p = self._string(data, p, n, "onError error")
        if self.element_sizes:
            self.element_sizes.pop(sid, None)
        frame = _new(OnError)  # OnError(subscriber=sid, error=text): both fields are valid, decoded
        _set_failed(frame, sid)
        _set_error(frame, text)
        return frame, p

    def _on_next_packed(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        sid, p = decode_varint(data, p, n)
        count, p = decode_varint(data, p, n)
        size = self.element_sizes.get(sid, 0)
        if not size:
            raise FrameError(
                f"onNextPacked for subscriber {sid}, which has no onSubscribe with an elementSize above 0",
                section="7",
            )
        if count == 0:
            raise FrameError(f"onNextPacked for subscriber {sid} with count 0", section="7")
        total = count * size
        if total > self._max_element:
            raise _too_big("onNextPacked payload", total, self._max_element, sid)
        return OnNextPacked(subscriber=sid, count=count, elements=self._take(data, p, total, n)), p + total

    def _part(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        last = data[p - 1] == _ON_NEXT_LAST_PART
        sid, p = decode_varint(data, p, n)
        element_id, p = decode_varint(data, p, n)
        length, p = decode_varint(data, p, n)
        if length > self._max_element:
            raise _too_big("onNextPart data", length, self._max_element, sid)
        cls = OnNextLastPart if last else OnNextPart
        return cls(subscriber=sid, element_id=element_id, data=self._take(data, p, length, n)), p + length

    def _on_subscribe(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        if p + 1 < n and data[p] < 0x80 and data[p + 1] < 0x80:
            sid, size = data[p], data[p + 1]
            p += 2
        else:
            sid, p = decode_varint(data, p, n)
            size, p = decode_varint(data, p, n)
        if size > self._max_element:
            raise _too_big("onSubscribe elementSize", size, self._max_element, sid)
        if size:
            self.element_sizes[sid] = size
            return make_on_subscribe(sid, size), p
        if self.element_sizes:
            self.element_sizes.pop(sid, None)
        return (_ACCEPTED[sid] if sid < 0x80 else make_on_subscribe(sid, 0)), p

    def _subscribe(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        length = data[p] if p < n else 0x80
        end = p + 1 + length
        if (
            length < 0x80
            and length <= self._max_string
            and end + 1 < n
            and data[end] < 0x80
            and data[end + 1] < 0x80
        ):
            # the common case: a short name, a one-byte id and demand (_string, make_subscribe inlined)
            try:
                name = data[p + 1 : end].decode()
            except UnicodeDecodeError:
                raise FrameError("subscribe publisher name is not valid UTF-8", section="2.2") from None
            frame = _new(Subscribe)
            _set_name(frame, name)
            _set_sid(frame, data[end])
            _set_demand(frame, data[end + 1])
            return frame, end + 2
        name, p = self._string(data, p, n, "subscribe publisher name")
        if p + 1 < n and data[p] < 0x80 and data[p + 1] < 0x80:
            return make_subscribe(name, data[p], data[p + 1]), p + 2
        sid, p = decode_varint(data, p, n)
        demand, p = decode_varint(data, p, n)
        return make_subscribe(name, sid, demand), p

    def _goodbye(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        reason, p = self._string(data, p, n, "goodbye reason")
        return Goodbye(reason=reason), p

    def _hello(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        hello = ClientHello if data[p - 1] == _CLIENT_HELLO else ServerHello
        if p >= n:
            raise Incomplete
        version = data[p]
        if version != PROTOCOL_VERSION:
            # Judged by its version first (§4.2): the connection's goodbye names the version, whatever
            # follows it (that version's layout, not a list this endpoint could limit). The hello
            # ends at its version byte; the connection closes on it before any frame or error the
            # parser makes of what follows (those come after it: see Connection.receive).
            return hello(version=version), p + 1
        count, p = decode_varint(data, p + 1, n)
        if count > self._max_extensions:
            raise LimitExceededError(
                f"hello lists {count} extensions, more than max_extensions={self._max_extensions}",
                limit="max_extensions",
            )
        extensions = []
        for _ in range(count):
            ext, p = decode_varint(data, p, n)
            extensions.append(ext)
        return hello(version=version, extensions=tuple(extensions)), p

    def _extension(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        t = data[p - 1]
        if t not in BY_TYPE:  # no extension owns it: refused at the type byte
            raise ExtensionError(f"message type 0x{t:02x} belongs to no extension this endpoint knows")
        if p < n and data[p] < 0x80:  # a one-byte length, inline (§2.1)
            length = data[p]
            p += 1
        else:
            length, p = decode_varint(data, p, n)
        if length > self._max_string:
            raise LimitExceededError(
                f"extension message 0x{t:02x} payload of {length} bytes exceeds "
                f"max_string_length={self._max_string}",
                limit="max_string_length",
            )
        end = p + length
        if end > n:
            raise Incomplete(end)
        frame = _new(ExtensionMessage)  # make_extension_message inline (a qualifier precedes many subscribes)
        _set_type(frame, t)  # owned by an extension, so >= 0x80
        _set_payload(frame, data[p:end])
        return frame, end

    def _subscribe_metadata(self, data: bytes, p: int, n: int) -> tuple[Frame | HeldMetadata, int]:
        """A subscribeMetadata (§18.1). One that :attr:`metadata_window` describes (the
        connection's last one decoded whole, with perhaps another one-byte id and another value
        in its window: a new traceparent per request) is read here, as it arrives: the bytes
        around the window compared in place, the value sliced, and ``(subscriber, Metadata)``
        given, what the connection holds for its subscribe (the same :class:`Metadata` as
        last time when the value is too). Its length is the window's, which was within
        ``max_string_length`` (no check again). Any other one is :meth:`_extension`'s frame
        (inline), for the connection to decode."""
        if p < n and data[p] < 0x80:  # a one-byte length, inline (§2.1)
            length = data[p]
            p += 1
        else:
            length, p = decode_varint(data, p, n)
        window = self.metadata_window
        if length == window.length:
            end = p + length
            if end > n:
                raise Incomplete(end)
            sid = data[p]
            start = p + window.start
            stop = p + window.stop
            if sid < 0x80 and data[p + 1 : start] == window.prefix and data[stop:end] == window.suffix:
                value = data[start:stop]
                if value != window.value:  # the window's value anew, the rest shared (no key: b"")
                    metadata = _new_metadata(Metadata)
                    metadata._window = window.base  # type: ignore[assignment]  # a window has a key
                    metadata._value = value
                    window.value, window.metadata, window.misses = value, metadata, 0
                return (sid, window.metadata), end
        elif length > self._max_string:
            raise LimitExceededError(
                f"extension message 0x{SUBSCRIBE_METADATA:02x} payload of {length} bytes exceeds "
                f"max_string_length={self._max_string}",
                limit="max_string_length",
            )
        end = p + length
        if end > n:
            raise Incomplete(end)
        frame = _new(ExtensionMessage)
        _set_type(frame, SUBSCRIBE_METADATA)
        _set_payload(frame, data[p:end])
        return frame, end

    def _unknown(self, data: bytes, p: int, n: int) -> tuple[Frame, int]:
        raise FrameError(f"unknown message type 0x{data[p - 1]:02x}")

    def _take(self, data: bytes, p: int, length: int, n: int) -> bytes:
        end = p + length
        if end > n:
            raise Incomplete(end)
        return data[p:end]

    def _string(self, data: bytes, p: int, n: int, what: str) -> tuple[str, int]:
        if p < n and data[p] < 0x80:
            length = data[p]
            p += 1
        else:
            length, p = decode_varint(data, p, n)
        if length > self._max_string:
            raise LimitExceededError(
                f"{what} of {length} bytes exceeds max_string_length={self._max_string}",
                limit="max_string_length",
            )
        end = p + length
        if end > n:
            raise Incomplete(end)
        try:
            return data[p:end].decode(), end
        except UnicodeDecodeError:
            raise FrameError(f"{what} is not valid UTF-8", section="2.2") from None


_Decoder = Callable[[FrameParser, bytes, int, int], tuple[Frame | HeldMetadata, int]]
_BY_CODE: dict[int, _Decoder] = {
    _CLIENT_HELLO: FrameParser._hello,
    _SERVER_HELLO: FrameParser._hello,
    _GOODBYE: FrameParser._goodbye,
    _SUBSCRIBE: FrameParser._subscribe,
    _REQUEST: FrameParser._request,
    _CANCEL: FrameParser._cancel,
    _ON_SUBSCRIBE: FrameParser._on_subscribe,
    _ON_NEXT: FrameParser._on_next,
    _ON_NEXT_PACKED: FrameParser._on_next_packed,
    _ON_NEXT_PART: FrameParser._part,
    _ON_NEXT_LAST_PART: FrameParser._part,
    _ON_COMPLETE: FrameParser._on_complete,
    _ON_ERROR: FrameParser._on_error,
}
_DECODERS: list[_Decoder] = [
    _BY_CODE.get(code, FrameParser._extension if code >= FIRST_EXTENSION_TYPE else FrameParser._unknown)
    for code in range(256)
]
_DECODERS[SUBSCRIBE_METADATA] = FrameParser._subscribe_metadata
"""Type byte -> its decoder: the core types (§3), extension messages (§4.4), the rest unknown."""
_NO_WINDOW = nothing_remembered()
"""The window of a parser whose connection has decoded no subscribeMetadata: matches none."""
_new_metadata = Metadata.__new__


def _too_big(what: str, size: int, limit: int, sid: int) -> LimitExceededError:
    return LimitExceededError(
        f"{what} of {size} bytes for subscriber {sid} exceeds max_element_size={limit}",
        limit="max_element_size",
        subscriber=sid,
    )
