"""docs/observability.md lists exactly the metrics /metrics exposes, with their types and labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rstreams.observe import ServerMetrics
from rstreams.observe._prometheus import families

pytestmark = pytest.mark.timeout(30)

pytest.importorskip("prometheus_client")

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def documented() -> dict[str, tuple[str, set[str]]]:
    block = re.search(r"<!-- metrics -->\n(.*?)<!-- /metrics -->", DOC.read_text(), re.S)
    assert block, "docs/observability.md lost its <!-- metrics --> table"
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in block.group(1).splitlines()[2:]:
        name, kind, labels = (cell.strip() for cell in line.strip("|").split("|")[:3])
        names = re.sub(r"\([^)]*\)", "", labels)  # label values are shown in parentheses
        rows[name.strip("`")] = (kind, set(re.findall(r"`([a-z_]+)`", names)))
    return rows


def exposed() -> dict[str, tuple[str, set[str]]]:
    metrics = ServerMetrics()
    conn = metrics.connection()
    metrics.opened(conn)
    conn.stream_opened("p", "p", 1, 5).ended("error", "x")
    conn.goodbye("", sent=True)
    reader = {"position": 1, "lag": 2}
    row = {"first": 1, "end": 3, "elements": 2, "bytes": 8, "capacity": 9, "trimmed": 1, "pending": 0}
    log = {**row, "readers": {"q": reader}, "staged_bytes": 0, "expired_uploads": 0}
    metrics.sections["replay"] = lambda: {"logs": {"results": log}}
    query = {"batch_rows": 5, "batch_seconds": 0.5, "input_rows_per_second": 9.0, "rows_behind": 3}
    query.update(processed_rows_per_second=10.0, batches=2, rows=9)
    metrics.sections["spark"] = lambda: {"queries": {"q": query}}
    found: dict[str, tuple[str, set[str]]] = {}
    for family in families(metrics.snapshot(streams=False)):
        name = family.name + ("_total" if family.type == "counter" else "")
        labels = {label for sample in family.samples for label in sample.labels}
        found[name] = (family.type, labels)
    return found


def test_the_table_is_the_exposition() -> None:
    assert documented() == exposed()
