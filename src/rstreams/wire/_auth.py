"""The auth extension's payloads (PROTOCOL.md §15.1): credentials, as values and as bytes.

Sans-I/O and policy-free: checking credentials is the server's hook, run by the net driver.
Secrets stay out of every ``repr`` and every error message this module makes: a malformed
payload is reported by its shape (lengths, kinds), never by its content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from rstreams.errors import RemoteProtocolError
from rstreams.wire._errors import ExtensionError
from rstreams.wire._varint import Incomplete, decode_varint, encode_varint

__all__ = [
    "Credentials",
    "Token",
    "UserPassword",
    "as_credentials",
    "decode_credentials",
    "decode_subscribe_credentials",
    "encode_credentials",
    "encode_subscribe_credentials",
]

_TOKEN = 1
_USER_PASSWORD = 2


@dataclass(frozen=True, slots=True)
class Token:
    """A bearer token (credentials kind 1). Its ``repr`` hides the token.

    Raises:
        TypeError: ``token`` is not a str.
        ValueError: ``token`` cannot be encoded as UTF-8 (a lone surrogate); the message
            shows only the offending character.
    """

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        _check_text("token", self.token)

    def __repr__(self) -> str:
        return "Token(<hidden>)"


@dataclass(frozen=True, slots=True)
class UserPassword:
    """A user name and password (credentials kind 2). Its ``repr`` shows the user only.

    Raises:
        TypeError: ``user`` or ``password`` is not a str.
        ValueError: either cannot be encoded as UTF-8 (a lone surrogate); the message shows
            only the offending character.
    """

    user: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        _check_text("user", self.user)
        _check_text("password", self.password)

    def __repr__(self) -> str:
        return f"UserPassword(user={self.user!r}, password=<hidden>)"


Credentials: TypeAlias = Token | UserPassword
"""What a client presents (PROTOCOL.md §15.1)."""


def _check_text(what: str, value: object) -> None:
    if type(value) is not str:
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    value.encode()  # a lone surrogate raises UnicodeEncodeError (a ValueError) without echoing the text


def as_credentials(value: object) -> Credentials:
    """``"token"`` -> :class:`Token`, ``("user", "password")`` -> :class:`UserPassword`; credentials pass.

    Raises:
        TypeError: anything else (the message never shows the value).
    """
    if isinstance(value, Token | UserPassword):
        return value
    if isinstance(value, str):
        return Token(value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return UserPassword(value[0], value[1])
    raise TypeError(
        f"auth must be a token str, a (user, password) tuple of str, Token or UserPassword; "
        f"got a {type(value).__name__}"
    )


def _string(out: bytearray, text: str) -> None:
    data = text.encode()
    out += encode_varint(len(data))
    out += data


def encode_credentials(credentials: Credentials, out: bytearray | None = None) -> bytes:
    """The credentials' bytes (§15.1), appended to ``out`` when given."""
    buf = bytearray() if out is None else out
    if isinstance(credentials, Token):
        buf.append(_TOKEN)
        _string(buf, credentials.token)
    else:
        buf.append(_USER_PASSWORD)
        _string(buf, credentials.user)
        _string(buf, credentials.password)
    return bytes(buf)


def encode_subscribe_credentials(subscriber: int, credentials: Credentials) -> bytes:
    """A subscribeCredentials payload: ``subscriber`` varint, then the credentials (§15.1)."""
    return encode_credentials(credentials, bytearray(encode_varint(subscriber)))


def _malformed(what: str) -> ExtensionError:
    return ExtensionError(f"malformed {what} in an auth message", section="15.5")


def _read_string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    length, pos = decode_varint(data, pos, len(data))
    end = pos + length
    if end > len(data):
        raise _malformed(f"{what} (truncated: its length runs past the payload)")
    try:
        return data[pos:end].decode(), end
    except UnicodeDecodeError:
        raise _malformed(f"{what} (not UTF-8)") from None


def decode_credentials(data: bytes, pos: int = 0) -> Credentials:
    """Credentials from ``data[pos:]``, which they must fill exactly.

    Raises:
        ExtensionError: malformed (citing §15.5); the message shows no byte of the payload.
    """
    try:
        if pos >= len(data):
            raise _malformed("credentials (empty)")
        kind = data[pos]
        if kind == _TOKEN:
            token, pos = _read_string(data, pos + 1, "token")
            credentials: Credentials = Token(token)
        elif kind == _USER_PASSWORD:
            user, pos = _read_string(data, pos + 1, "user")
            password, pos = _read_string(data, pos, "password")
            credentials = UserPassword(user, password)
        else:
            raise _malformed(f"credentials (unknown kind {kind})")
    except Incomplete:
        raise _malformed("credentials (truncated)") from None
    except RemoteProtocolError as error:
        if isinstance(error, ExtensionError):
            raise
        raise _malformed("credentials (bad varint)") from None
    if pos != len(data):
        raise _malformed(f"credentials ({len(data) - pos} trailing bytes)")
    return credentials


def decode_subscribe_credentials(data: bytes) -> tuple[int, Credentials]:
    """``(subscriber, credentials)`` from a subscribeCredentials payload (§15.1)."""
    try:
        subscriber, pos = decode_varint(data, 0, len(data))
    except (Incomplete, RemoteProtocolError):
        raise _malformed("subscribeCredentials subscriber id") from None
    return subscriber, decode_credentials(data, pos)
