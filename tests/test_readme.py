"""The documents name only what exists: every path they mention, every command line and
``--option`` they name, every module of the README's architecture section, the conformance suite's
size. A file moved, an option renamed or a module added without its line fails here."""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rstreams import cli
from rstreams.conformance import CASES, _runner
from rstreams.conformance._client_suite import CLIENT_CASES
from testkit import patience
from testkit.snippets import in_async_main
from testkit.snippets import run as run_snippet

pytestmark = pytest.mark.timeout(120)
"""Each test's last resort, above the own-time bounds of the children it waits for (a snippet's
run: 60 s), which report a hang first."""

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [
    README,
    ROOT / "PROTOCOL.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "js" / "README.md",
    ROOT / "java" / "README.md",
]
TOP_DIRS = ("src", "tests", "docs", "examples", "benchmarks", "scripts", "js", "java", "fuzz", ".ci")
BUILD_OUTPUTS = ("java/target/", "test-artifacts/", "js/node_modules/")
LINK = re.compile(r"\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(map(re.escape, TOP_DIRS)) + r")/[\w./{}*<>$-]*)")

# Options of programs other than rstreams' own parsers that the documents name, and where they live.
OTHER_PROGRAMS = {
    "--strict": None,  # mypy
    "--noEmit": None,  # tsc
    "--tool": None,  # valgrind
    "--experimental-websocket": None,  # node
    "--bind": None,  # python -m http.server
    "--start-timeout": "src/rstreams/conformance/clients.py",
    "--instructions": "benchmarks/hotpath.py",
    "--rows": "examples/spark_cluster.py",
    "--demo": "examples/spark_cluster.py",
    "--client": "src/rstreams/conformance/clients.py",
    "--transport": "src/rstreams/conformance/clients.py",
    "--no-timers": "benchmarks/net_rstreams.py",
    "--outside-copies": "benchmarks/sides.py",
    "--auth": "java/src/test/resources/python/channels_server.py",
}


def _mentioned_paths(doc: Path) -> list[str]:
    text = doc.read_text()
    found = [
        target.split("#")[0]
        for target in LINK.findall(text)
        if not target.startswith(("http://", "https://", "#", "mailto:"))
    ]
    found += REPO_PATH.findall(text)
    return [p.rstrip(".,;:") for p in found if p and not re.search(r"[{}*<>$]", p)]


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_mentioned_exists(doc: Path) -> None:
    bases = [
        ROOT,
        doc.parent,
        *([ROOT / "js"] if doc.name == "web.md" else []),
    ]  # web.md: the package's paths
    missing = [
        p
        for p in _mentioned_paths(doc)
        if not p.startswith(BUILD_OUTPUTS) and not any((base / p).exists() for base in bases)
    ]
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("rstreams' parser has no subcommands")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def _command_lines() -> list[tuple[str, str]]:
    lines = []
    for doc in DOCUMENTS:
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), re.S):
            for line in block.splitlines():
                line = line.split(" #")[0].strip()
                if line.startswith("rstreams "):
                    lines.append((doc.name, line))
    return lines


@pytest.mark.parametrize(("doc", "line"), _command_lines())
def test_every_command_line_parses(doc: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    if argv[0] == "conformance":  # its own parser takes every argument after the name
        _runner._parser().parse_args(argv[1:])
    elif argv[0] == "bench":
        pytest.skip("rstreams bench passes its arguments to benchmarks/run.py")
    else:
        cli._parser().parse_args(argv)


def test_a_conformance_line_with_an_idle_timeout_needs_no_case_timeout() -> None:
    """`--idle-timeout S` lengthens the deadline of the two cases that wait for it (the runner's
    tests check that), so a documented line with it leaves `--case-timeout` at its default."""
    lines = [line for _, line in _command_lines() if line.startswith("rstreams conformance ")]
    timed = [line for line in lines if "--idle-timeout" in line]
    assert timed, lines
    assert not [line for line in timed if "--case-timeout" in line], timed


def test_the_command_lines_are_found() -> None:
    assert len(_command_lines()) >= 8, _command_lines()


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_option_a_document_names_is_accepted(doc: Path) -> None:
    parser = cli._parser()
    known = _options(parser) | _options(_runner._parser())
    for sub in _subparsers(parser).values():
        known |= _options(sub)
    named = set(re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", doc.read_text()))
    named = {flag for flag in named if "--" not in flag[2:] and not flag.endswith("-")}  # not a marble
    unknown = []
    for flag in sorted(named - known):
        if flag not in OTHER_PROGRAMS:
            unknown.append(flag)
        elif (home := OTHER_PROGRAMS[flag]) is not None and f'"{flag}"' not in (ROOT / home).read_text():
            unknown.append(f"{flag} (not in {home})")
    assert not unknown, f"{doc.relative_to(ROOT)} names options no parser accepts: {unknown}"


def test_every_option_named_after_a_command_is_that_command_s() -> None:
    """`rstreams CMD ... --option` written in one code span: CMD itself accepts the option (the
    test above only asks that some parser does; `rstreams ping --capacity` would pass it)."""
    commands = _subparsers(cli._parser())
    spans = [
        (doc, span)
        for doc in DOCUMENTS
        for span in re.findall(r"`(rstreams [a-z]+ [^`]*--[^`]*)`", doc.read_text())
    ]
    assert len(spans) >= 5, spans
    wrong = []
    for doc, span in spans:
        command = span.split()[1]
        if command == "bench":
            continue  # its options are benchmarks/run.py's
        parser = _runner._parser() if command == "conformance" else commands.get(command)
        accepted = set() if parser is None else _options(parser)
        flags = re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", span)
        wrong += [f"{doc.relative_to(ROOT)}: `{span}`: {flag}" for flag in flags if flag not in accepted]
    assert not wrong, wrong


def _architecture() -> str:
    text = README.read_text()
    start = text.index("## Architecture")
    return text[start : text.index("\n## ", start + 1)]


@pytest.mark.parametrize("package", ["net", "wire"])
def test_the_architecture_names_every_module(package: str) -> None:
    section = _architecture()
    modules = sorted(
        p.name for p in (ROOT / "src" / "rstreams" / package).glob("*.py") if p.name != "__init__.py"
    )
    unnamed = [m for m in modules if not re.search(rf"(?<![\w]){re.escape(m)}", section)]
    assert not unnamed, f"README.md's architecture section does not name {package}/ modules: {unnamed}"


def test_every_module_the_architecture_names_exists() -> None:
    existing = {p.name for p in (ROOT / "src" / "rstreams").rglob("*.py")} | {
        p.name for p in (ROOT / "tests").rglob("*.py")
    }
    named = set(re.findall(r"(?<![\w.])(_?[a-z][a-z_]*\.py)\b", _architecture()))
    assert named, "no module names found in the architecture section"
    assert not named - existing, (
        f"README.md's architecture section names missing modules: {sorted(named - existing)}"
    )


def test_the_conformance_suite_size_is_current() -> None:
    counts = re.findall(r"runs (\d+) scripted cases|servers \((\d+) cases", README.read_text())
    assert len(counts) == 2, counts
    assert {int(a or b) for a, b in counts} == {len(CASES)}, (
        f"README.md says {counts}; the suite has {len(CASES)}"
    )


def test_the_client_suite_size_is_current() -> None:
    import rstreams.conformance.clients  # noqa: F401  (registers the client cases)

    stated = re.findall(r"drives a client through (\d+) cases", README.read_text())
    assert stated == [str(len(CLIENT_CASES))], (
        f"README.md says {stated}; the client suite has {len(CLIENT_CASES)}"
    )


def _callable(name: str) -> Any:
    import rstreams
    import rstreams.net
    import rstreams.replay
    import rstreams.tck
    import rstreams.web
    import rstreams.wire

    homes = (
        rstreams.net,
        rstreams.wire,
        rstreams.replay,
        rstreams.web,
        rstreams.tck,
        rstreams,
        rstreams.Flow,
    )
    for home in homes:
        if hasattr(home, name):
            return getattr(home, name)
    raise AssertionError(f"the documents call {name}(...), which rstreams does not have")


def test_every_default_the_documents_state_is_the_code_s() -> None:
    """`Name(option=N)` in the documents states a default: the parameter exists with that default."""
    units = {"KiB": 1024, "MiB": 1024 * 1024}
    stated_default = re.compile(r"`([A-Za-z_]+)\(([a-z_]+)=([0-9][0-9.]*)(?: (KiB|MiB))?\)`")
    spans = set()
    for doc in DOCUMENTS:
        spans |= set(stated_default.findall(doc.read_text()))
    assert len(spans) >= 5, spans
    wrong = []
    for name, option, number, unit in sorted(spans):
        parameter = inspect.signature(_callable(name)).parameters.get(option)
        stated = float(number) * units.get(unit, 1)
        if parameter is None or parameter.default != stated:
            wrong.append(f"{name}({option}={number}{' ' + unit if unit else ''}): the code has {parameter}")
    assert not wrong, wrong


def test_every_option_of_the_rstreams_command_is_documented() -> None:
    """Each option of each `rstreams` subcommand is named in the README or a page of docs/."""
    named = set(re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", "".join(doc.read_text() for doc in DOCUMENTS)))
    undocumented = []
    for command, sub in _subparsers(cli._parser()).items():
        for action in sub._actions:
            flags = [flag for flag in action.option_strings if flag.startswith("--") and flag != "--help"]
            if flags and not named.intersection(flags):
                undocumented.append(f"rstreams {command} {flags[0]}")
    assert not undocumented, f"options no document names: {undocumented}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_linked_is_a_heading(doc: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]*#[^)\s]+)\)", doc.read_text()):
        file, anchor = target.split("#", 1)
        linked = (doc.parent / file).resolve() if file else doc
        headings = {_slug(h) for h in re.findall(r"^#+ (.*)$", linked.read_text(), re.M)}
        if anchor not in headings:
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)} links to anchors no heading has: {broken}"


def test_every_keyword_the_documents_pass_is_a_parameter() -> None:
    """`name(..., option=...)` in the documents (rstreams' functions and classes, `conn.` methods):
    each option is a parameter of what is called."""
    from rstreams.net._connection import Connection

    call = re.compile(r"`(?:rstreams\.(?:net\.|wire\.|replay\.|web\.)?)?(conn\.)?([A-Za-z_]+)\(([^()`]*)\)")
    wrong, checked = [], 0
    for doc in DOCUMENTS:
        for on_conn, name, args in call.findall(doc.read_text()):
            try:
                target = getattr(Connection, name) if on_conn else _callable(name)
                parameters = inspect.signature(target).parameters
            except (AssertionError, AttributeError, TypeError, ValueError):
                continue  # not one of rstreams' callables (a JavaScript or Java name, a builtin)
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
                continue
            for option in re.findall(r"(?:^|,\s*)([a-z_]+)=", args):
                checked += 1
                if option not in parameters:
                    wrong.append(f"{doc.name}: {on_conn}{name}({option}=...)")
    assert checked >= 100, checked
    assert not wrong, f"options the called functions do not take: {wrong}"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_first_stream_runs() -> None:
    """README, "A first stream": the pipeline's total, and the Subscriber of one's own."""
    first = next(block for block in _python_blocks() if "total = (" in block)
    printer = next(block for block in _python_blocks() if "class Printer" in block)
    out = run_snippet(first + "print(total)\n" + printer)
    assert out.split() == [str(sum(range(2, 1_000_001, 2))), "a", "b", "c", "done"]
    said = re.search(r"# total == ([\d_]+):", first)
    assert said and int(said.group(1)) == int(out.split()[0]), "the block's comment states another total"
    shown = re.search(r"# (\w+(?:, \w+)*) and (\w+), one a line", printer)
    assert shown and [*shown.group(1).split(", "), shown.group(2)] == out.split()[1:], printer


def test_the_network_example_runs() -> None:
    """README, "Across the network": a server and a client on loopback, five readings, then cancel."""
    example = next(block for block in _python_blocks() if "asyncio.run(main())" in block)
    lines = run_snippet(example).splitlines()
    assert lines == [str({"id": "kitchen", "seq": seq}) for seq in range(100, 105)]


def test_the_tck_example_runs() -> None:
    """README, "The TCK for your own implementation": the pytest class and ``verify_publisher``,
    for a publisher of one's own (here ``rstreams.range``), pass every case."""
    example = next(block for block in _python_blocks() if "verify_publisher(MyPublisher)" in block)
    mine = "import rstreams\n\ndef MyPublisher(elements):\n    return rstreams.range(0, elements)\n\n"
    check = "print(issubclass(TestMyPublisher, PublisherVerification), report.ok)\n"
    assert run_snippet(mine + example + check).split() == ["True", "True"]


def test_the_architecture_lists_every_rstreams_command() -> None:
    listed = re.search(r"`rstreams ((?:[a-z]+ \| )+[a-z]+)`", _architecture())
    assert listed, "README.md's architecture section lost the line of cli.py's commands"
    assert sorted(listed.group(1).split(" | ")) == sorted(_subparsers(cli._parser()))


def test_the_java_coordinates_are_the_pom_s() -> None:
    """The README's Maven coordinates of the Java binding are those java/pom.xml builds."""
    import xml.etree.ElementTree as ElementTree

    pom = ElementTree.parse(ROOT / "java" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    coordinates = ":".join(
        pom.findtext(f"m:{tag}", namespaces=ns) or "" for tag in ("groupId", "artifactId", "version")
    )
    assert f"`{coordinates}`" in README.read_text(), f"README.md does not name {coordinates}"


def test_the_messages_example_runs() -> None:
    """README, "Messages": the client's one-way message reaches the server's handler."""
    block = next(block for block in _python_blocks() if "handlers={" in block)
    setup = (
        "url, publishers, stored = 'tcp://127.0.0.1:0', {}, asyncio.Queue()\n"
        "async def store(kind, payload):\n"
        "    await stored.put((kind, payload))\n"
    )
    after = "print(await asyncio.wait_for(stored.get(), 30))\nawait conn.aclose()\nawait server.aclose()\n"
    assert run_snippet(in_async_main(setup, block, after)).splitlines() == ["('click', b'abc')"]


def test_the_channel_example_runs() -> None:
    """README, "Channels": questions in, answers out, over one channel (the sample's `conn` is
    the one connection line it leaves out)."""
    block = next(block for block in _python_blocks() if "channels={" in block and "def calculator" in block)
    head, loop = block.split("async for ", 1)
    connect = "conn = await rstreams.connect(server.url)\n"
    setup = (
        "from rstreams.net import JSON\n"
        "url, publishers, my_questions = 'tcp://127.0.0.1:0', {}, [1, 2, 3]\n"
        "def answer(question):\n"
        "    return question * 10\n"
    )
    code = in_async_main(
        setup, head + connect + "async for " + loop, "await conn.aclose()\nawait server.aclose()\n"
    )
    assert run_snippet(code).split() == ["10", "20", "30"]


@pytest.mark.timeout(240)  # (above its server's line and its two runs: 10 + 30 + 30 s of own time)
def test_the_command_line_walk_through_runs() -> None:
    """README, "From the command line": `rstreams serve` announces what its comment says, and
    each `rstreams subscribe` line exits 0 with what it asks for (on a free port, not 9000)."""
    block = re.search(r"### From the command line\n\n```sh\n(.*?)```", README.read_text(), re.S)
    assert block, "README.md lost the command-line walk-through"
    serve_line, *subscribe_lines = block.group(1).splitlines()
    command, said = (part.strip() for part in serve_line.split(" # "))
    url = shlex.split(command)[2]
    assert (
        command == f"rstreams serve {url}"
        and said == f"serving counter, sensors/{{id}}, channel upper on {url}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rstreams = [sys.executable, "-m", "rstreams"]
    with subprocess.Popen(
        [*rstreams, "serve", "tcp://127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as server:
        try:
            assert server.stdout is not None
            announced = patience.child_line(server, "its serving line").strip()
            here = announced.rsplit(" on ", 1)[1]
            assert announced == said.replace(url, here)
            outputs = []
            for line in subscribe_lines:
                argv = shlex.split(line.split(" #")[0].replace(url, here))
                assert argv[:2] == ["rstreams", "subscribe"], line
                done = patience.run([*rstreams, *argv[1:]], 30, capture_output=True, text=True, env=env)
                assert (done.returncode, done.stderr) == (0, ""), line
                outputs.append(done.stdout.splitlines())
        finally:
            server.terminate()
    counter, sensors = outputs
    assert counter == ["1", "2", "3", "4", "5"]  # counter?from=1&to=6: to is excluded
    assert [json.loads(reading)["seq"] for reading in sensors] == list(range(10))  # --count 10


def test_the_demo_publishers_defaults_are_the_code_s() -> None:
    """README's and `rstreams serve --help`'s word on sensors/{id}'s default rate is the code's."""
    from rstreams._cli_publishers import SENSOR_RATE

    assert f"random walk, {SENSOR_RATE:g}/s by default" in " ".join(README.read_text().split())
    assert f"(rate/s: {SENSOR_RATE:g}, 0 = as fast as asked" in cli._SERVE_DESCRIPTION


def test_the_extras_table_is_pyproject_s() -> None:
    """README's table of extras names exactly the optional dependencies pyproject.toml declares."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    table = README.read_text().split("<!-- extras -->", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^\| `([a-z-]+)` \|", table, re.M)
    assert sorted(listed) == sorted(declared), (listed, sorted(declared))


def test_what_the_limits_page_says_of_subscribe_s_idle_timeout_is_its_default() -> None:
    """docs/security.md: `rstreams subscribe` uses the defaults but for the client's idle timeout,
    its --timeout, whose default it states."""
    subscribe = _subparsers(cli._parser())["subscribe"]
    default = subscribe.get_default("timeout")
    text = " ".join((ROOT / "docs" / "security.md").read_text().split())
    assert f"`rstreams subscribe`'s `--timeout` ({default:g} s; 0: off)" in text


def test_every_operator_default_the_documents_state_is_the_code_s() -> None:
    """`op(a, b=N)` of a Flow operator in the documents (README's table, docs/operators.md)
    states b's default: the operator has that default."""
    import rstreams

    literal = re.compile(r"-?[0-9][0-9_.]*|None|True|False")
    wrong, checked = [], 0
    for doc in DOCUMENTS:
        for name, args in re.findall(r"`([a-z_]+)\(([^()`]*=[^()`]*)\)`", doc.read_text()):
            operator = getattr(rstreams.Flow, name, None)
            if operator is None:
                continue
            parameters = inspect.signature(operator).parameters
            for option, value in re.findall(r"([a-z_]+)=([^,]+)", args):
                if not literal.fullmatch(value.strip()):
                    continue
                checked += 1
                stated = ast.literal_eval(value.strip().replace("_", ""))
                parameter = parameters.get(option)
                if parameter is None or parameter.default != stated:
                    wrong.append(f"{doc.name}: {name}({option}={value.strip()}): the code has {parameter}")
    assert checked >= 20, checked
    assert not wrong, wrong


@pytest.mark.timeout(180)  # (above the server's line and Node's run: 10 + 40 s of own time)
def test_the_javascript_example_runs_against_the_server_it_names(tmp_path: Path) -> None:
    """README, "JavaScript": the snippet, run by Node against the `rstreams serve ... --token`
    the sentence before it names (on a free port), prints the counter and the channel's answers."""
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node 20+")
    text = README.read_text()
    section = text[text.index("### JavaScript") :]
    serve = re.search(r"Against\s+`(rstreams serve tcp://127\.0\.0\.1:9000[^`]*)`", section)
    block = re.search(r"```js\n(.*?)```", section, re.S)
    assert serve and block, "README.md lost the JavaScript example or the server it runs against"
    argv = shlex.split(serve.group(1))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with patience.serving("tcp://127.0.0.1:0", *argv[3:], env=env) as (_, url):
        script = tmp_path / "example.mjs"
        code = block.group(1).replace("tcp://127.0.0.1:9000", url)
        script.write_text(code.replace('"@rstreams/rsio"', json.dumps((ROOT / "js/src/node.js").as_uri())))
        done = patience.run([node, str(script)], 40, capture_output=True, text=True)
    assert (done.returncode, done.stdout.split()) == (0, ["0", "1", "2", "3", "4", "A", "B"]), done.stderr


def test_the_handshake_timeouts_protocol_md_names_are_each_binding_s() -> None:
    """PROTOCOL.md §4.1 names each implementation's handshake timeout, server and client, with
    one default: each option exists there with that default (JavaScript's in seconds, Java's a
    Duration)."""
    from rstreams.net import connect, connect_pipe, serve

    text = (ROOT / "PROTOCOL.md").read_text()
    section = text[text.index("### 4.1 Hellos") : text.index("### 4.2 Versions")]
    stated = re.search(r"bound both waits at (\d+) s by default", section)
    assert stated, "PROTOCOL.md §4.1 no longer states the implementations' default"
    seconds = int(stated.group(1))
    for function in (serve, connect, connect_pipe):
        assert f"`{function.__name__}(handshake_timeout={seconds})`" in section, function.__name__
        assert inspect.signature(function).parameters["handshake_timeout"].default == seconds
    for call in ("listen(url, {handshakeTimeout: %d})", "connect(url, {handshakeTimeout: %d})"):
        assert f"`{call % seconds}`" in section, call
    for module in ("rsio.js", "node.js"):  # the client's default, the server's
        source = (ROOT / "js" / "src" / module).read_text()
        assert f"const DEFAULT_HANDSHAKE_TIMEOUT_S = {seconds};" in source, module
    net = ROOT / "java/src/main/java/io/rstreams/net"
    shared = (net / "BuilderOptions.java").read_text()  # the options both builders delegate to
    assert f"private Duration handshakeTimeout = Duration.ofSeconds({seconds});" in shared
    for builder in ("RsioServer", "RsioClient"):
        assert f"`{builder}.Builder.handshakeTimeout(Duration)`" in section, builder
        source = (net / f"{builder}.java").read_text()
        assert "public Builder handshakeTimeout(Duration timeout)" in source, builder


def test_the_java_readme_s_pom_builds_for_the_binding_s_release() -> None:
    """java/README.md's `pom.xml` for a project of one's own depends on the coordinates
    java/pom.xml builds, for its Java release, with its compiler plugin (Maven's default one
    ignores `maven.compiler.release`); ReadmeExampleTest runs the program after it."""
    import xml.etree.ElementTree as ElementTree

    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    block = re.search(r"```xml\n(.*?)```", (ROOT / "java" / "README.md").read_text(), re.S)
    assert block, "java/README.md lost its pom.xml"
    theirs = ElementTree.fromstring(block.group(1))
    ours = ElementTree.parse(ROOT / "java" / "pom.xml").getroot()
    dependency = theirs.find("m:dependencies/m:dependency", ns)
    assert dependency is not None
    for tag in ("groupId", "artifactId", "version"):
        assert dependency.findtext(f"m:{tag}", namespaces=ns) == ours.findtext(f"m:{tag}", namespaces=ns), tag
    release = "m:properties/m:maven.compiler.release"
    assert theirs.findtext(release, namespaces=ns) == ours.findtext(release, namespaces=ns)

    def compiler(pom: ElementTree.Element) -> str | None:
        for plugin in pom.iterfind("m:build/m:plugins/m:plugin", ns):
            if plugin.findtext("m:artifactId", namespaces=ns) == "maven-compiler-plugin":
                return plugin.findtext("m:version", namespaces=ns)
        return None

    assert compiler(theirs) is not None and compiler(theirs) == compiler(ours)


def test_the_conformance_options_defaults_docs_state_are_the_parser_s() -> None:
    """docs/conformance.md's paragraph of options: each `--option` (..., N) states the default
    of `rstreams conformance --option`."""
    text = " ".join((ROOT / "docs" / "conformance.md").read_text().split())
    options = text[text.index("Options: ") : text.index("Exit status:")]
    stated = re.findall(r"`(--[a-z-]+)` \((?:[^()]*?[ ,])?([0-9][0-9.]*)( MiB)?\)", options)
    stated += [
        (flag, value, "") for flag, value in re.findall(r"`(--[a-z-]+)` \([^()]*default `([^`]+)`", options)
    ]
    assert len(stated) >= 7, stated
    defaults = {
        action.option_strings[-1]: action.default
        for action in _runner._parser("rstreams conformance")._actions
        if action.option_strings
    }
    wrong = []
    for flag, value, unit in stated:
        default = defaults.get(flag)
        expected: object = value if isinstance(default, str) else float(value) * (1 << 20 if unit else 1)
        if default != expected:
            wrong.append(
                f"{flag}: docs/conformance.md says {value}{unit}, the parser's default is {default!r}"
            )
    assert not wrong, wrong


def test_the_idle_and_unread_options_protocol_md_names_are_each_binding_s() -> None:
    """PROTOCOL.md §6.3 and §14.2 name the JavaScript and Java options of the unread-replies and
    idle timeouts and keepalive: each exists, with the default stated."""
    text = (ROOT / "PROTOCOL.md").read_text()
    said = " ".join(text[text.index("### 6.3 ") : text.index("## 15. ")].split())
    java = ROOT / "java/src/main/java/io/rstreams/net"
    client, server = ((java / f"Rsio{side}.java").read_text() for side in ("Client", "Server"))
    endpoint = (java / "Endpoint.java").read_text()
    shared = (java / "BuilderOptions.java").read_text()  # the options both builders delegate to
    for builder in ("RsioClient", "RsioServer"):
        assert f"`{builder}.Builder.unreadTimeout(Duration)`" in said, builder
    for source in (client, server):
        assert "public Builder unreadTimeout(Duration timeout)" in source
    assert "private Duration unreadTimeout = Endpoint.DEFAULT_UNREAD_TIMEOUT;" in shared
    assert "private Duration keepalive = Duration.ofSeconds(15);" in shared
    assert "DEFAULT_UNREAD_TIMEOUT = Duration.ofSeconds(30);" in endpoint
    assert "`RsioServer.Builder.idleTimeout(Duration)` (60 s)" in said
    assert "private Duration idleTimeout = Duration.ofSeconds(60);" in server
    assert "private Duration idleTimeout;" in client  # none unless set
    assert "`listen(url, {idleTimeout: 60, keepalive: 15})` and `connect(url, {keepalive: 15})`" in said
    node, rsio = ((ROOT / "js" / "src" / name).read_text() for name in ("node.js", "rsio.js"))
    assert "const DEFAULT_IDLE_TIMEOUT_S = 60;" in node
    assert "const DEFAULT_KEEPALIVE_S = 15;" in rsio
    assert "const DEFAULT_UNREAD_TIMEOUT_S = 30;" in rsio
    assert "replies left unread for 30 s (unread_timeout)" in said  # the Python default, the same


def test_the_resume_table_is_resume_s_defaults() -> None:
    """docs/resumption.md's table of `Resume`'s fields names each field once, with its default."""
    import dataclasses

    from rstreams.net import Resume

    units = {"s": 1.0, "MiB": float(1 << 20), "": 1.0}
    text = (ROOT / "docs" / "resumption.md").read_text()
    rows = re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| ([^|]+) \|", text, re.M)
    stated: dict[str, float] = {}
    for names, values in rows:
        for name, value in zip(re.findall(r"`([a-z_]+)`", names), values.split(","), strict=True):
            number, unit = re.fullmatch(r"\s*([0-9.]+) ?(s|MiB|)\s*", value).groups()  # type: ignore[union-attr]
            stated[name] = float(number) * units[unit]
    defaults = {field.name: field.default for field in dataclasses.fields(Resume)}
    assert stated == defaults


def test_the_java_readme_s_bounds_are_the_binding_s() -> None:
    """java/README.md's theory of operation states the binding's bounds: each is its constant."""
    said = " ".join((ROOT / "java" / "README.md").read_text().split())
    net = ROOT / "java/src/main/java/io/rstreams/net"
    endpoint = (net / "Endpoint.java").read_text()
    serving = (net / "ServingStream.java").read_text()
    pairs = [
        ("asks its local publisher for at most 256 elements (about 256 KiB", serving, "WINDOW = 256;"),
        ("(about 256 KiB for large ones)", serving, "WINDOW_BYTES = 256 * 1024;"),
        ("`LOW_WATER` (256 KiB, rstreams' `low_water`)", endpoint, "LOW_WATER = 256 * 1024;"),
        ("`unreadTimeout` (30 s by default", endpoint, "DEFAULT_UNREAD_TIMEOUT = Duration.ofSeconds(30);"),
        ("more than 16 MiB unsent (`MAX_UNSENT`)", endpoint, "MAX_UNSENT = 16L << 20;"),
        ("discards the peer's input for up to 2 s", endpoint, "LINGER_MILLIS = 2000;"),
        ("past 4 MiB discarded (`LINGER_BYTES`", endpoint, "LINGER_BYTES = 4L << 20;"),
    ]
    for phrase, source, constant in pairs:
        assert phrase in said, f"java/README.md no longer says {phrase!r}"
        assert constant in source, f"the binding no longer has {constant!r} ({phrase!r})"


def _builder_methods(source: str) -> set[str]:
    """`name(Type, Type)` of each public method of a Java builder that returns the builder."""
    found = set()
    for match in re.finditer(r"public (?:<\w+> )?Builder (\w+)\(([^)]*)\)", source):
        params = match.group(2)
        while re.search(r"<[^<>]*>", params):
            params = re.sub(r"<[^<>]*>", "", params)
        types = [param.split()[0].removesuffix("...") for param in params.split(",") if param.strip()]
        found.add(f"{match.group(1)}({', '.join(types)})")
    return found


def test_the_java_readme_s_options_are_the_builders() -> None:
    """java/README.md's tables of builder options: each method is the builder's (name and
    parameter types), and each default stated is the field's initial value."""
    text = (ROOT / "java" / "README.md").read_text()
    net = ROOT / "java/src/main/java/io/rstreams/net"
    unread = re.search(
        r"DEFAULT_UNREAD_TIMEOUT = Duration\.ofSeconds\((\d+)\);", (net / "Endpoint.java").read_text()
    )
    assert unread
    checked = 0
    shared = (net / "BuilderOptions.java").read_text()  # the options both builders delegate to
    for builder in ("RsioClient", "RsioServer"):
        source = (net / f"{builder}.java").read_text()
        methods = _builder_methods(source)
        source += shared  # the builder's own fields first, then the shared ones
        table = text.split(f"| `{builder}.Builder` | default |", 1)[1].split("\n\n", 1)[0]
        rows = re.findall(r"^\| ((?:`[^`]+`(?:, )?)+) \| ([^|]+) \|", table, re.M)
        assert len(rows) >= 9, rows
        for names, default in rows:
            for method in re.findall(r"`([^`]+)`", names):
                assert method.replace("...", "") in methods, (
                    f"{builder}.Builder has no {method}: {sorted(methods)}"
                )
            name = method.split("(")[0]
            seconds = re.fullmatch(r"(\d+) s", default.strip())
            initial = re.search(rf"private \w+ {name}(?: = ([^;]+))?;", source)
            if seconds and initial:
                value = initial.group(1) or ""
                assert value in (
                    f"Duration.ofSeconds({seconds.group(1)})",
                    "Endpoint.DEFAULT_UNREAD_TIMEOUT",
                ), name
                assert value != "Endpoint.DEFAULT_UNREAD_TIMEOUT" or unread.group(1) == seconds.group(1), name
                checked += 1
            elif default.strip() in ("none", "`false`") and initial and "Duration" in initial.group(0):
                assert initial.group(1) is None, f"{builder}.Builder.{name} starts at {initial.group(1)}"
                checked += 1
            elif default.strip() in ("1", "`Limits.DEFAULT`") and initial:
                assert initial.group(1) == default.strip().strip("`"), name
                checked += 1
    assert checked >= 13, checked


BENCHMARKS_README = ROOT / "benchmarks" / "README.md"
# The benchmarks' own commands, whose every option benchmarks/README.md describes.
BENCHMARK_COMMANDS = ("run.py", "hotpath.py", "server_pump.py", "sides.py", "replay_upload.py")


def _script_options(script: Path) -> set[str]:
    """The `--options` a script's argparse parser declares, without those hidden from `--help`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        hidden = any(
            keyword.arg == "help"
            and isinstance(keyword.value, ast.Attribute)
            and keyword.value.attr == "SUPPRESS"
            for keyword in node.keywords
        )
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        found |= set() if hidden else {flag for flag in flags if flag.startswith("--")}
    return found


def test_every_option_of_the_benchmark_commands_is_in_their_readme() -> None:
    named = set(re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", BENCHMARKS_README.read_text()))
    undocumented = [
        f"{script} {flag}"
        for script in BENCHMARK_COMMANDS
        for flag in sorted(_script_options(ROOT / "benchmarks" / script))
        if flag not in named
    ]
    assert not undocumented, f"benchmarks/README.md does not name: {undocumented}"


def test_every_option_the_benchmarks_readme_names_is_a_script_s() -> None:
    accepted = set().union(*(_script_options(p) for p in (ROOT / "benchmarks").glob("*.py")))
    named = set(re.findall(r"(?<![\w-])(--[A-Za-z][\w-]*)", BENCHMARKS_README.read_text()))
    assert named, "no options found in benchmarks/README.md"
    assert not named - accepted, f"benchmarks/README.md names options no script takes: {named - accepted}"


def test_the_test_script_lints_every_python_directory() -> None:
    """scripts/test.sh runs `ruff check` and `ruff format --check` over every top-level directory
    of Python code (not docs/, whose two generators sit beside the pages, nor the Java and
    JavaScript trees, whose few Python files are test fixtures of those builds)."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    python_dirs = [d for d in TOP_DIRS if d not in ("docs", "java", "js")]
    directories = {d for d in python_dirs if next((ROOT / d).rglob("*.py"), None)}
    for command in ("check", "format --check"):
        line = re.search(rf'"\$VENV/bin/ruff" {command} (.*)', script)
        assert line, f"scripts/test.sh runs no `ruff {command}`"
        assert directories <= set(line.group(1).split()), (command, sorted(directories))


def test_every_benchmark_scenario_has_a_row_in_the_benchmarks_readme() -> None:
    from _scenarios import SCENARIOS  # benchmarks/, on pytest's pythonpath

    rows = set(re.findall(r"^\| `([a-z-]+)` \|", BENCHMARKS_README.read_text(), re.M))
    assert rows == set(SCENARIOS), f"rows without a scenario: {rows - set(SCENARIOS)}, " + (
        f"scenarios without a row: {set(SCENARIOS) - rows}"
    )


@pytest.mark.parametrize("root_with_apt", [True, False])
def test_the_test_script_installs_java_as_root_or_says_what_to_install(
    tmp_path: Path, root_with_apt: bool
) -> None:
    """scripts/test.sh's first block on a machine without Java: run as root with apt-get it
    installs a JDK and goes on (README: it installs what is missing as root); otherwise one
    message says what to install, exit 2. A stub apt-get and PATH stand in for the machine."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    head = script[: script.index("# The browser test")] + 'echo "java: $(command -v java)"\n'
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "head.sh").write_text(head)
    stub = tmp_path / "bin"
    stub.mkdir()
    for tool in ("dirname", "id"):
        found = subprocess.check_output(["sh", "-c", f"command -v {tool}"], text=True).strip()
        (stub / tool).symlink_to(found)
    java = stub / "java"
    if root_with_apt:
        (stub / "apt-get").write_text(
            f'#!/bin/sh\n[ "$1" = install ] && printf "#!/bin/sh\\n" > {java} && /bin/chmod +x {java}\n'
        )
        (stub / "apt-get").chmod(0o755)
    done = patience.run(
        ["/bin/bash", str(tmp_path / "scripts" / "head.sh")],
        30,
        capture_output=True,
        text=True,
        env={"PATH": str(stub)},
    )
    if root_with_apt and os.geteuid() == 0:
        assert (done.returncode, done.stdout.splitlines()[-1]) == (0, f"java: {java}"), done
    else:
        assert done.returncode == 2, done
        assert "The Spark tests need Java 17 or newer and none was found." in done.stderr


def test_every_virtual_environment_the_documents_run_is_one_the_scripts_make() -> None:
    """An interpreter the documents name (`.venv-test/bin/python`) is in a virtual environment
    scripts/*.sh create, so a command copied from a fresh clone finds it after the setup."""
    made = set()
    for script in (ROOT / "scripts").glob("*.sh"):
        made |= set(re.findall(r"setup_venv (\.venv[\w-]*) ", script.read_text()))
    assert ".venv-test" in made, made
    pages = [*DOCUMENTS, ROOT / "fuzz" / "README.md", BENCHMARKS_README, *(ROOT / "examples").glob("*.py")]
    named = {
        f"{page.relative_to(ROOT)}: {venv}"
        for page in pages
        for venv in re.findall(r"(?<![\w.-])(\.venv[\w-]*)(?=/)", page.read_text())
        if venv not in made
    }
    assert not named, f"virtual environments no script in scripts/ creates: {sorted(named)}"
