"""Publisher names and how a serving side finds the Publisher for one.

A publisher name is a path plus optional query parameters, like a URL without a
scheme: ``sensors/temp?from=100`` is path ``sensors/temp`` with ``{"from": "100"}``.
The draft leaves names opaque; this convention is ours (PROTOCOL.md states it).

What a side offers (``serve(url, publishers)``, ``connect(url, publishers=...)``) is either

* a mapping from a name or a pattern to a Publisher or to a factory ``(params) ->
  Publisher``. A pattern has ``{field}`` placeholders, each matching one path segment
  (``sensors/{id}``); the matched fields join the query parameters in ``params``.
  Exact names are tried first, then patterns in the order given; or
* a callable ``(path, params) -> Publisher | None``; ``None`` means "no such publisher".

A path is compared segment by segment, each percent-decoded (RFC 3986, PROTOCOL.md §5.5): the
requested ``a%20b`` and the offered ``a b`` (or ``a%20b``) are the same name, and ``%2F`` is a
``/`` inside one segment, so ``files/a%2Fb`` matches ``files/{name}`` with ``name`` ``a/b``.

Any of those targets may be wrapped as ``with_codec(target, codec)`` to give that
publisher its own element codec instead of the connection's.

An unknown name becomes that subscription's ``onError`` (the connection stays up); so
does a factory that raises (its message is not sent to the peer, only its type, so no
internals leak). A name the side offers only as a channel (extension channels, PROTOCOL.md
§21) is unknown to a plain subscribe too, but its refusal says it is a channel
(:meth:`Router.offer_channels`).
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

from rstreams.api import Publisher
from rstreams.errors import ReactiveStreamsError
from rstreams.net._codec import RAW as _RAW
from rstreams.net._codec import Codec

__all__ = [
    "MalformedNameError",
    "NameTable",
    "Offer",
    "PublisherFactory",
    "Router",
    "UnknownPublisherError",
    "WithCodec",
    "split_name",
    "with_codec",
]

PublisherFactory: TypeAlias = Callable[[dict[str, str]], Publisher[Any]]


@dataclasses.dataclass(frozen=True, slots=True)
class WithCodec:
    """A Publisher or factory served with its own codec; made by :func:`with_codec`."""

    target: Publisher[Any] | PublisherFactory
    codec: Codec[Any] | None
    batched: bool = False


def with_codec(
    target: Publisher[Any] | PublisherFactory,
    codec: Codec[Any] | None,
    *,
    batched: bool = False,
    content_type: str | None = None,
) -> WithCodec:
    """Serve ``target`` (a Publisher or a factory) with ``codec`` (``None``: raw bytes).

    ``batched=True`` (fixed-size codecs only): the Publisher emits *lists* of elements;
    each list is encoded in one ``codec.encode_many`` call and sent packed. The serving
    side requests one list at a time from it (its demand counts lists) and sends the
    elements as far as the peer's demand (counted in elements) allows, holding the rest
    of a list until the peer asks for more.

    ``content_type``: the media type to announce to subscribers (PROTOCOL.md §17) instead of
    the codec's own ``media_type``, e.g. ``with_codec(images, None, content_type="image/png")``
    for a publisher of raw bytes.
    """
    if not (callable(getattr(target, "subscribe", None)) or callable(target)):
        raise TypeError(f"with_codec() needs a Publisher or a factory, got {target!r}")
    if codec is not None and not isinstance(codec, Codec):
        raise TypeError(f"with_codec() needs a Codec or None, got {codec!r}")
    if batched and (codec is None or not codec.element_size):
        raise ValueError("with_codec(batched=True) needs a fixed-size codec (element_size > 0), e.g. INT64")
    if content_type is not None:
        codec = dataclasses.replace(codec if codec is not None else _RAW, media_type=content_type)
    return WithCodec(target, codec, batched)


Target: TypeAlias = "Publisher[Any] | PublisherFactory | WithCodec"
Offer: TypeAlias = Mapping[str, Any] | Callable[[str, dict[str, str]], Any]
"""A mapping of names/patterns to :data:`Target` values, or a callable ``(path, params)``
returning a Publisher, a :class:`WithCodec` or ``None``. Values are typed ``Any`` so that
a dict mixing Publishers and factories type-checks; they are checked when the offer is made."""

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

_Route: TypeAlias = "tuple[Publisher[Any] | None, PublisherFactory | None, Codec[Any] | None, bool]"
"""A target taken apart once: the Publisher or the factory (the other is ``None``), its codec,
whether it is batched."""


def _route(target: Target, codec: Codec[Any] | None) -> _Route:
    """``target`` taken apart (``codec``: the side's, unless ``with_codec`` gives its own)."""
    batched = False
    if isinstance(target, WithCodec):
        codec, batched, target = target.codec, target.batched, target.target
    if callable(getattr(target, "subscribe", None)):
        return target, None, codec, batched  # type: ignore[return-value]
    return None, target, codec, batched  # type: ignore[return-value]


class UnknownPublisherError(ReactiveStreamsError, LookupError):
    """No publisher is offered under the requested name (``channel``: the name is a channel's);
    its text is :func:`unknown_message`'s."""

    def __init__(self, name: str, *, channel: bool = False) -> None:
        super().__init__(unknown_message(name, channel=channel))
        self.name = name


class MalformedNameError(ReactiveStreamsError, ValueError):
    """A name that matches what is offered but is malformed (PROTOCOL.md §5.5, :func:`name_fault`):
    its subscribe is refused with onError code 1 and this text, which names the fault."""


def unknown_message(name: str, *, channel: bool = False) -> str:
    """What a subscribe for ``name`` is refused with when nothing is offered under it (PROTOCOL.md
    §5.5): ``no publisher named 'PATH'``, ``PATH`` the name's path as written (up to its first
    ``?``, not decoded, not escaped), the same text in every binding; ``channel``: when the side
    offers the name as a channel, which a plain subscribe never reaches (§21.3). The metrics
    (:mod:`rstreams.observe`) and the ``rstreams`` command tell the refusal by its start."""
    path = name.partition("?")[0]
    if channel:
        return f"no publisher named '{path}' ('{path}' is a channel: open it as one, PROTOCOL.md §21.3)"
    return f"no publisher named '{path}'"


def failed_message(name: str, *, kind: str = "publisher") -> str:
    """What a subscribe for ``name`` (a channel open: ``kind`` ``"channel"``) is refused with,
    code 9 (PROTOCOL.md §19.2), when its factory raised: ``publisher 'PATH' could not be
    created: its factory failed (PROTOCOL.md §19.2)``, ``PATH`` as in :func:`unknown_message`,
    the same text in every binding. Not the error's text nor its type: those stay in the
    serving side's log, since an exception's text can hold what the peer must not see (a
    path, a query, a credential; docs/security.md)."""
    path = name.partition("?")[0]
    return f"{kind} '{path}' could not be created: its factory failed (PROTOCOL.md §19.2)"


def subscribe_failed_message(name: str) -> str:
    """What a subscribe for ``name`` is refused with, code 9 (PROTOCOL.md §19.2), when its
    publisher's ``subscribe()`` raised (rule 1.9: it must return normally): ``publisher 'PATH'
    could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)``, ``PATH`` as in
    :func:`unknown_message`, the same text in every binding; as for :func:`failed_message`, not
    the error's text nor its type (the serving side logs them)."""
    path = name.partition("?")[0]
    return f"publisher '{path}' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)"


def split_name(name: str) -> tuple[str, dict[str, str]]:
    """``"a/b?x=1&y=2"`` -> ``("a/b", {"x": "1", "y": "2"})``; percent-escapes are decoded
    (the path's segment by segment, joined with ``/``: there ``%2F`` reads as ``/``, while
    matching keeps it inside its segment, PROTOCOL.md §5.5).

    The query is read as RFC 3986 says (PROTOCOL.md §5.5): pairs split on ``&`` (empty ones
    skipped), each on its first ``=`` (none: the value is empty), each part percent-decoded;
    ``+`` stays a plus (a space is ``%20``). A name that gives a key twice, or whose query has a
    part that is not percent-encoded UTF-8, is malformed (:func:`name_fault`): a subscribe
    naming one is refused with onError (code 1) by :meth:`Router.find_batched`, a channel or a
    message naming one as :meth:`NameTable.lookup` says. So is a name whose path has a segment that
    is not percent-encoded UTF-8. Here a key given twice keeps its last value and a malformed part
    (or segment) stays as written."""
    cached = _split_cache.get(name)
    if cached is None:
        cached = _split(name)
    return cached[0], dict(cached[1])  # a fresh dict: callers may change it


def name_fault(name: str) -> str | None:
    """What makes ``name`` malformed (PROTOCOL.md §5.5), ``None`` when nothing does: the first of
    its path segments, then of its query parts, left to right (a key, then its value), that is
    not percent-encoded UTF-8 (``%`` without two hex digits after it, or escapes that decode to
    no UTF-8), or the first key given twice. Worded to follow ``NAME``: ``"gives the parameter
    'to' more than once"``, ``"has the path segment '%zz', which is not percent-encoded UTF-8"``."""
    cached = _split_cache.get(name)
    if cached is None:
        cached = _split(name)
    return cached[2]


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _decode(part: str) -> str | None:
    """``part`` percent-decoded, ``None`` when it is not percent-encoded UTF-8 (RFC 3986 §2.1)."""
    if "%" not in part:
        return part
    if _BAD_ESCAPE.search(part) is not None:
        return None
    try:
        return urllib.parse.unquote(part, errors="strict")
    except UnicodeDecodeError:
        return None


def _segments(path: str) -> tuple[tuple[str, ...], str | None]:
    """``path``'s segments, each percent-decoded (one that is not percent-encoded UTF-8 stays as
    written), and the first such segment as written (``None``: none is)."""
    if "%" not in path:
        return tuple(path.split("/")), None
    segments: list[str] = []
    bad: str | None = None
    for raw in path.split("/"):
        segment = _decode(raw)
        if segment is None:
            bad = raw if bad is None else bad
            segment = raw
        segments.append(segment)
    return tuple(segments), bad


def _key(path: str, segments: tuple[str, ...]) -> str:
    """The exact-match key of a path with these decoded ``segments``: the path itself when it has
    no escape, else the segments with ``%`` and ``/`` re-escaped, so equal segments give equal keys."""
    if "%" not in path:
        return path
    return "/".join(segment.replace("%", "%25").replace("/", "%2F") for segment in segments)


def _offered_segments(key: str) -> tuple[str, ...]:
    """An offered name's (or pattern's) segments, percent-decoded; a segment that is not
    percent-encoded UTF-8 could never be asked for, so it is refused (PROTOCOL.md §5.5)."""
    segments, bad = _segments(key)
    if bad is not None:
        raise ValueError(
            f"the name {key!r} cannot be offered: its path segment {bad!r} is not percent-encoded "
            f"UTF-8 (write '%' as %25, PROTOCOL.md §5.5)"
        )
    return segments


_Split: TypeAlias = "tuple[str, dict[str, str], str | None, str, tuple[str, ...]]"
"""A name parsed: its path decoded (segments joined with ``/``), its parameters, what makes it
malformed (:func:`name_fault`), its exact-match key (:func:`_key`), its decoded segments."""


def _split(name: str) -> _Split:
    """``name`` parsed (:data:`_Split`) and cached."""
    path, _, query = name.partition("?")
    params: dict[str, str] = {}
    segments, bad = _segments(path)
    fault = None if bad is None else f"has the path segment '{bad}', which is not percent-encoded UTF-8"
    if query:
        for pair in query.split("&"):
            if not pair:  # "a?x=1&": no empty key
                continue
            raw_key, _, raw_value = pair.partition("=")
            key = _decode(raw_key)
            if key is None:
                fault = fault or _not_utf8(raw_key)
                key = raw_key
            elif key in params:
                fault = fault or f"gives the parameter '{key}' more than once"
            value = _decode(raw_value)
            if value is None:
                fault = fault or _not_utf8(raw_value)
                value = raw_value
            params[key] = value
    cached = "/".join(segments), params, fault, _key(path, segments), segments
    if len(_split_cache) >= _SPLIT_CACHE_SIZE:
        _split_cache.clear()
    _split_cache[name] = cached
    return cached


def _not_utf8(part: str) -> str:
    return f"has the query part '{part}', which is not percent-encoded UTF-8"


def malformed_message(name: str, fault: str, what: str = "publisher") -> str:
    """What a subscribe to ``name`` (``what``: a publisher's, a channel's or a message's name),
    malformed by ``fault`` (:func:`name_fault`), is refused with (PROTOCOL.md §5.5)."""
    return f"{what} name '{name}' {fault} (PROTOCOL.md §5.5)"


_SPLIT_CACHE_SIZE = 1024
_split_cache: dict[str, _Split] = {}
"""Names seen recently (request/response repeats the same few names): parsing a query costs more
than the rest of serving a request."""


_Compiled: TypeAlias = "tuple[re.Pattern[str] | str, ...]"
"""A pattern's segments: a decoded literal (``str``) or a regex for one with ``{field}`` placeholders."""


def _compile(pattern: str) -> _Compiled:
    """``pattern`` taken apart into segments; a literal one (or the text around a placeholder) is
    percent-decoded like a requested segment; a field matches one whole decoded segment's text."""
    compiled: list[re.Pattern[str] | str] = []
    for segment in pattern.split("/"):
        if _PLACEHOLDER.search(segment) is None:
            compiled.append(_offered_segments(segment)[0])
            continue
        parts: list[str] = []
        last = 0
        for match in _PLACEHOLDER.finditer(segment):
            parts.append(re.escape(_offered_segments(segment[last : match.start()])[0]))
            parts.append(f"(?P<{match.group(1)}>.+)")
            last = match.end()
        parts.append(re.escape(_offered_segments(segment[last:])[0]))
        compiled.append(re.compile("".join(parts), re.DOTALL))
    return tuple(compiled)


def _fields(pattern: _Compiled, segments: tuple[str, ...]) -> dict[str, str] | None:
    """The fields of ``pattern`` matched by a name's decoded ``segments``, ``None``: no match."""
    if len(pattern) != len(segments):
        return None
    fields: dict[str, str] = {}
    for want, segment in zip(pattern, segments, strict=True):
        if isinstance(want, str):
            if want != segment:
                return None
            continue
        match = want.fullmatch(segment)
        if match is None:
            return None
        fields.update(match.groupdict())
    return fields


V = TypeVar("V")


def _check_name(key: str) -> None:
    """A name offered must be reachable: what follows a ``?`` in a requested name is its
    parameters, so an offered name holding one could never be matched."""
    if "?" in key:
        raise ValueError(
            f"the name {key!r} cannot be offered: '?' starts a requested name's parameters "
            f"(offer {key.partition('?')[0]!r}; its factory gets the parameters)"
        )


def _entry_key(
    names: Mapping[str, str], patterns: Sequence[tuple[_Compiled, object]], keys: Sequence[str], name: str
) -> str:
    """The entry ``name`` matches, as written: the exact name (``names``: decoded key -> as
    written) or the first ``{field}`` pattern (``keys``, in the order of ``patterns``) its decoded
    segments match; ``"(unknown)"`` when none does. A bounded label for metrics."""
    cached = _split_cache.get(name)
    if cached is None:
        cached = _split(name)
    exact = names.get(cached[3])
    if exact is not None:
        return exact
    for (compiled, _), key in zip(patterns, keys, strict=True):
        if _fields(compiled, cached[4]) is not None:
            return key
    return "(unknown)"


class NameTable(Generic[V]):
    """Names and ``{field}`` patterns mapped to values, matched like publisher names: exact
    names first, then patterns in the order given (message handlers, PROTOCOL.md §20)."""

    def __init__(self, entries: Mapping[str, V]) -> None:
        self._exact: dict[str, V] = {}  # by _key: a name's segments, decoded
        self._names: dict[str, str] = {}  # _key -> the name as written
        self._patterns: list[tuple[_Compiled, V]] = []
        self._keys: list[str] = []  # the patterns as written, in the order of _patterns
        for key, value in entries.items():
            if not isinstance(key, str):
                raise TypeError(f"names are str such as 'events/{{kind}}', got {key!r}")
            _check_name(key)
            if _PLACEHOLDER.search(key):
                self._patterns.append((_compile(key), value))
                self._keys.append(key)
            else:
                exact = _key(key, _offered_segments(key))
                self._exact[exact] = value
                self._names[exact] = key

    def lookup(self, name: str) -> tuple[V, dict[str, str], str | None] | None:
        """The value for ``name`` (``path?query``), its parameters (query and matched fields)
        and what makes ``name`` malformed (:func:`name_fault`; ``None``: nothing does), or
        ``None`` when nothing matches. A channel open or a message whose name matches and is
        malformed is refused (PROTOCOL.md §5.5: onError code 1, or the message dropped); an
        unknown name is unknown whatever its query."""
        cached = _split_cache.get(name)
        if cached is None:
            cached = _split(name)
        params, fault = dict(cached[1]), cached[2]
        value = self._exact.get(cached[3])
        if value is not None:
            return value, params, fault
        for pattern, candidate in self._patterns:
            fields = _fields(pattern, cached[4])
            if fields is not None:
                params.update(fields)
                return candidate, params, fault
        return None

    def key(self, name: str) -> str:
        """The entry ``name`` matches as written (the exact name or the ``{field}`` pattern),
        ``"(unknown)"`` when none does: a bounded label for metrics, like :meth:`Router.pattern`."""
        return _entry_key(self._names, self._patterns, self._keys, name)


class Router:
    """Resolves publisher names against what one side offers."""

    def __init__(self, offer: Offer | None, codec: Codec[Any] | None = None) -> None:
        self._codec = codec
        self._exact: dict[str, _Route] = {}  # by _key; taken apart once, not on every subscribe
        self._names: dict[str, str] = {}  # _key -> the name as written
        self._patterns: list[tuple[_Compiled, _Route]] = []
        self._keys: list[str] = []  # the patterns as written, in the order of _patterns
        self._function: Callable[[str, dict[str, str]], Publisher[Any] | WithCodec | None] | None = None
        self._channels: NameTable[Any] | None = None  # see offer_channels
        if offer is None:
            return
        if isinstance(offer, Mapping):
            for key, target in offer.items():
                if not isinstance(key, str):
                    raise TypeError(f"publisher names are str, got {key!r}")
                _check_name(key)
                if not (
                    isinstance(target, WithCodec)
                    or callable(getattr(target, "subscribe", None))
                    or callable(target)
                ):
                    raise TypeError(f"publisher {key!r} must map to a Publisher or a factory, got {target!r}")
                if _PLACEHOLDER.search(key):
                    self._patterns.append((_compile(key), _route(target, codec)))
                    self._keys.append(key)
                else:
                    exact = _key(key, _offered_segments(key))
                    self._exact[exact] = _route(target, codec)
                    self._names[exact] = key
        elif callable(offer):
            self._function = offer
        else:
            raise TypeError(f"publishers must be a mapping or a callable (path, params), got {offer!r}")

    def offer_channels(self, channels: NameTable[Any]) -> None:
        """The names the same side offers as channels (``channels=``, PROTOCOL.md §21): a plain
        subscribe to one of them that no publisher answers is refused saying that it is a
        channel, to be opened as one (:func:`unknown_message`). A publisher of that name wins."""
        self._channels = channels if channels._exact or channels._patterns else None

    def resolve(self, name: str) -> tuple[Publisher[Any], Codec[Any] | None]:
        """The Publisher for ``name`` and its codec; raises :class:`UnknownPublisherError`,
        :class:`MalformedNameError` or whatever the factory raised."""
        publisher, codec, _ = self.resolve_batched(name)
        return publisher, codec

    def resolve_batched(self, name: str) -> tuple[Publisher[Any], Codec[Any] | None, bool]:
        """Like :meth:`resolve`, plus whether the Publisher emits batches (``with_codec(batched=True)``)."""
        found = self.find_batched(name)
        if found is None:
            raise UnknownPublisherError(name)
        return found

    def find_batched(self, name: str) -> tuple[Publisher[Any], Codec[Any] | None, bool] | None:
        """Like :meth:`resolve_batched`, but ``None`` when nothing is offered under ``name``: no
        exception, since refusing unknown names is what a flooding peer makes a server do. The
        one exception: :class:`UnknownPublisherError` saying so for a name offered only as a
        channel (:meth:`offer_channels`).

        A name that matches and is malformed (§5.5: a path segment or a query part that is not
        percent-encoded UTF-8, a query key given twice; :func:`name_fault`) raises
        :class:`MalformedNameError`, its factory not called (the subscribe is refused with code 1
        and that text); an unknown name is unknown (``None``) whatever its query. A function
        offer is the factory too: it is not called for a malformed name, which is refused with
        code 1 whether it would match or not (its parameters are not what the peer meant, so
        there is nothing to look up)."""
        cached = _split_cache.get(name)  # split_name's common case, inlined: once per subscribe
        if cached is None:
            cached = _split(name)
        path, params = cached[0], dict(cached[1])
        route: _Route | None
        if self._function is not None:
            if cached[2] is not None:
                raise MalformedNameError(malformed_message(name, cached[2]))
            target = self._function(path, params)
            route = None if target is None else _route(target, self._codec)
        else:
            route = self._exact.get(cached[3])
            if route is None and self._patterns:
                route = self._match(cached[4], params)
        if route is None:
            if self._channels is not None and self._channels.lookup(name) is not None:
                raise UnknownPublisherError(name, channel=True)
            return None
        if cached[2] is not None:  # a malformed name (§5.5): refused with code 1
            raise MalformedNameError(malformed_message(name, cached[2]))
        publisher, factory, codec, batched = route
        if factory is not None:
            publisher = factory(params)
        return publisher, codec, batched  # type: ignore[return-value]

    def pattern(self, name: str) -> str:
        """The key of the offer that ``name`` resolves by: the exact name or the ``{field}``
        pattern as written; ``"*"`` for a function offer, ``"(unknown)"`` when nothing matches.
        A bounded label for metrics (:mod:`rstreams.observe`), however many names clients ask for."""
        if self._function is not None:
            return "*"
        return _entry_key(self._names, self._patterns, self._keys, name)

    def _match(self, segments: tuple[str, ...], params: dict[str, str]) -> _Route | None:
        """The target of the first ``{field}`` pattern a name's decoded ``segments`` match (its
        fields added to ``params``), or ``None``."""
        for pattern, candidate in self._patterns:
            fields = _fields(pattern, segments)
            if fields is not None:
                params.update(fields)
                return candidate
        return None
