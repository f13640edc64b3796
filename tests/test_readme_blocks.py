"""Every fenced block of README.md is run, or checked against the code, by a test: :data:`BLOCKS`
names the test of each, and a new block without one fails
:func:`test_every_block_of_the_readme_has_a_test`. This file runs those that tests/test_readme.py
does not: the `async for` fragment, "Facing the internet", the metrics, `rstreams top` and
`rstreams ping` lines, the conformance lines, and the two commands of the top. Each block is
read from README.md when the test runs; what a test changes in it (a fixed port, an example
host, a body left as `...`) is an exact string of the block, so a block that changes fails here
until its test follows. The blocks run in a child process each (testkit.snippets)."""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rstreams import cli
from testkit import patience
from testkit.snippets import fenced, in_async_main
from testkit.snippets import run as run_snippet
from testkit.tls import TestCA

pytestmark = pytest.mark.timeout(120)
"""Each test's last resort, above the own-time bounds of the children it waits for."""

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
RSTREAMS = [sys.executable, "-m", "rstreams"]

HERE, FIRST, SPARK = "tests/test_readme_blocks.py", "tests/test_readme.py", "tests/spark/test_readme_spark.py"
JAVA = "java/src/test/java/io/rstreams/net/ReadmeSnippetTest.java"

BLOCKS = {
    ("sh", "bash scripts/demo.sh"): f"{HERE}::test_the_two_commands_are_the_scripts",
    ("python", "total = ("): f"{FIRST}::test_the_first_stream_runs",
    ("python", "async for reading in rstreams"): f"{HERE}::test_the_async_for_fragment_runs",
    ("python", "class Printer"): f"{FIRST}::test_the_first_stream_runs",
    ("python", "asyncio.run(main())"): f"{FIRST}::test_the_network_example_runs",
    ("sh", "rstreams subscribe"): f"{FIRST}::test_the_command_line_walk_through_runs",
    ("python", "handlers={"): f"{FIRST}::test_the_messages_example_runs",
    ("python", "def calculator"): f"{FIRST}::test_the_channel_example_runs",
    ("python", "authenticate=check_token"): f"{HERE}::test_the_internet_facing_fragment_runs",
    ("sh", "--metrics 127.0.0.1:9464"): f"{HERE}::test_the_metrics_top_and_ping_lines_run",
    ("sh", "rstreams conformance"): f"{HERE}::test_the_conformance_line_over_tcp_runs",
    ("python", "verify_publisher(MyPublisher)"): f"{FIRST}::test_the_tck_example_runs",
    ("python", 'log = ReplayLog("sensors"'): f"{SPARK}::test_the_source_to_sink_query_runs_as_written",
    ("python", "tcp://c:7000"): f"{SPARK}::test_the_query_over_three_servers_runs_as_written",
    ("python", "foreachBatch(publish)"): f"{SPARK}::test_the_foreach_batch_publisher_runs_as_written",
    ("js", "@rstreams/rsio"): f"{FIRST}::test_the_javascript_example_runs_against_the_server_it_names",
    ("java", "RsioClient.builder()"): f"{JAVA}::theReadmesJavaBlockCompilesAndRuns",
    ("", "src/rstreams/\n"): f"{FIRST}::test_every_module_the_architecture_names_exists",
    ("", "package          may import"): "tests/test_layers.py::test_readme_shows_the_same_map",
    ("", "net/_connection.py   Connection"): f"{FIRST}::test_the_architecture_names_every_module",
}
"""(the block's language, a string only that block holds) -> the test that runs or checks it."""


def _block(language: str, marker: str) -> str:
    found = [text for lang, text in fenced(README.read_text()) if lang == language and marker in text]
    assert len(found) == 1, f"README.md: {len(found)} ```{language} blocks hold {marker!r}"
    return found[0] + "\n"


def _swap(block: str, changes: dict[str, str]) -> str:
    """``block`` with each key replaced by its value; a key the block lacks fails the test."""
    for old, new in changes.items():
        assert old in block, f"the block no longer holds {old!r}:\n{block}"
        block = block.replace(old, new)
    return block


def _defines(path: Path, test: str) -> bool:
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
        return any(isinstance(node, ast.FunctionDef) and node.name == test for node in tree.body)
    return re.search(rf"@Test\b[^;{{]*\n\s*public void {re.escape(test)}\(", path.read_text()) is not None


def test_every_block_of_the_readme_has_a_test() -> None:
    """Each fenced block holds exactly one marker of :data:`BLOCKS`, each marker is in exactly
    one block, and each test named there exists (a Python test function, or a TestNG `@Test`)."""
    unrun, ambiguous = [], []
    for language, text in fenced(README.read_text()):
        markers = [marker for lang, marker in BLOCKS if lang == language and marker in text]
        if not markers:
            unrun.append(f"```{language} {text.splitlines()[0]!r}...")
        elif len(markers) > 1:
            ambiguous.append(markers)
    assert not unrun, f"README.md blocks no test runs (add one, and a line to BLOCKS): {unrun}"
    assert not ambiguous, ambiguous
    for (language, marker), where in BLOCKS.items():
        _block(language, marker)
        path, test = where.split("::")
        assert _defines(ROOT / path, test), f"{path} defines no test {test}"


def test_the_async_for_fragment_runs() -> None:
    """README, "A first stream": `async for` over an endless async source, batched by `buffer(40)` with
    `window=64`: the source is never more than 64 batches ahead of the loop, and leaving the loop
    cancels the chain (the source's generator is closed, nothing more is pulled)."""
    block = _block("python", "async for reading in rstreams")
    comment = "    ...   # at most 64 batches requested ahead; leaving the loop cancels the chain\n"
    window = re.search(r"\.buffer\((\d+)\)\.iter_async\(window=(\d+)\)", block)
    assert window and comment.split("# at most ")[1].startswith(f"{window.group(2)} batches"), block
    body = (
        "    seen += 1\n"
        "    ahead = max(ahead, pulled - seen * BATCH)\n"
        "    await asyncio.sleep(0)  # a loop that takes its time: the source could run ahead\n"
        "    if seen == 200:\n"
        "        break\n"
    )
    setup = (
        f"BATCH, WINDOW = {window.group(1)}, {window.group(2)}\n"
        "pulled, closed = 0, False\n"
        "async def sensor_readings():\n"
        "    global pulled, closed\n"
        "    try:\n"
        "        while True:\n"
        "            pulled += 1\n"
        "            yield {'seq': pulled}\n"
        "    finally:\n"
        "        closed = True\n"
    )
    before = "seen = ahead = 0\n"
    after = (
        "left = pulled\n"
        "for _ in range(20):\n"
        "    await asyncio.sleep(0)\n"
        "print(seen, ahead <= WINDOW * BATCH, closed, pulled == left)\n"
    )
    code = in_async_main(setup, before + _swap(block, {comment: body}), after)
    code = code.replace("async def main():\n", "async def main():\n    global seen, ahead\n")
    assert run_snippet(code).split() == ["200", "True", "True", "True"]


def test_the_internet_facing_fragment_runs(tmp_path: Path) -> None:
    """README, "Facing the internet": the server on TLS with `authenticate`, `authorize` and `resume`,
    and the client that connects to it with a token, verifying the server against the system's
    CAs (here a test CA as the system's store, and localhost for stream.example.org): the
    principal's own publisher is read, another's is refused as unauthorized, the connection has
    the auth and resume extensions, and a connection with
    a wrong token ends with the goodbye of a refused authentication."""
    ca = TestCA.make(tmp_path, "server CA")
    issued = ca.issue("localhost", san=("localhost", "127.0.0.1"))
    block = _swap(
        _block("python", "authenticate=check_token"),
        {
            '"tls://0.0.0.0:7000"': '"tls://127.0.0.1:0"',
            '"tls://stream.example.org:7000"': "f\"tls://localhost:{server.url.rsplit(':', 1)[1]}\"",
        },
    )
    setup = (
        "import os, ssl\n"
        f"os.environ['SSL_CERT_FILE'] = {str(ca.cert)!r}\n"
        "server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)\n"
        f"server_ctx.load_cert_chain({str(issued.cert)!r}, {str(issued.key)!r})\n"
        "publishers = {'users/{who}/numbers': lambda params: rstreams.range(0, 3).map(lambda i: b'%d' % i)}\n"
        "def check_token(credentials):\n"
        "    return 'alice' if getattr(credentials, 'token', None) == 's3cret-token' else None\n"
        "async def read(conn, name):\n"
        "    try:\n"
        "        return [n async for n in conn.publisher(name)]\n"
        "    except Exception as error:\n"
        "        return type(error).__name__\n"
    )
    after = (
        "print(await read(conn, 'users/alice/numbers'))\n"
        "print(await read(conn, 'users/bob/numbers'))\n"
        "from rstreams.wire.extensions import AUTH, RESUME\n"
        "print({AUTH.id, RESUME.id} <= conn.extensions)\n"
        "await conn.aclose()\n"
        "wrong = await rstreams.connect(server.url.replace('127.0.0.1', 'localhost'), auth='wrong')\n"
        "print(await read(wrong, 'users/alice/numbers'))\n"
        "await wrong.aclose()\n"
        "await server.aclose()\n"
    )
    said = run_snippet(in_async_main(setup, block, after)).splitlines()
    assert said == ["[b'0', b'1', b'2']", "Unauthorized", "True", "AuthRefusedError"], said


def _lines(block: str) -> list[tuple[list[str], str]]:
    """Each command of a shell block: (its arguments, its comment)."""
    found = []
    for line in block.splitlines():
        command, _, comment = line.partition(" #")
        if command.strip():
            found.append((shlex.split(command), comment.strip()))
    return found


@pytest.mark.timeout(180)  # (above the server's line and three commands: 10 + 3 x 30 s of own time)
def test_the_metrics_top_and_ping_lines_run() -> None:
    """README, "Seeing where streams wait": the server with `--metrics` serves Prometheus' text where its
    comment says (on free ports here), `rstreams top` draws the columns its comment names until
    Ctrl-C (exit status 0) and `rstreams ping` answers ok with a round-trip time, exit status 0."""
    from urllib.request import urlopen

    (serve, serve_said), (top, top_said), (ping, ping_said) = _lines(_block("sh", "--metrics 127.0.0.1:9464"))
    assert serve == ["rstreams", "serve", "tcp://127.0.0.1:9000", "--metrics", "127.0.0.1:9464"], serve
    assert serve_said == "Prometheus at http://127.0.0.1:9464/metrics", serve_said
    assert top == ["rstreams", "top", serve[2]] and ping == ["rstreams", "ping", serve[2]]
    with patience.serving("tcp://127.0.0.1:0", "--metrics", "127.0.0.1:0", env=ENV) as (server, url):
        assert server.stdout is not None
        metrics = patience.child_line(server, "its metrics line").strip()
        assert re.fullmatch(r"metrics at http://127\.0\.0\.1:\d+/metrics", metrics), metrics
        text = patience.call(lambda: urlopen(metrics.split(" at ")[1], timeout=10).read().decode())
        assert "rstreams_connections" in text, text[:2000]
        done = patience.run([*RSTREAMS, "ping", url], 30, capture_output=True, text=True, env=ENV)
        assert done.returncode == 0 and re.match(rf"{re.escape(url)}: ok in [\d.]+ ms", done.stdout), done
        assert ping_said.startswith("health and round-trip time"), ping_said
        viewer = subprocess.Popen(
            [*RSTREAMS, "top", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        )
        try:
            header = ""
            while "DEMAND" not in header:
                header = patience.child_line(viewer, "its table")
            viewer.send_signal(signal.SIGINT)
            assert patience.wait_child(viewer, 30) == 0
        finally:
            patience.stop_child(viewer)
    columns = re.split(r"\s{2,}", header.strip())
    assert columns == ["PUBLISHER", "SUBSCRIBER", "DEMAND", "EL/S", "WAIT DEMAND", "WAIT SOCKET"], columns
    assert top_said == "live: demand, rate, % waiting for demand / socket", top_said


OFFER = ["--publishers", "examples/conformance_offer.py", "--resume"]
"""What the text after the conformance block serves the conformance publishers with."""


def _conformance_lines() -> list[list[str]]:
    lines = _lines(_block("sh", "rstreams conformance"))
    assert [argv[:2] for argv, _ in lines] == [["rstreams", "conformance"]] * 4, lines
    return [argv for argv, _ in lines]


def _run_suite(line: list[str], url: str, cwd: Path, token: str = "") -> int:
    """A documented `rstreams conformance` line against ``url`` (for its example host): it exits
    0 with cases passed and none failed; how many passed."""
    argv = [url if arg.startswith(("tcp://host:", "tls://host:")) else arg for arg in line]
    argv = [token if arg == "$TOKEN" else arg for arg in argv]
    done = patience.run([*RSTREAMS, *argv[1:]], 60, capture_output=True, text=True, env=ENV, cwd=cwd)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    total = re.search(r"^total\s+(\d+)\s+(\d+)\s+(\d+)$", done.stdout, re.M)
    assert total and int(total.group(1)) > 0 and total.group(2) == "0", done.stdout[-3000:]
    return int(total.group(1))


def _offer() -> list[str]:
    said = " ".join(README.read_text().split())
    assert f"`rstreams serve URL {' '.join(OFFER)}` serves them" in said, "the text names another offer"
    return [OFFER[0], str(ROOT / OFFER[1]), *OFFER[2:]]


def test_the_conformance_line_over_tcp_runs(tmp_path: Path) -> None:
    """README, "Testing any RS.io endpoint", the first line, against `rstreams serve URL --publishers
    examples/conformance_offer.py --resume`: nothing fails. (The WebSocket line waits for the
    idle timeout it names, 60 s and then 120 s for the keepalive case: test_readme.py parses it.)"""
    tcp, _, ws, _ = _conformance_lines()
    assert tcp == ["rstreams", "conformance", "tcp://host:7000"], tcp
    assert ws[2].startswith("ws://") and "--idle-timeout" in ws, ws
    with patience.serving("tcp://127.0.0.1:0", *_offer(), env=ENV) as (server, url):
        _run_suite(tcp, url, tmp_path)
        server.kill()  # (its orderly stop after the suite takes seconds: not what is tested here)


def test_the_conformance_line_over_tls_runs(tmp_path: Path) -> None:
    """The TLS line, its `ca.pem` the CA of the server's certificate: nothing fails."""
    _, tls, _, _ = _conformance_lines()
    assert tls == ["rstreams", "conformance", "tls://host:7443", "--cafile", "ca.pem"], tls
    ca = TestCA.make(tmp_path, "server CA")
    issued = ca.issue("localhost", san=("localhost", "127.0.0.1"))
    (tmp_path / "ca.pem").write_bytes(ca.cert.read_bytes())
    serving = ["tls://127.0.0.1:0", "--tls-cert", str(issued.cert), "--tls-key", str(issued.key), *_offer()]
    with patience.serving(*serving, env=ENV) as (server, url):
        _run_suite(tls, url.replace("127.0.0.1", "localhost"), tmp_path)
        server.kill()


def test_the_conformance_line_for_a_token_runs_the_auth_cases(tmp_path: Path) -> None:
    """The last line, against the same server requiring the token: every auth case passes, as
    many as the Java section says run against a server requiring a token."""
    *_, (auth, said) = _lines(_block("sh", "rstreams conformance"))
    assert said == "requires a token" and auth[-4:] == ["--token", "$TOKEN", "--publisher", "range"], auth
    with patience.serving("tcp://127.0.0.1:0", "--token", "t0ken", *_offer(), env=ENV) as (server, url):
        passed = _run_suite(auth, url, tmp_path, "t0ken")
        server.kill()
    cases = re.search(r"the (\d+) auth\s+cases run against a server requiring a token", README.read_text())
    assert cases and passed == int(cases.group(1)), (passed, cases)


def test_the_two_commands_are_the_scripts() -> None:
    """README, "Two commands": each script makes the virtual environment its comment names; demo.sh
    runs `rstreams demo` with the options it is given, and the options the text passes on are
    `rstreams demo`'s."""
    (demo, demo_said), (test, test_said) = _lines(_block("sh", "bash scripts/demo.sh"))
    assert demo == ["bash", "scripts/demo.sh"] and test == ["bash", "scripts/test.sh"]
    for argv, comment in ((demo, demo_said), (test, test_said)):
        venv = re.match(r"set up (\.venv-[a-z]+) ", comment)
        assert venv, comment
        assert re.search(rf"^\s*setup_venv {re.escape(venv.group(1))} ", (ROOT / argv[1]).read_text(), re.M)
    assert demo_said.endswith("run the main job: rstreams demo"), demo_said
    assert re.search(r'^exec "\$VENV/bin/rstreams" demo "\$@"$', (ROOT / "scripts/demo.sh").read_text(), re.M)
    assert test_said == "set up .venv-test and run the whole test suite, all languages", test_said
    passed_on = re.search(r"`bash scripts/demo\.sh ([^`]*)` passes options on", README.read_text())
    assert passed_on, "README.md no longer shows the demo script passing options on"
    cli._parser().parse_args(["demo", *shlex.split(passed_on.group(1))])
