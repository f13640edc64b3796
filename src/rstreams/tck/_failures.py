"""The TCK's failures and outcomes as exceptions: what a case raises when a rule breaks.

At the bottom of the TCK's modules (the environment, the test subscribers and the registry
all raise them), so it imports nothing of the TCK's own.
"""

from __future__ import annotations

import re
import unittest
from typing import Final

from rstreams.errors import ReactiveStreamsError

__all__ = [
    "CaseHung",
    "HardFailure",
    "RaisedOnPurpose",
    "RequiredRuleViolated",
    "SkipTest",
    "StreamAbandoned",
    "TCKFailure",
    "normalize_rule",
]


class SkipTest(ReactiveStreamsError, unittest.SkipTest):
    """A TCK case does not apply (untested rule, missing capability, optional failure)."""


_RULE_PREFIX: Final = re.compile(r"rule (\d+)\.(\d+)")


def normalize_rule(rule: str | None) -> str | None:
    """``"1.09"`` (the JVM tables' spelling) -> ``"1.9"`` (the specification's); None stays None."""
    if rule is None:
        return None
    major, _, minor = rule.partition(".")
    return f"{int(major)}.{int(minor)}"


class TCKFailure(ReactiveStreamsError, AssertionError):
    """A TCK case failed: the implementation under test broke the rule the message names.

    ``rule`` is that rule in the specification's numbering (``"3.12"``), taken from a
    message that starts with ``"rule X.Y"`` unless given; ``None`` when the message cites
    none (a set-up check, or the TCK's own contract with the implementer).
    """

    def __init__(self, message: str = "", *, rule: str | None = None) -> None:
        super().__init__(message)
        match = _RULE_PREFIX.match(message)
        self.rule = rule if rule is not None else f"{match[1]}.{int(match[2])}" if match else None


class HardFailure(TCKFailure):
    """A failure that fails even an optional case (the JVM TCK's ``optional_spec104`` does)."""


class RequiredRuleViolated(HardFailure):
    """An optional case found a required rule broken: reported as ``violated``, a failure."""


class CaseHung(HardFailure):
    """A case ran past ``case_timeout``; the message says what was observed meanwhile."""


class RaisedOnPurpose(ReactiveStreamsError):
    """What a TCK subscriber raises from ``on_next`` to see the publisher take it as a cancel
    (rule 2.13); it may travel back out of the ``request()`` that delivered the element."""


class StreamAbandoned(ReactiveStreamsError):
    """Raised from a TCK subscriber's ``on_next`` into a publisher that will not stop.

    After the TCK cancelled a subscription (or closed the case), a stream that keeps
    delivering past the runaway limit is told to stop the only way a thread can be: the
    next ``on_next`` raises this, which unwinds a delivery loop that does not catch it,
    and which a publisher that does catch it must take as a cancel (rule 2.13).
    """
