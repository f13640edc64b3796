"""The examples a user copies from actually run."""

from __future__ import annotations

import ast
import asyncio
import sys
from pathlib import Path
from types import ModuleType

import pytest

from testkit import patience
from testkit.scripts import load_script

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name: str) -> ModuleType:
    return load_script(f"examples/{name}.py", f"example_{name}")


@pytest.mark.timeout(30)
def test_pipeline_example_never_pulls_beyond_its_window(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/pipeline.py: the unbounded source is pulled only as far as demand reaches."""
    example = _load("pipeline")
    asyncio.run(example.main(seconds=0.5))
    out = capsys.readouterr().out
    assert "done:" in out
    lines = int(out.split("done: ")[1].split(" summary")[0])
    # 64 lines of window + one batch in flight inside concat_map + filter/buffer prefetch
    batches_needed = lines // 4 + 64 // 4 + 2
    assert example.pulled <= (batches_needed + 2) * 40 * 2
    # what the last line claims: never further ahead of the lines consumed than demand allows
    assert 0 < example.most_ahead <= example.BOUND == 760
    assert f"at most {example.most_ahead} readings ahead" in out


@pytest.mark.timeout(120)
def test_tck_example_runs_programmatically() -> None:
    """examples/tck_example.py verifies its publisher without pytest and exits 0."""

    result = patience.run(
        [sys.executable, str(EXAMPLES / "tck_example.py")],
        110,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "0 failed" in result.stdout


@pytest.mark.timeout(30)
def test_messages_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/rsio_messages.py: handlers both ways, and a sender out of credit waits or fails."""
    asyncio.run(_load("rsio_messages").main())
    out = capsys.readouterr().out
    assert "out of credit: no message credit to send to 'slow'" in out
    assert "the client received: thanks" in out


@pytest.mark.timeout(30)
def test_channel_example_streams_answers_without_pulling_ahead(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/rsio_channel.py: answers come back for questions, and cancelling stops the source."""
    answers = asyncio.run(_load("rsio_channel").main())
    assert [a["answer"] for a in answers] == [7.0, -6.0, 14.0, 0.43, 11.0]
    assert "8 answers for 8 questions" in capsys.readouterr().out


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("example", "args", "says"),
    [
        ("spark_cluster", ["--rows", "2"], "--rows needs a whole number >= 3 (a third per server), got 2"),
        ("spark_cluster", ["--workers", "0"], "--workers needs a whole number >= 1, got 0"),
        ("spark_cluster", ["--demo", "--seconds", "0"], "--seconds needs a number > 0, got 0.0"),
        ("spark_bench", ["--rows", "0"], "--rows needs a whole number >= 1, got 0"),
        ("spark_bench", ["--batch-rows", "-5"], "--batch-rows needs a whole number >= 1, got -5"),
        ("spark_bench", ["--json-rows", "0"], "--json-rows needs a whole number >= 1, got 0"),
    ],
)
def test_spark_examples_refuse_bad_options_in_one_line(
    capsys: pytest.CaptureFixture[str], example: str, args: list[str], says: str
) -> None:
    """examples/spark_cluster.py and spark_bench.py: an option out of range exits 2 with one line
    naming it, before any Spark process starts."""
    pytest.importorskip("pyspark")
    with pytest.raises(SystemExit) as exited:
        _load(example).main(args)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"{example}.py: {says}\n"


@pytest.mark.timeout(120)
def test_conformance_offer_serves_every_publisher_the_suite_needs() -> None:
    """examples/conformance_offer.py under `rstreams serve --publishers`: the probe finds every
    conformance publisher, echo included (the offer's on_connection reaches serve), and the cases
    of the server as a subscriber pass against the command's own server."""
    import os

    from rstreams.conformance import CaseResult, Options, Outcome, probe, run, select

    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent / "src")}
    offer = str(EXAMPLES / "conformance_offer.py")
    with patience.serving("tcp://127.0.0.1:0", "--publishers", offer, env=env) as (_, url):

        async def judge() -> tuple[frozenset[str], list[CaseResult]]:
            return await probe(url, Options()), await run(url, Options(), cases=select("rv."))

        available, results = asyncio.run(judge())
    assert {"range", "fixed", "large", "error", "never", "infinite", "stats", "echo"} <= available
    assert results and all(r.outcome is Outcome.PASS for r in results), [
        (r.case.id, r.outcome, r.message) for r in results if r.outcome is not Outcome.PASS
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("example", "says"),
    [
        (
            "rsio_server_client",
            [
                "reading {'sensor': 'kitchen', 'seq': 100, 'value': 21.0}",
                "reading {'sensor': 'kitchen', 'seq': 104, 'value': 23.0}",
                "100000 squares, packed; the last is 9999800001",
            ],
        ),
        ("rsio_subprocess", ["[0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55", "child exited with 0"]),
        (
            "rsio_messages",
            ["the client received: thanks", "the server handled: click:0, click:1, click:2, key:q"],
        ),
        ("rsio_channel", ["{'op': '/', 'a': 3, 'b': 7} -> 0.43", "8 answers for 8 questions;"]),
    ],
)
def test_the_network_examples_run_as_their_docstrings_say(example: str, says: list[str]) -> None:
    """examples/rsio_server_client.py, rsio_subprocess.py, rsio_messages.py and rsio_channel.py,
    each in a process of its own as its docstring runs it (the last two also run in this
    process above, where the test looks at what they return)."""
    import os

    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent / "src")}
    done = patience.run(
        [sys.executable, str(EXAMPLES / f"{example}.py")],
        50,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    missing = [line for line in says if line not in done.stdout]
    assert not missing, done.stdout


RUN_BY = {
    "conformance_offer": "tests/test_examples.py",
    "my_publishers": "tests/test_examples.py",
    "pipeline": "tests/test_examples.py",
    "rsio_auth": "tests/net/test_auth_example.py",
    "rsio_channel": "tests/test_examples.py",
    "rsio_messages": "tests/test_examples.py",
    "rsio_resume": "tests/net/test_resume_example.py",
    "rsio_server_client": "tests/test_examples.py",
    "rsio_subprocess": "tests/test_examples.py",
    "spark_stream": "tests/test_examples.py",
    "tck_example": "tests/test_examples.py",
}
"""Each example and the test file that runs it whole."""

NOT_RUN = {
    "spark_bench": "a benchmark: four Spark queries of millions of rows (minutes); its option checks run",
    "spark_cluster": "a Spark master and two workers, three JVMs (minutes); its option checks run",
}
"""Examples too heavy for the suite, and why (run them by hand: their docstrings say how)."""


def test_every_example_is_run_by_a_test() -> None:
    examples = sorted(path.stem for path in EXAMPLES.glob("*.py"))
    assert sorted([*RUN_BY, *NOT_RUN]) == examples, "an example without a test (RUN_BY) or a reason (NOT_RUN)"
    root = EXAMPLES.parent
    unnamed = [name for name, test in RUN_BY.items() if f"{name}" not in (root / test).read_text()]
    assert not unnamed, unnamed


@pytest.mark.timeout(120)
def test_the_my_publishers_example_serves_what_its_docstring_says() -> None:
    """examples/my_publishers.py: its docstring's `rstreams serve` line in a process of its own,
    and each `rstreams subscribe` line printing what its comment says (on a free port)."""
    import json
    import os
    import shlex

    from testkit.scripts import ROOT

    doc = _load("my_publishers").__doc__
    assert doc
    lines = [line.strip() for line in doc.splitlines() if line.strip().startswith("rstreams ")]
    serve, *subscribes = lines
    argv = shlex.split(serve)
    assert argv[:3] == ["rstreams", "serve", "tcp://127.0.0.1:9000"] and len(subscribes) == 4, lines
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    file, _, name = argv[4].partition(":")
    with patience.serving("tcp://127.0.0.1:0", argv[3], f"{ROOT / file}:{name}", env=env) as (_, url):
        said = {}
        for line in subscribes:
            command, comment = (part.strip() for part in line.split("#", 1))
            subscribe = shlex.split(command.replace("tcp://127.0.0.1:9000", url))
            done = patience.run(
                [sys.executable, "-m", "rstreams", *subscribe[1:]],
                30,
                capture_output=True,
                text=True,
                env=env,
            )
            if comment.startswith("exit 1: "):  # the publisher's onError, printed as it is
                error = comment.removeprefix("exit 1: ").removesuffix(" ...")
                assert done.returncode == 1 and error in done.stderr, (line, done)
                continue
            assert (done.returncode, done.stderr) == (0, ""), line
            said[comment] = done.stdout.splitlines()
    squares, hello, planets = said
    assert said[squares] == squares.split(), squares
    assert said[hello] == [hello]
    assert planets == "one JSON object a line"
    assert all(isinstance(json.loads(row), dict) for row in said[planets]) and said[planets], said[planets]


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_the_spark_stream_example_publishes_every_square() -> None:
    """examples/spark_stream.py, in a process of its own as its docstring runs it: 5000 numbers in
    micro-batches of at most 1000 rows, every square published once on the sink log."""
    import os
    import shutil

    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17+")
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent / "src")}
    done = patience.run(
        [sys.executable, str(EXAMPLES / "spark_stream.py")], 500, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    batches = next(line for line in done.stdout.splitlines() if line.startswith("micro-batches: "))
    rows = ast.literal_eval(batches.removeprefix("micro-batches: "))
    assert sum(rows) == 5000 and max(rows) <= 1000, batches
    published = next(line for line in done.stdout.splitlines() if line.startswith("published on 'squares': "))
    info = ast.literal_eval(published.removeprefix("published on 'squares': "))
    assert (info["first"], info["end"], info["error"]) == (0, 5000, None), published


def test_the_command_lines_of_the_examples_docstrings_parse() -> None:
    """An example's docstring that shows `rstreams ...` lines: each parses as that command's;
    one that shows `python examples/NAME.py [--option ...]`: each option is one NAME.py takes."""
    import re
    import shlex

    from rstreams import cli
    from rstreams.conformance import _runner

    checked = 0
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text()
        doc = source.split('"""')[1]
        for line in (line.split(" #")[0].strip() for line in doc.splitlines()):
            if line.startswith("rstreams "):
                argv = shlex.split(line)[1:]
                if argv[0] == "conformance":
                    _runner._parser().parse_args(argv[1:])
                else:
                    cli._parser().parse_args(argv)
                checked += 1
            elif line.startswith(f"python examples/{path.name}"):
                for option in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", line):
                    assert f'"{option}"' in source, f"{path.name} shows {option}, which it does not take"
                    checked += 1
    assert checked >= 12, checked
