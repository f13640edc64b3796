"""WebSocket bytes for tests that play a peer by hand (RFC 6455): a client's masked binary message
and a server's answer to an opening handshake."""

from __future__ import annotations

import asyncio
import base64
import hashlib

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
"""RFC 6455 §1.3: appended to the client's key for the server's Sec-WebSocket-Accept."""


def masked(payload: bytes) -> bytes:
    """One binary message from a client, masked with the key 0 (so its bytes stay as they are)."""
    size = len(payload)
    if size < 126:
        head = bytes([0x82, 0x80 | size])
    elif size < 1 << 16:
        head = bytes([0x82, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([0x82, 0x80 | 127]) + size.to_bytes(8, "big")
    return head + bytes(4) + payload


async def accept_upgrade(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Read a client's opening handshake and answer 101 for ``rsio.v0`` (nothing checked)."""
    request = await reader.readuntil(b"\r\n\r\n")
    key = next(
        line.split(b":", 1)[1].strip()
        for line in request.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: rsio.v0\r\n\r\n"
    )
