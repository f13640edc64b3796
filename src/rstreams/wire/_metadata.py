"""Extension metadata (PROTOCOL.md §18): key/value entries qualifying a subscribe.

One message, ``subscribeMetadata`` (``0x94``), payload::

    subscriber: varint, count: varint, count x (key: string, value: bytes)

sent right before the subscribe it qualifies (a qualifier, like errorCode, §19.1). Keys are
1-64 bytes of lower-case ASCII letters, digits and ``-_.`` (``traceparent``, ``accept``,
``x-tenant``), each at most once; values are opaque bytes (text is UTF-8 by convention).
The receiver bounds a message by its size and its number of entries (``max_metadata_bytes``,
``max_metadata_entries``, §11).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rstreams.errors import RemoteProtocolError
from rstreams.wire._errors import ExtensionError, LimitExceededError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "EMPTY",
    "ENCODED_KEPT",
    "MAX_KEY_LENGTH",
    "REMEMBERED_METADATA",
    "WINDOW_RETRY",
    "WINDOW_TRIES",
    "Metadata",
    "check_key",
    "decode_metadata",
    "encode_entries",
    "encode_metadata",
    "nothing_remembered",
    "remembered",
]

MAX_KEY_LENGTH = 64
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
KNOWN_KEYS = 256
"""Most keys remembered as checked, both ways (a few, ``traceparent`` first, are on nearly every
subscribe): a known key is one dict lookup instead of a check and a conversion. Bounded, so a
peer sending new keys only stops more from being remembered."""
_encoded_keys: dict[str, bytes] = {}
_KEY_TEXTS: dict[str, str] = {}
"""The keys of :data:`_encoded_keys` as text, each after its length (a one-byte varint, as a
character below 0x80): what :func:`encode_entries` lays out before a value's length and value."""
_CHARS = tuple(map(chr, range(0x80)))
"""``_CHARS[n]``: ``n`` below 0x80 as a character, which UTF-8 encodes as the one byte ``n``."""
REMEMBERED_METADATA = 512
"""A subscribeMetadata payload up to this size with a one-byte subscriber id is remembered
until the next one decoded whole (:class:`Remembered`): decoded by the connection, compared
by its parser with the bytes of each new one as they arrive. A subscriber that sends the
same entries with every subscribe (its headers, a token, the trace of a batch of requests)
has them decoded once, whatever its id. :class:`Metadata` is immutable and decoding is a
function of the bytes and of the connection's limits alone, so sharing it changes nothing else.

The connection also remembers where one value lies in that payload (:func:`remembered`): a
payload of the same length whose bytes outside that value are the same decodes to the same
entries with that value read anew. That is a subscriber sending a new ``traceparent`` (same
length, new trace id) with otherwise the same entries on every subscribe: the parser reads
it as it arrives (the bytes around the value compared in place, the value sliced), without a
frame for the connection to decode."""
_decoded_keys: dict[bytes, str] = {}


class Metadata(Mapping[str, bytes]):
    """Received metadata: a read-only mapping of key -> value bytes, in the order sent.

    ``text(key)`` gives a value decoded as UTF-8; :attr:`traceparent` the W3C Trace Context
    header, the entry this extension is mostly for. The core emits one as the event right
    before the :class:`~rstreams.wire.Subscribe` it qualifies (§18.1).
    """

    __slots__ = ("_entries", "_value", "_window")

    def __init__(self, entries: Mapping[str, bytes] | None = None) -> None:
        self._entries: dict[str, bytes] = dict(entries or {})
        self._window: tuple[dict[str, bytes], str]
        self._value: bytes
        """Received metadata read in a window (:class:`Remembered`) has no ``_entries`` until
        they are first read: ``_window`` is the window's ``base``, ``(entries, key)``, a
        decoded payload's entries (never changed) and the key whose value here is ``_value``
        (two fields, not one tuple of three: one tuple fewer per subscribe). Most such
        metadata is never read (no factory asks for the traceparent), and a copy of the
        entries per subscribe would cost more than the rest of reading it."""

    def __getattr__(self, name: str) -> dict[str, bytes]:
        """``_entries`` first read: the window's entries, made now (see ``_window``)."""
        if name != "_entries":
            raise AttributeError(name)
        base, key = self._window
        entries = base.copy()
        entries[key] = self._value
        self._entries = entries
        return entries

    def __getitem__(self, key: str) -> bytes:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Metadata({self._entries!r})"

    def text(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` as text (UTF-8, undecodable bytes replaced), or ``default``."""
        value = self._entries.get(key)
        return default if value is None else value.decode("utf-8", "replace")

    @property
    def traceparent(self) -> str | None:
        """The ``traceparent`` entry (W3C Trace Context), or ``None``."""
        return self.text("traceparent")


EMPTY = Metadata()
"""No metadata: what a subscribe without any sees."""


def check_key(key: object) -> str | None:
    """Why ``key`` is not a metadata key of §18.1, or ``None`` when it is one."""
    if not isinstance(key, str):
        return f"a metadata key is a str, got {type(key).__name__}"
    if not 0 < len(key) <= MAX_KEY_LENGTH or not _KEY_CHARS.issuperset(key):
        return f"a metadata key is 1..{MAX_KEY_LENGTH} of a-z 0-9 - _ . (PROTOCOL.md §18.1), got {key!r}"
    return None


def encode_metadata(subscriber: int, entries: Mapping[str, str | bytes | bytearray]) -> bytes:
    """A subscribeMetadata payload (§18.1), checked as :func:`encode_entries` checks it."""
    return encode_varint(subscriber) + encode_entries(entries)


ENCODED_KEPT = 64
"""Most entries remembered with their encoding (:func:`encode_entries`). A subscriber that
sends the same entries again (``conn.request(name, metadata=headers)`` in a loop, or a new dict
with the same items) finds them encoded; one that sends new entries each time (a new
``traceparent`` per request) fills it and then simply encodes each time: after
``ENCODED_KEPT`` lookups in vain in a row it looks entries up only once in ``ENCODED_KEPT``
calls (a lookup that finds them remembered looks every time again)."""
_encoded: dict[tuple[tuple[str, str | bytes], ...], bytes] = {}
_misses = 0
"""Lookups in a row that found nothing with no room left in :data:`_encoded`."""
_skips = 0
"""Calls still to go before the next lookup (after ``ENCODED_KEPT`` misses in a row)."""


def encode_entries(entries: Mapping[str, str | bytes | bytearray]) -> bytes:
    """The part of a subscribeMetadata payload after the subscriber id: count, then the entries.

    Checks as it encodes: a key that fails :func:`check_key` is a ``ValueError`` naming what is
    wrong, a value that is neither ``str`` (encoded as UTF-8) nor ``bytes``/``bytearray`` a
    ``TypeError``, and so is ``entries`` when it is no mapping. The same items in the same
    order always encode to the same bytes, so a ``dict`` whose items were encoded before is
    one lookup (:data:`ENCODED_KEPT`). The common entries (a ``dict`` of up to 127 remembered
    keys, values of ASCII text or bytes below 128 bytes) are laid out as text and encoded
    once (:data:`_KEY_TEXTS`): every length is then one byte, the same in text and in bytes;
    anything else is encoded entry by entry (:func:`_encode_entries`).

    One function for the lookup and the text layout: a subscriber calls it once per
    subscribe (``conn.request(name, metadata=...)``), where a second call would cost as much
    as the lookup saves.
    """
    global _misses, _skips
    if type(entries) is not dict:
        return _encode_entries(entries)
    items = None
    if _skips:  # new items every time lately: a lookup would be in vain
        _skips -= 1
    else:
        items = tuple(entries.items())
        try:
            encoded = _encoded.get(items)
        except TypeError:  # an unhashable value (a bytearray): not remembered
            return _encode_entries(entries)
        if encoded is not None:
            if _misses:
                _misses = 0  # found after misses: look up every time again
            return encoded
    try:
        chars = _CHARS
        text = chars[len(entries)]
        for key, value in entries.items():
            if type(value) is not str:
                if type(value) is not bytes:
                    break
                value = value.decode("latin-1")  # bytes above 0x7f: not ASCII, caught below
            text = f"{text}{_KEY_TEXTS[key]}{chars[len(value)]}{value}"
        else:
            if text.isascii():  # each length char is then its one-byte varint
                encoded = text.encode()
                if items is not None:
                    _remember(items, encoded)
                return encoded
    except (KeyError, IndexError):  # a new key, a long value
        pass
    encoded = _encode_entries(entries)  # checks every key and value as it encodes
    if items is not None:
        _remember(items, encoded)
    return encoded


def _remember(items: tuple[tuple[str, str | bytes], ...], encoded: bytes) -> None:
    """After a lookup in vain: ``items`` remembered if there is room, else a miss counted."""
    global _misses, _skips
    if len(_encoded) < ENCODED_KEPT:
        _encoded[items] = encoded
        return
    _misses += 1
    if _misses >= ENCODED_KEPT:
        _skips = ENCODED_KEPT - 1


def _encode_entries(entries: Mapping[str, str | bytes | bytearray]) -> bytes:
    """:func:`encode_entries` for any entries, entry by entry."""
    if not isinstance(entries, Mapping):
        raise TypeError(f"metadata is a mapping of str keys to str or bytes values, got {entries!r}")
    count = len(entries)
    out = bytearray((count,)) if count < 0x80 else bytearray(encode_varint(count))
    for key, value in entries.items():
        raw = _encoded_keys.get(key) if type(key) is str else None
        if raw is None:
            raw = _encode_key(key)
        out.append(len(raw))
        out += raw
        if isinstance(value, str):
            value = value.encode()
        elif not isinstance(value, bytes | bytearray):
            raise TypeError(f"metadata value of {key!r} must be str or bytes, got {type(value).__name__}")
        size = len(value)
        if size < 0x80:
            out.append(size)
        else:
            out += encode_varint(size)
        out += value
    return bytes(out)


def _encode_key(key: object) -> bytes:
    """``key`` as bytes, checked (``ValueError`` naming what is wrong); remembered if there is room."""
    problem = check_key(key)
    if problem is not None or not isinstance(key, str):  # check_key finds a non-str key wrong
        raise ValueError(problem)
    raw = key.encode()
    if type(key) is str and len(_encoded_keys) < KNOWN_KEYS:
        _encoded_keys[key] = raw
        _KEY_TEXTS[key] = _CHARS[len(raw)] + key
    return raw


def _decode_key(raw: bytes) -> str:
    """A received key, checked (:class:`ExtensionError`, §18.1); remembered if there is room."""
    try:
        key = raw.decode("ascii")
    except UnicodeDecodeError:
        raise _malformed("a key is not ASCII") from None
    problem = check_key(key)
    if problem is not None:
        raise _malformed(problem.split(" (PROTOCOL")[0])
    if len(_decoded_keys) < KNOWN_KEYS:
        _decoded_keys[raw] = key
    return key


def _malformed(what: str) -> ExtensionError:
    return ExtensionError(f"malformed subscribeMetadata payload ({what})", section="18.1")


def decode_metadata(data: bytes, max_bytes: int, max_entries: int) -> tuple[int, dict[str, bytes]]:
    """``(subscriber, entries)``, in the order sent; :class:`ExtensionError` (§18.1) if malformed,
    :class:`LimitExceededError` (§11) if above ``max_bytes`` or ``max_entries``.

    The common payload is read in one quick pass: a one-byte id and count, keys already seen
    (remembered as checked, :data:`KNOWN_KEYS`), values below 128 bytes. Anything else (a new
    key, a longer varint, a payload that is wrong in any way) is read again by the careful
    decoder, which says exactly what is wrong.
    """
    end = len(data)
    count = data[1] if end >= 2 else 0x80
    if count >= 0x80 or end > max_bytes or data[0] >= 0x80 or count > max_entries:
        return _decode(data, max_bytes, max_entries)
    known = _decoded_keys
    entries: dict[str, bytes] = {}
    pos = 2
    try:
        while pos < end:
            stop = pos + 1 + data[pos]  # a key length above 0x7f is no key: it is not known
            key = known.get(data[pos + 1 : stop])
            if key is None or key in entries:
                return _decode(data, max_bytes, max_entries)
            length = data[stop]  # past the end: IndexError (the key ran past the payload)
            if length >= 0x80:  # a value of 128 bytes or more: a longer varint
                return _decode(data, max_bytes, max_entries)
            pos = stop + 1 + length
            entries[key] = data[stop + 1 : pos]
    except IndexError:
        return _decode(data, max_bytes, max_entries)
    if pos != end or len(entries) != count:  # a value ran past the payload, or not `count` entries
        return _decode(data, max_bytes, max_entries)
    return data[0], entries


class Remembered:
    """What a connection remembers of its last short subscribeMetadata (:data:`REMEMBERED_METADATA`),
    read by its parser (:meth:`~rstreams.wire._parser.FrameParser._subscribe_metadata`): its
    ``entries`` as decoded and a window on one of its values. A payload of ``length`` bytes
    with a one-byte id whose bytes after the id and before ``start`` are ``prefix`` and whose
    bytes from ``stop`` on are ``suffix`` decodes to ``entries`` with the value of ``key``
    read from ``start:stop`` anew; ``value`` is the last one read there, ``metadata`` its
    :class:`Metadata` (built without a copy of the entries: ``Metadata._window``). No
    window (``key`` ``None``: no entries, or the payload remembered alone) is the empty one at
    the end: the same payload, for any one-byte id. ``base`` is ``(entries, key)``, shared by
    the metadata read in the window (``Metadata._window``). ``misses``: the payloads in a row
    that were decoded whole (:data:`WINDOW_TRIES`); a value read anew in the window ends the
    row."""

    __slots__ = (
        "base",
        "entries",
        "key",
        "length",
        "metadata",
        "misses",
        "prefix",
        "start",
        "stop",
        "suffix",
        "value",
    )

    def __init__(
        self,
        payload: bytes,
        metadata: Metadata,
        entries: dict[str, bytes],
        key: str | None,
        start: int,
        stop: int,
    ) -> None:
        self.length = len(payload)
        self.metadata = metadata
        self.entries = entries
        self.key = key
        self.base = (entries, key)
        self.value = b"" if key is None else entries[key]
        self.start = start
        self.stop = stop
        self.prefix = payload[1:start]
        self.suffix = payload[stop:]
        self.misses = 0


WINDOW_TRIES = 2
"""Payloads decoded whole in a row after which the window is only placed again every
:data:`WINDOW_RETRY` th time (the payload itself is still remembered): a subscriber whose
payloads differ in more than one value each time pays for the window's placing only now
and then."""
WINDOW_RETRY = 16


def nothing_remembered() -> Remembered:
    """A connection's memory before its first subscribeMetadata: a length no payload has."""
    nothing = Remembered(b"", EMPTY, {}, None, 0, 0)
    nothing.length = -1
    return nothing


def remembered(payload: bytes, metadata: Metadata, entries: dict[str, bytes], last: Remembered) -> Remembered:
    """What to remember of ``payload`` (a one-byte id, decoded to ``entries``, wrapped as
    ``metadata``), decoded whole after ``last`` (what was remembered before). The window is
    the value that differs from ``last``'s entries when just one does, else the
    ``traceparent``, else the last entry; after :data:`WINDOW_TRIES` payloads decoded whole
    in a row it is placed only every :data:`WINDOW_RETRY` th time (else no window: the
    payload alone)."""
    misses = last.misses + 1
    if misses > WINDOW_TRIES and misses % WINDOW_RETRY:
        alone = Remembered(payload, metadata, entries, None, len(payload), len(payload))
        alone.misses = misses
        return alone
    previous, last_key = last.entries, last.key  # last_key's value is last.value (read in the window)
    key: str | None = None
    for name, value in entries.items():
        if (last.value if name == last_key else previous.get(name)) != value:
            key = name if key is None else ""
    if not key:  # none or more than one changed
        key = "traceparent" if "traceparent" in entries else next(reversed(entries), None)
    count = len(entries)
    pos = 1 + (1 if count < 0x80 else len(encode_varint(count)))  # the id (one byte), the count
    start = stop = len(payload)
    for name, value in entries.items():
        pos += 1 + len(name)  # a key is at most 64 ASCII bytes: a one-byte length (§18.1)
        size = len(value)
        pos += 1 if size < 0x80 else len(encode_varint(size))
        if name == key:
            start, stop = pos, pos + size
            break
        pos += size
    window = Remembered(payload, metadata, entries, key, start, stop)
    window.misses = misses
    return window


def _decode(data: bytes, max_bytes: int, max_entries: int) -> tuple[int, dict[str, bytes]]:
    """:func:`decode_metadata` for any payload, checking each rule as it reads."""
    if len(data) > max_bytes:
        raise LimitExceededError(
            f"subscribeMetadata of {len(data)} bytes exceeds max_metadata_bytes={max_bytes}",
            limit="max_metadata_bytes",
        )
    end = len(data)
    try:
        if end >= 2 and data[0] < 0x80 and data[1] < 0x80:  # one-byte id and count: inline (§2.1)
            subscriber, count, pos = data[0], data[1], 2
        else:
            subscriber, pos = decode_varint(data, 0, end)
            count, pos = decode_varint(data, pos, end)
        if count > max_entries:
            raise LimitExceededError(
                f"subscribeMetadata with {count} entries exceeds max_metadata_entries={max_entries}",
                limit="max_metadata_entries",
            )
        entries: dict[str, bytes] = {}
        for _ in range(count):
            length = data[pos]  # past the end: IndexError, a truncated payload
            if length < 0x80:  # a key is at most 64 bytes: its length is one byte (§18.1)
                pos += 1
            else:
                length, pos = decode_varint(data, pos, end)
            stop = pos + length
            if stop > end:
                raise _malformed("a key runs past the payload")
            raw = data[pos:stop]
            key = _decoded_keys.get(raw) or _decode_key(raw)
            if key in entries:
                raise _malformed(f"key {key!r} twice")
            length = data[stop]
            if length < 0x80:
                pos = stop + 1
            else:
                length, pos = decode_varint(data, stop, end)
            stop = pos + length
            if stop > end:
                raise _malformed("a value runs past the payload")
            entries[key] = data[pos:stop]
            pos = stop
    except (Incomplete, IndexError):
        raise _malformed("truncated") from None
    except (ExtensionError, LimitExceededError):
        raise
    except RemoteProtocolError:
        raise _malformed("bad varint") from None
    if pos != end:
        raise _malformed(f"{end - pos} trailing bytes")
    return subscriber, entries
