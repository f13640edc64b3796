"""docs/tck.md's case table is generated from the registry and must not drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(60)
def test_tck_doc_table_matches_the_registry() -> None:
    """`python docs/make_tck_docs.py --check` passes: every case is listed as registered."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_tck_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_every_stricter_entry_names_cases_that_exist() -> None:
    """Each "stricter than the JVM TCK" entry names a real verification, its cases, and a rule."""
    from rstreams.tck import (
        IdentityProcessorVerification,
        PublisherVerification,
        SubscriberBlackboxVerification,
        SubscriberWhiteboxVerification,
    )
    from rstreams.tck._stricter import STRICTER

    classes = {
        cls.__name__: cls
        for cls in (
            PublisherVerification,
            SubscriberWhiteboxVerification,
            SubscriberBlackboxVerification,
            IdentityProcessorVerification,
        )
    }
    assert len(STRICTER) >= 10
    for entry in STRICTER:
        assert entry.rule and entry.what and entry.why, entry
        assert entry.verification == "all" or entry.verification in classes, entry
        for case in entry.cases:
            cls = classes[entry.verification]
            assert case in {c.name for c in cls.tck_cases}, f"{entry.verification} has no case {case}"


def test_the_stricter_list_is_in_the_doc() -> None:
    """docs/tck.md shows the generated list (the --check test above keeps it current)."""
    text = (ROOT / "docs" / "tck.md").read_text(encoding="utf-8")
    assert "## Where this port is stricter than the JVM TCK" in text
    assert "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe" in text
