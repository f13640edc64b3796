"""docs/operators.md, checked against the code: one section per operator, each with the
operator's real signature, a marble diagram, its demand and its errors."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.demand import UNBOUNDED
from testkit import patience

DOC = Path(__file__).resolve().parents[2] / "docs" / "operators.md"

# Flow methods that are sinks or adapters, not operators (the README lists them apart too)
NOT_OPERATORS = {"subscribe", "pipe", "collect", "reduce", "count", "for_each", "iter_async", "iter_blocking"}
NOT_OPERATORS |= {"to_observable"}
FUNCTIONS = ["merge", "concat", "zip", "combine_latest", "race", "amb"]
"""The functions of several Publishers, documented beside the operators."""

pytestmark = pytest.mark.timeout(60)


def signature(name: str, fn: Callable[..., Any], *, method: bool) -> str:
    """``name(a, b=1, *, c=None)`` as the docs write it: no annotations, ``self`` left out,
    a default that is not a plain value written ``...``, ``2**63 - 1`` written ``UNBOUNDED``."""
    parts: list[str] = []
    starred = False
    for parameter in list(inspect.signature(fn).parameters.values())[1 if method else 0 :]:
        if parameter.kind is parameter.VAR_POSITIONAL:
            parts.append(f"*{parameter.name}")
            starred = True
            continue
        if parameter.kind is parameter.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        default = parameter.default
        if default is parameter.empty:
            parts.append(parameter.name)
        elif default == UNBOUNDED and type(default) is int:
            parts.append(f"{parameter.name}=UNBOUNDED")
        elif default is None or isinstance(default, bool | int | float | str):
            parts.append(f"{parameter.name}={default!r}")
        else:
            parts.append(f"{parameter.name}=...")
    return f"{name}({', '.join(parts)})"


def _code() -> dict[str, str]:
    """Operator name -> its signature, from the code."""
    found = {
        name: signature(name, getattr(rstreams.Flow, name), method=True)
        for name in dir(rstreams.Flow)
        if not name.startswith("_") and name not in NOT_OPERATORS
    }
    found |= {name: signature(name, getattr(rstreams, name), method=False) for name in FUNCTIONS}
    return found


def _sections() -> dict[str, tuple[str, str]]:
    """Operator name -> (the heading's signature, the section's text), from the docs."""
    text = DOC.read_text()
    found: dict[str, tuple[str, str]] = {}
    for match in re.finditer(r"^### `((\w+)\([^\n]*\))`\n(.*?)(?=^##|\Z)", text, re.M | re.S):
        found[match.group(2)] = (match.group(1), match.group(3))
    return found


def test_the_signature_renderer_knows_the_cases() -> None:
    """Defaults as values, ``...`` for sentinels, keyword-only markers, ``self`` dropped."""

    def fn(self: object, a: int, *, b: int = 2, c: object = object(), d: int = UNBOUNDED) -> None:
        return None

    assert signature("fn", fn, method=True) == "fn(a, *, b=2, c=..., d=UNBOUNDED)"


def test_every_operator_has_exactly_one_section() -> None:
    """The docs list every operator and function of several Publishers, and nothing else."""
    assert sorted(_sections()) == sorted(_code())


@pytest.mark.parametrize("name", sorted(_code()))
def test_each_section_matches_the_code(name: str) -> None:
    """The heading is the real signature; the section has a marble diagram, demand and errors."""
    heading, body = _sections()[name]
    assert heading == _code()[name]
    assert re.search(r"^```\n.+?\n```$", body, re.M | re.S), f"{name}: no marble diagram"
    assert "**Demand:**" in body and "**Errors:**" in body, f"{name}: demand or errors missing"


def test_the_runnable_example_prints_what_it_says() -> None:
    """The page's runnable example, run as written, prints the list its last comment shows
    (the debounce's timer is due before the sleep that follows the burst ends: asyncio runs
    timers in the order they are due, however late the loop is)."""
    import os
    import sys

    example = re.search(r"A runnable example:\n\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert example, "docs/operators.md lost its runnable example"
    promised = re.search(r"print\(await typed\)\s+# (.*)\n", example.group(1))
    assert promised, "the example's print no longer says what it prints"
    env = {**os.environ, "PYTHONPATH": str(DOC.parents[1] / "src")}
    done = patience.run([sys.executable, "-c", example.group(1)], 50, capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, promised.group(1)), done.stderr


def _recipes(flow: rstreams.Flow[int], pred: Callable[[int], bool]) -> dict[str, Any]:
    """The section "The peers' operators": its code block run over ``flow`` and ``pred``;
    the Flows it names."""
    block = re.search(r"## The peers' operators\n.*?```python\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/operators.md lost the peers' recipes"
    names: dict[str, Any] = {"rstreams": rstreams, "flow": flow, "pred": pred}
    exec(block.group(1), names)  # the page's own lines, on purpose
    return names


def test_the_peers_recipes_do_what_their_comments_say() -> None:
    """Each line stands for the peer's operator its comment names."""
    flow = rstreams.just(1, 2, 3)
    made = _recipes(flow, lambda x: x > 1)
    assert patience.result(made["repeated"].collect()) == [1, 2, 3] * 3
    assert patience.result(made["mapped"].collect()) == [1, 2, 3]
    assert patience.result(made["nothing"].collect()) == []
    assert patience.result(made["any_"].collect()) == [True]
    assert patience.result(made["all_"].collect()) == [False]
    assert patience.result(made["with_index"].collect()) == [(0, 1), (1, 2), (2, 3)]
    assert patience.result(_recipes(flow, lambda x: x > 0)["all_"].collect()) == [True]
    assert patience.result(_recipes(flow, lambda x: x > 5)["any_"].collect()) == [False]
    failing = _recipes(rstreams.just(1).concat_with(rstreams.error(KeyError("k"))), bool)["mapped"]
    with pytest.raises(LookupError) as caught:
        patience.result(failing.collect())
    assert type(caught.value) is LookupError and isinstance(caught.value.args[0], KeyError)
