"""RS.io network conformance suite: scripted byte-level cases against any endpoint.

::

    python -m rstreams.conformance tcp://127.0.0.1:5000 --junit conformance.xml

Every case is a short script of sends and expectations tied to a sentence of PROTOCOL.md
or of the draft (spec/003), with pass/fail/skip as its outcome. A protocol monitor
checks every frame the endpoint sends in every case (order, demand, split elements,
nothing after goodbye). Endpoints offer the *conformance publishers*
(:func:`conformance_publishers`, docs/conformance.md) so that cases can exercise
streams; cases that need a missing one are skipped.
"""

from __future__ import annotations

from rstreams.conformance import cases as _cases  # noqa: F401 - registers the cases
from rstreams.conformance._case import AREAS as AREAS
from rstreams.conformance._case import CASES as CASES
from rstreams.conformance._case import Case as Case
from rstreams.conformance._case import CaseFailure as CaseFailure
from rstreams.conformance._case import Context as Context
from rstreams.conformance._case import Options as Options
from rstreams.conformance._case import Skip as Skip
from rstreams.conformance._publishers import ConformancePublishers as ConformancePublishers
from rstreams.conformance._publishers import SourceStats as SourceStats
from rstreams.conformance._publishers import conformance_publishers as conformance_publishers
from rstreams.conformance._publishers import element_bytes as element_bytes
from rstreams.conformance._runner import KINDS as KINDS
from rstreams.conformance._runner import CaseResult as CaseResult
from rstreams.conformance._runner import Outcome as Outcome
from rstreams.conformance._runner import catalogue_markdown as catalogue_markdown
from rstreams.conformance._runner import main as main
from rstreams.conformance._runner import probe as probe
from rstreams.conformance._runner import run as run
from rstreams.conformance._runner import run_case as run_case
from rstreams.conformance._runner import select as select
from rstreams.conformance._runner import write_junit as write_junit

__all__ = [
    "AREAS",
    "CASES",
    "KINDS",
    "Case",
    "CaseFailure",
    "CaseResult",
    "ConformancePublishers",
    "Context",
    "Options",
    "Outcome",
    "Skip",
    "SourceStats",
    "catalogue_markdown",
    "conformance_publishers",
    "element_bytes",
    "main",
    "probe",
    "run",
    "run_case",
    "select",
    "write_junit",
]

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
