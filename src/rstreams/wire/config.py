"""Limits and options of one RS.io connection (PROTOCOL.md §11)."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["ConnectionConfig"]

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionConfig:
    """Everything a :class:`~rstreams.wire.connection.Connection` may be told; immutable.

    Limits guard *this* endpoint against its peer; what happens when the peer exceeds one
    is in PROTOCOL.md §11. All sizes are in bytes.
    """

    extensions: frozenset[int] = frozenset()
    """Extension ids this endpoint supports; the active set is this ∩ the peer's hello (§4.4)."""

    disabled_extensions: frozenset[int] = frozenset()
    """Extension ids this endpoint never lists, even those the asyncio layer
    (:mod:`rstreams.net`) offers by default (error-codes, content-types, metadata): a way to
    behave like an endpoint that predates them."""

    max_element_size: int = 16 * MiB
    """Largest element received, whole or reassembled, and largest payload of any one frame.
    16 MiB is RSocket's frame cap: big enough for any message, small enough to buffer."""

    split_threshold: int = 64 * KiB
    """Elements we send that are larger are split into parts of this size (§8), so another
    stream waits at most one part (~20 µs on loopback). 64 KiB follows tmontgomery's
    "fragments fit a 2-byte length" review comment on the draft."""

    max_parts_in_flight: int = 64
    """Split elements being reassembled at once, over all subscriptions of the connection."""

    max_reassembly_bytes: int = 64 * MiB
    """Bytes held in partially received elements, over the whole connection (>= max_element_size)."""

    max_subscriptions: int = 1024
    """Subscriptions the peer may hold open on us at once; more are refused with onError."""

    max_name_length: int = 1024
    """Longest publisher name (UTF-8 bytes) accepted in subscribe; longer ones are refused."""

    max_string_length: int = 64 * KiB
    """Longest string of any kind on the wire; a longer length prefix is a framing error."""

    max_extensions: int = 64
    """Most extension ids a hello may list."""

    max_metadata_bytes: int = 16 * KiB
    """Largest subscribeMetadata payload accepted (extension metadata, §18); more is a connection
    error. A traceparent is 55 bytes, a tracestate at most 512: 16 KiB leaves room for headers."""

    max_metadata_entries: int = 64
    """Most entries one subscribeMetadata may carry (§18)."""

    max_messages_in_flight: int = 16
    """Message credit granted to the peer (extension messages, PROTOCOL.md §20): messages it
    may send before their handlers have run; each is at most ``max_string_length`` bytes, so
    this bounds what the peer can make us hold (16 times 64 KiB = 1 MiB by default)."""

    max_closed_streams: int = 4096
    """How many recently closed ids are remembered, so that late sends on them are dropped
    quietly instead of raising (h2 keeps the same kind of record)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in ("extensions", "disabled_extensions") and (type(value) is not int or value < 1):
                raise ValueError(f"{f.name} must be an int >= 1, got {value!r}")
        if self.max_reassembly_bytes < self.max_element_size:
            raise ValueError("max_reassembly_bytes must be >= max_element_size")
        if self.max_name_length > self.max_string_length:
            raise ValueError("max_name_length must be <= max_string_length")
        for name in ("extensions", "disabled_extensions"):
            extensions: object = getattr(self, name)
            if not isinstance(extensions, frozenset) or any(
                type(e) is not int or not 0 <= e < 2**64 for e in extensions
            ):
                raise ValueError(f"{name} must be a frozenset of ints in 0..2**64-1")
