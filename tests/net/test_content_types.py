"""Content types over a real connection (extension content-types, PROTOCOL.md §17): decoding by the
announced type, explicit codecs checked against it, and both directions with a peer without it."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.net import (
    FLOAT64,
    INT64,
    JSON,
    MSGPACK,
    RAW,
    UTF8,
    Codec,
    ContentTypeError,
    DecodeError,
    connect,
    serve,
    with_codec,
)
from rstreams.wire import ConnectionConfig

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OLD = ConnectionConfig(disabled_extensions=frozenset({4}))


def _values(*items: Any) -> Any:
    return lambda params: rstreams.from_iterable(items)


OFFER = {
    "json": with_codec(_values({"a": 1}, [2, "é"]), JSON),
    "text": with_codec(_values("hé", ""), UTF8),
    "ints": with_codec(_values(1, -2, 3), INT64),
    "floats": with_codec(_values(1.5), FLOAT64),
    "msgpack": with_codec(_values({"a": [1, b"x"]}), MSGPACK),
    "raw": _values(b"ab"),
    "png": with_codec(_values(b"\x89PNG"), None, content_type="image/png"),
}


async def _all(conn: Any, name: str, **options: Any) -> list[Any]:
    return [x async for x in conn.publisher(name, **options)]


async def test_publisher_without_codec_decodes_by_the_announced_type() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        assert await _all(conn, "json") == [{"a": 1}, [2, "é"]]
        assert await _all(conn, "text") == ["hé", ""]
        assert await _all(conn, "ints") == [1, -2, 3]
        assert await _all(conn, "ints", batched=True) == [[1, -2, 3]]
        assert await _all(conn, "floats") == [1.5]
        assert await _all(conn, "msgpack") == [{"a": [1, b"x"]}]
        assert await _all(conn, "raw") == [b"ab"]  # nothing announced: bytes
        assert await _all(conn, "png") == [b"\x89PNG"]  # a type without a codec: bytes
        answer: Any = await conn.request("json")
        assert answer == {"a": 1}


async def test_an_explicit_codec_must_match_the_announcement() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        assert await _all(conn, "json", codec=JSON) == [{"a": 1}, [2, "é"]]
        assert await _all(conn, "json", codec=RAW) == [b'{"a":1}', b'[2,"\\u00e9"]']
        with pytest.raises(ContentTypeError) as caught:
            await _all(conn, "json", codec=INT64)
        text = str(caught.value)
        assert "'application/json'" in text and "'application/vnd.rsio.int64le'" in text and "§17" in text
        custom: Codec[bytes] = Codec(bytes, bytes)  # no media type: nothing to contradict
        assert await _all(conn, "json", codec=custom) == [b'{"a":1}', b'[2,"\\u00e9"]']


async def test_an_element_that_does_not_decode_names_the_publisher_the_type_and_codec_raw() -> None:
    """Bytes that are not the announced type end the subscription with a DecodeError (an rstreams
    error and a ValueError), not the decoder's bare error, which is its cause."""
    offer = {
        "bad-json": with_codec(_values(b"{oops"), None, content_type="application/json"),
        "bad-int": with_codec(_values(b"abc"), None, content_type="application/vnd.rsio.int64le"),
    }
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        for name, media_type, options in [
            ("bad-json", "application/json", {}),
            ("bad-json", "application/json", {"codec": JSON, "batched": True}),
            ("bad-int", "application/vnd.rsio.int64le", {}),
        ]:
            with pytest.raises(rstreams.ReactiveStreamsError) as caught:  # a DecodeError
                await _all(conn, name, **options)
            assert isinstance(caught.value, DecodeError) and isinstance(caught.value, ValueError)
            text = str(caught.value)
            assert repr(name) in text and repr(media_type) in text and "codec=RAW" in text, text
            assert caught.value.__cause__ is not None
        with pytest.raises(DecodeError, match=r"'bad-json'.*JSONDecodeError.*codec=RAW") as answer:
            await conn.request("bad-json")
        assert answer.value.publisher == "bad-json" and answer.value.media_type == "application/json"
        assert await conn.request("bad-json", codec=RAW) == b"{oops"


@pytest.mark.parametrize(("server_config", "client_config"), [(OLD, None), (None, OLD)])
async def test_a_peer_without_the_extension_gets_bytes_as_before(
    server_config: ConnectionConfig | None, client_config: ConnectionConfig | None
) -> None:
    async with (
        await serve("tcp://127.0.0.1:0", OFFER, config=server_config) as server,
        await connect(server.url, config=client_config) as conn,
    ):
        assert await _all(conn, "json") == [b'{"a":1}', b'[2,"\\u00e9"]']
        assert await _all(conn, "ints") == [
            b"\x01\x00\x00\x00\x00\x00\x00\x00",
            b"\xfe\xff\xff\xff\xff\xff\xff\xff",
            b"\x03\x00\x00\x00\x00\x00\x00\x00",
        ]
        assert await _all(conn, "json", codec=JSON) == [{"a": 1}, [2, "é"]]  # codecs work as before
        assert await _all(conn, "json", codec=UTF8) == ['{"a":1}', '[2,"\\u00e9"]']  # nor checked


async def test_an_element_its_codec_cannot_encode_ends_the_stream_saying_what_the_codec_takes() -> None:
    """A served element its codec cannot encode (or, with no codec, one that is not bytes) ends
    that stream with an EncodeError naming the codec, what it takes and what it got, the
    encoder's own words after them; the connection goes on serving."""

    def returns_text(item: Any) -> Any:
        return str(item)

    offer = {
        "text": with_codec(_values(b"x"), UTF8),
        "int": with_codec(_values("7"), INT64),
        "big": with_codec(_values(2**70), INT64),
        "batch": with_codec(lambda params: rstreams.just([1, "2"]), INT64, batched=True),
        "float": with_codec(_values("x"), FLOAT64),
        "json": with_codec(_values(object()), JSON),
        "mine": with_codec(_values(1), Codec(returns_text, bytes)),
        "dict": _values({"a": 1}),
        "floats": _values(1.5),
        "ok": with_codec(_values(1), INT64),
    }
    said = {
        "text": "EncodeError: an element does not encode with UTF8 (which takes str): got bytes (TypeError: ",
        "int": "EncodeError: an element does not encode with INT64 (which takes int from -2**63 to "
        "2**63 - 1): got str (struct.error: required argument is not an integer)",
        "big": "with INT64 (which takes int from -2**63 to 2**63 - 1): got int (struct.error: argument "
        "out of range)",
        "batch": "with INT64 (which takes int from -2**63 to 2**63 - 1): got a batch (struct.error: ",
        "float": "with FLOAT64 (which takes float or int): got str (struct.error: ",
        "json": "with JSON (which takes dict, list, str, int, float, bool or None): got object "
        "(TypeError: Object of type object is not JSON serializable)",
        "mine": "EncodeError: the codec's test_an_element_its_codec_cannot_encode_ends_the_stream_saying_"
        "what_the_codec_takes.<locals>.returns_text returned str, not bytes (a Codec's encode returns "
        "bytes)",
        "dict": "EncodeError: elements are bytes on the wire, got dict; pass codec=rstreams.net.JSON",
        "floats": "EncodeError: elements are bytes on the wire, got float; pass codec=rstreams.net.JSON",
    }
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        for name, text in said.items():
            with pytest.raises(rstreams.ReactiveStreamsError) as caught:
                await _all(conn, name, codec=RAW)
            assert f"remote publisher {name!r} failed: " in str(caught.value) and text in str(caught.value)
        assert await _all(conn, "ok") == [1]
