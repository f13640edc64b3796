"""tests/net/url_refusals.json: RS.io URLs as the three bindings read them (PROTOCOL.md §1.1).

Java (RsioUrlTest) and JavaScript (js/test/url-refusals.test.mjs) read the same file, so a URL
parses to the same parts, and a refusal reads the same byte for byte, in each.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from rstreams.net import parse_url

_CASES = json.loads((pathlib.Path(__file__).parent / "url_refusals.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", _CASES["refused"], ids=lambda case: case["url"])
def test_a_refused_url_reads_as_the_shared_table_says(case: dict[str, str]) -> None:
    """The whole message: the URL Python-quoted, its user part hidden, the part at fault, how to
    write it, PROTOCOL.md §1.1."""
    with pytest.raises(ValueError, match=r"\(PROTOCOL\.md §1\.1\)$") as caught:
        parse_url(case["url"])
    assert str(caught.value) == case["message"]


@pytest.mark.parametrize("case", _CASES["accepted"], ids=lambda case: case["url"])
def test_an_accepted_url_of_the_shared_table_parses_to_its_parts(case: dict[str, Any]) -> None:
    """The parts each scheme takes, scheme and host in lower case, an IPv6 host without its
    brackets; the endpoint written back parses to the same."""
    endpoint = parse_url(case["url"])
    parts = (endpoint.scheme, endpoint.host, endpoint.port, endpoint.path, endpoint.url)
    assert parts == (case["scheme"], case["host"], case["port"], case["path"], case["written"])
    assert parse_url(endpoint.url) == endpoint
