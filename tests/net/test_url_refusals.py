"""tests/net/url_refusals.json: the parts of an RS.io URL refused by name, as the three bindings word it.

Java (RsioUrlTest) and JavaScript (js/test/url-refusals.test.mjs) read the same file, so a
refusal reads the same byte for byte in each.
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
    """The whole message, user part hidden, Python-quoted URL and part, the scheme's form and hint."""
    with pytest.raises(ValueError, match="URL does not take") as caught:
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
