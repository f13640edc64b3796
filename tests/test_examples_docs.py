"""The Python blocks of docs/*.md, run as written there: each block is run by a test (here, or in
the test file that :data:`ELSEWHERE` names), and a new block without one fails
:func:`test_every_python_block_of_the_docs_is_run_by_a_test`. Addresses the documents fix
(ports 7000, 9464, a host of example.org) become free loopback ones; each such change is an
exact string of the block, so a block that changes fails here until its test follows. The
blocks run in a child process each, as tests/test_readme.py runs the README's (testkit.snippets)."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from rstreams.conformance import _runner
from rstreams.conformance.clients import main as clients_main
from testkit import patience
from testkit.scripts import load_script
from testkit.snippets import fenced, in_async_main
from testkit.snippets import run as run_snippet
from testkit.tls import TestCA

pytestmark = pytest.mark.timeout(120)
"""Each test's last resort, above its child's own-time bound (60 s, test_readme._run)."""

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

ELSEWHERE = {
    ("observability.md", 'getLogger("rstreams.frames")'): "tests/observe/test_frames_doc.py",
    ("operators.md", "keys.debounce(0.05)"): "tests/flow/test_operator_docs.py",
    ("operators.md", "repeated = rstreams.concat"): "tests/flow/test_operator_docs.py",
    ("replay.md", "fetch_range(server.url"): "tests/replay/test_docs.py",
    ("web.md", "with LivePage("): "tests/web/test_web_md.py",
    ("web.md", "static_file(name)"): "tests/web/test_web_md.py",
}
"""Blocks another test file runs: (page, a string only that block holds) -> the file."""

HERE = {
    ("conformance.md", "conformance_publishers()"),
    ("observability.md", 'metrics="0.0.0.0:9464")\nserver.metrics()'),
    ("observability.md", "except MetricsExpositionError"),
    ("observability.md", "TraceContextTextMapPropagator"),
    ("observability.md", "replay_metrics("),
    ("resumption.md", "resume=True"),
    ("security.md", "server_ctx.load_cert_chain"),
    ("security.md", "server_ctx.verify_mode"),
    ("security.md", "def authenticate("),
    ("security.md", "origins=["),
    ("tck.md", "class TestMyPublisher"),
    ("tck.md", "verify_publisher(my_publisher"),
}
"""Blocks this file's tests run (each test finds its block with :func:`_block`)."""


def _blocks(page: str) -> list[str]:
    """The ```python blocks of docs/PAGE, dedented (some sit inside a list item)."""
    return [block + "\n" for language, block in fenced((DOCS / page).read_text()) if language == "python"]


def _block(page: str, marker: str) -> str:
    found = [block for block in _blocks(page) if marker in block]
    assert len(found) == 1, f"docs/{page}: {len(found)} Python blocks hold {marker!r}"
    return found[0]


def _swap(block: str, changes: dict[str, str]) -> str:
    """``block`` with each key replaced by its value; a key the block lacks fails the test."""
    for old, new in changes.items():
        assert old in block, f"the block no longer holds {old!r}:\n{block}"
        block = block.replace(old, new)
    return block


def test_every_python_block_of_the_docs_is_run_by_a_test() -> None:
    known = HERE | set(ELSEWHERE)
    unrun, ambiguous = [], []
    for page in sorted(p.name for p in DOCS.glob("*.md")):
        for block in _blocks(page):
            markers = [marker for doc, marker in known if doc == page and marker in block]
            if not markers:
                unrun.append(f"docs/{page}: {block.splitlines()[0]!r}...")
            elif len(markers) > 1:
                ambiguous.append(f"docs/{page}: {markers}")
    assert not unrun, f"Python blocks no test runs (add one here, or to ELSEWHERE): {unrun}"
    assert not ambiguous, ambiguous
    for (page, marker), test in ELSEWHERE.items():
        _block(page, marker)
        assert f"docs/{page}" in (ROOT / test).read_text(), f"{test} does not say it runs docs/{page}"
    for page, marker in HERE:
        _block(page, marker)


def test_the_conformance_offer_serves_every_conformance_publisher() -> None:
    """docs/conformance.md: the offer and `on_connection` serve all eight publishers (echo too)."""
    block = _swap(_block("conformance.md", "conformance_publishers()"), {":5000": ":0"})
    after = (
        "from rstreams.conformance import Options, probe\n"
        "print(' '.join(sorted(await probe(server.url, Options()))))\n"
        "await server.aclose()\n"
    )
    table = re.findall(r"^\| `conformance/(\w+)", (DOCS / "conformance.md").read_text(), re.M)
    assert len(table) == 8, table
    assert run_snippet(in_async_main("", block, after)).split() == sorted(table)


def test_the_metrics_sample_says_where_metrics_are() -> None:
    """docs/observability.md's first block: `server.metrics()` is plain data (JSON-able), and
    `server.metrics_url` is what its comment shows, but for the port (here a free one)."""
    block = _block("observability.md", 'metrics="0.0.0.0:9464")\nserver.metrics()')
    shown = re.search(r"server\.metrics_url\s+# '(.*)'", block)
    assert shown, block
    block = _swap(block, {":7000": ":0", '"0.0.0.0:9464"': '"0.0.0.0:0"'})
    after = "print(server.metrics_url)\njson.dumps(server.metrics())\nawait server.aclose()\n"
    said = run_snippet(in_async_main("import json\npublishers = {}", block, after)).strip()
    assert re.fullmatch(re.escape(shown.group(1)).replace("9464", r"[1-9]\d*"), said), said


def test_the_metrics_address_error_is_told_from_the_serving_one() -> None:
    """docs/observability.md: `except MetricsExpositionError` catches a taken metrics port,
    `except OSError` a taken serving address; the block runs once with each port taken."""
    block = _swap(
        _block("observability.md", "except MetricsExpositionError"), {'"127.0.0.1:9464"': "metrics"}
    )
    setup = (
        "import socket\n"
        "taken = socket.socket()\n"
        "taken.bind(('127.0.0.1', 0))\n"
        "taken.listen()\n"
        "PORT = taken.getsockname()[1]\n"
        "publishers = {}\n"
    )
    body = (
        "url, metrics = 'tcp://127.0.0.1:0', f'127.0.0.1:{PORT}'\n"
        + block
        + "url, metrics = f'tcp://127.0.0.1:{PORT}', '127.0.0.1:0'\n"
        + block
        + "print(PORT)\n"
    )
    first, second, port = run_snippet(in_async_main(setup, body, "")).splitlines()
    assert first == f"port {port} is taken: pick another for metrics="
    assert second.startswith(f"cannot serve on tcp://127.0.0.1:{port}: "), second


def test_the_traced_subscription_makes_the_spans_the_tree_shows() -> None:
    """docs/observability.md, "Traces": the block under an SDK TracerProvider makes the spans of
    the tree below it, both children of the caller's span through the traceparent it injects."""
    pytest.importorskip("opentelemetry.sdk")
    text = (DOCS / "observability.md").read_text()
    tree = text[text.index("read sensors                 trace") :].split("```")[0]
    shown = re.findall(r"[├└]─ (.+?)\s{2,}(CLIENT|SERVER)\b.*outcome (\w+)", tree)
    assert len(shown) == 2, tree
    setup = (
        "from opentelemetry import trace as sdk_trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "spans = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(spans))\n"
        "sdk_trace.set_tracer_provider(provider)\n"
    )
    before = (
        "server = await rstreams.serve('tcp://127.0.0.1:0', {'sensors/{id}': rstreams.just(b'21.5')})\n"
        "conn = await rstreams.connect(server.url)\n"
    )
    after = (
        "await conn.aclose()\n"
        "await server.aclose()\n"
        "names = {s.context.span_id: s.name for s in spans.get_finished_spans()}\n"
        "for s in spans.get_finished_spans():\n"
        "    parent = names.get(s.parent.span_id) if s.parent else None\n"
        "    print(s.name, s.kind.name, parent, s.attributes.get('rstreams.outcome'),\n"
        "          s.attributes.get('rstreams.publisher'),\n"
        "          'first element' in [e.name for e in s.events], sep='|')\n"
    )
    lines = run_snippet(
        in_async_main(setup, before + _block("observability.md", "TraceContextTextMapPropagator"), after)
    )
    made = sorted(line.split("|") for line in lines.splitlines())
    assert made == sorted(
        [["read sensors", "INTERNAL", "None", "None", "None", "False"]]
        + [[name, kind, "read sensors", outcome, "sensors/7", "True"] for name, kind, outcome in shown]
    ), lines


def test_the_replay_metrics_hold_what_the_page_lists() -> None:
    """docs/observability.md, "Replay logs": the block adds the logs' numbers, with the keys the
    sentence after it lists (`staged_bytes` for the sink only)."""
    text = " ".join((DOCS / "observability.md").read_text().split())
    sentence = re.search(r'\["logs"\]\[name\]` then holds (.*?); `/metrics`', text)
    assert sentence, "docs/observability.md lost the keys of a replay log's numbers"
    listed = re.findall(r"`(\w+)`", sentence.group(1).split(" and, for a sink log, ")[0])
    sink_only = re.findall(r"`(\w+)`", sentence.group(1).split(" and, for a sink log, ")[1])
    setup = (
        "import json\n"
        "from rstreams.replay import ReplayLog\n"
        "url = 'tcp://127.0.0.1:0'\n"
        "sink = ReplayLog('results', capacity=10, evict=True)\n"
    )
    before = "log = ReplayLog('sensors', capacity=8).feed(rstreams.range(0, 3).map(lambda i: b'%d' % i))\n"
    block = _swap(_block("observability.md", "replay_metrics("), {'"0.0.0.0:9464"': '"127.0.0.1:0"'})
    after = (
        "logs = server.metrics()['replay']['logs']\n"
        "print(json.dumps({name: sorted(numbers) for name, numbers in logs.items()}))\n"
        "await server.aclose()\n"
    )
    keys = json.loads(run_snippet(in_async_main(setup, before + block, after)))
    assert keys == {"sensors": sorted(listed), "results": sorted(listed + sink_only)}


def test_the_resumption_sample_and_its_alternatives_run() -> None:
    """docs/resumption.md: `resume=True` on both sides, and each `# or resume=Resume(...)`."""
    block = _block("resumption.md", "resume=True")
    alternatives = re.findall(r"# or (resume=Resume\([^)]*\))", block)
    assert len(alternatives) == 2, block
    block = _swap(block, {"0.0.0.0:7000": "127.0.0.1:0", '"tcp://stream.example.org:7000"': "server.url"})
    variant = block
    for alternative in alternatives:
        variant = re.sub(
            r"resume=True(?=\)\s+# or " + re.escape(alternative) + ")", alternative, variant, count=1
        )
    assert variant.count("resume=True") == 0, variant
    setup = "publishers = {'numbers': rstreams.range(0, 3).map(lambda i: b'%d' % i)}\n"
    after = (
        "print([n async for n in conn.publisher('numbers')])\nawait conn.aclose()\nawait server.aclose()\n"
    )
    for code in (block, variant):
        assert run_snippet(in_async_main(setup, code, after)).strip() == "[b'0', b'1', b'2']"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files docs/security.md's blocks load, made by test CAs: a server certificate for
    localhost (server.pem, server.key, its CA server-ca.pem) and alice's client certificate
    (alice.pem, alice.key, its CA clients-ca.pem)."""
    directory = tmp_path_factory.mktemp("security-md")
    server = TestCA.make(directory, "server CA")
    clients = TestCA.make(directory, "clients CA")
    issued = {
        "server": server.issue("localhost", san=("localhost", "127.0.0.1")),
        "alice": clients.issue("alice", client=True),
    }
    for name, files in issued.items():
        (directory / f"{name}.pem").write_bytes(files.cert.read_bytes())
        (directory / f"{name}.key").write_bytes(files.key.read_bytes())
    (directory / "server-ca.pem").write_bytes(server.cert.read_bytes())
    (directory / "clients-ca.pem").write_bytes(clients.cert.read_bytes())
    return directory


def _in_certificates(directory: Path) -> str:
    """Setup of a security.md block: its files in the working directory, and the server's CA as
    the "system's" trust store (what `ssl.create_default_context()` loads)."""
    return (
        "import os, ssl\n"
        f"os.chdir({str(directory)!r})\n"
        "os.environ['SSL_CERT_FILE'] = 'server-ca.pem'\n"
        "publishers = {'numbers': rstreams.range(0, 3).map(lambda i: b'%d' % i)}\n"
        "async def read(conn):\n"
        "    try:\n"
        "        return [n async for n in conn.publisher('numbers')]\n"
        "    except Exception as error:\n"
        "        return type(error).__name__\n"
    )


def test_the_tls_and_mutual_tls_samples_run(certificates: Path) -> None:
    """docs/security.md, "TLS" then "Mutual TLS": a client verified against the system's CAs
    reads; once the server's context requires client certificates, alice's is accepted and a
    client without one is refused in the handshake."""
    server_url = "f\"tls://localhost:{server.url.rsplit(':', 1)[1]}\""
    swaps = {'"tls://stream.example.org:7000"': server_url}
    tls = _swap(_block("security.md", "server_ctx.load_cert_chain"), {"0.0.0.0:7000": "127.0.0.1:0", **swaps})
    mutual = _swap(_block("security.md", "server_ctx.verify_mode"), swaps)
    without = f"print(await read(await connect({server_url})))\n"
    code = tls + "print(await read(conn))\n" + mutual + "print(await read(conn))\n" + without
    said = run_snippet(in_async_main(_in_certificates(certificates), code, "await server.aclose()\n"))
    assert said.splitlines() == ["[b'0', b'1', b'2']", "[b'0', b'1', b'2']", "TLSRefusedError"], said


def test_the_authentication_sample_runs_and_its_stub_refuses(certificates: Path) -> None:
    """docs/security.md, "Authentication and authorization": the block as it stands (its hooks'
    bodies are `...`, so `authenticate` returns None: every client is refused)."""
    block = _swap(_block("security.md", "def authenticate("), {"connect(url,": "connect(server.url,"})
    setup = (
        _in_certificates(certificates)
        + "url = 'tls://127.0.0.1:0'\n"
        + "ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)\n"
        + "ctx.load_cert_chain('server.pem', 'server.key')\n"
    )
    after = "print(await read(conn))\nawait server.aclose()\n"
    assert run_snippet(in_async_main(setup, block, after)).strip() == "AuthRefusedError"


def test_the_origins_sample_serves(certificates: Path) -> None:
    """docs/security.md: a `wss://` server with the origins of a dashboard's pages."""
    pytest.importorskip("websockets")
    block = _swap(_block("security.md", "origins=["), {"0.0.0.0:8443": "127.0.0.1:0"})
    setup = (
        _in_certificates(certificates)
        + "from rstreams.net import serve  # (the page's first block imports it)\n"
        + "offer = publishers\n"
        + "context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)\n"
        + "context.load_cert_chain('server.pem', 'server.key')\n"
    )
    after = "print(server.url)\nawait server.aclose()\n"
    assert re.fullmatch(
        r"wss://127\.0\.0\.1:[1-9]\d*/rsio", run_snippet(in_async_main(setup, block, after)).strip()
    )


TCK_SETUP = (
    "import rstreams\n"
    "def my_publisher(elements):\n"
    "    return rstreams.range(0, elements)\n"
    "def stop_my_publishers_threads():\n"
    "    pass\n"
)
"""What docs/tck.md's blocks leave to the reader: a publisher of exactly `elements` elements."""


def test_the_programmatic_tck_sample_passes_a_correct_publisher() -> None:
    """docs/tck.md: `verify_publisher` without pytest, its report printed and asserted ok."""
    block = _block("tck.md", "verify_publisher(my_publisher")
    out = run_snippet(TCK_SETUP + block).splitlines()
    comment = re.search(r"print\(report\)\s+# a table: ([\w, ]+) \(", block)
    assert comment, block
    assert out[0].split() == comment.group(1).split(", "), out[0]
    assert re.fullmatch(r"\d+ passed, 0 failed, \d+ skipped of \d+ cases", out[-1]), out[-1]


def test_the_pytest_tck_sample_collects_and_passes(tmp_path: Path) -> None:
    """docs/tck.md: the `TestMyPublisher` class, under pytest, is one test per case (two of
    them run here: the rest run in tests/tck against rstreams' own publishers)."""
    (tmp_path / "test_my_publisher.py").write_text(TCK_SETUP + _block("tck.md", "class TestMyPublisher"))
    done = patience.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "spec101 or spec102", "."],
        60,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b[2-9] passed\b", done.stdout), done.stdout[-2000:]


def _python_m_lines(module: str) -> list[tuple[str, list[str]]]:
    """`python -m MODULE ...` lines of the documents' shell blocks (continuations joined)."""
    return [
        (page.name, shlex.split(line.split(" #")[0])[3:])
        for page in sorted(DOCS.glob("*.md"))
        for language, block in fenced(page.read_text())
        if language in ("", "sh")
        for line in block.replace("\\\n", " ").splitlines()
        if line.startswith(f"python -m {module} ")
    ]


def test_every_conformance_line_of_the_docs_parses() -> None:
    """`python -m rstreams.conformance ...` and `python -m rstreams.conformance.clients ...` as
    the documents write them: the command accepts every argument (the client suite's line is
    checked with `--list` added, which runs nothing)."""
    suite, clients = _python_m_lines("rstreams.conformance"), _python_m_lines("rstreams.conformance.clients")
    assert len(suite) >= 5 and len(clients) >= 3, (suite, clients)
    for _, argv in suite:
        _runner._parser().parse_args(argv)
    for page, argv in clients:
        assert clients_main([*argv, "--list"]) == 0, (page, argv)


def test_the_known_bugs_docs_name_are_the_suite_s() -> None:
    """docs/conformance.md, "Our server in CI": the cases it says are xfail for a known bug are
    tests/conformance/test_suite.py's `KNOWN_BUGS` (none: it says so)."""
    source = ast.parse((ROOT / "tests" / "conformance" / "test_suite.py").read_text())
    known = next(
        ast.literal_eval(node.value)
        for node in source.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "KNOWN_BUGS" and node.value
    )
    text = " ".join((DOCS / "conformance.md").read_text().split())
    said = text[text.index("`xfail(strict=True)`") :].split("`tests/conformance/test_hostile.py`")[0]
    named = set(re.findall(r"`(\w+\.\w+)`", said))
    assert named == set(known), (said, sorted(known))
    assert ("today there is none" in said) == (not known), said


def test_the_extension_cases_the_page_describes_are_the_suite_s() -> None:
    """docs/conformance.md, "Extensions (`ex`)": every section of PROTOCOL.md an `ex` case cites
    is named there, with the case ids' prefix (`ex.ct_*`), so an extension's new cases are
    described as they are added."""
    from rstreams.conformance import CASES

    text = (DOCS / "conformance.md").read_text()
    said = text[text.index("## Extensions (`ex`)") :].split("\n## ")[0]
    extension_cases = [case for case in CASES if case.area == "ex"]
    sections = {re.sub(r"(§\d+)\.\d+$", r"\1", case.cite.split()[-1]) for case in extension_cases}
    sections = {"§4.4" if section == "§4" else section for section in sections}
    assert not {s for s in sections if not re.search(re.escape(s) + r"\b", said)}, (sorted(sections), said)
    unnamed = [
        case.id
        for case in extension_cases
        if case.cite.split()[-1] != "§4.4"
        and f"`{case.id}`" not in said
        and f"`{case.id.split('_')[0]}_*`" not in said
    ]
    assert not unnamed, f"ex cases neither named nor under a named prefix (`ex.ct_*`): {unnamed}"


def test_the_cases_said_to_need_an_idle_timeout_are_the_suite_s() -> None:
    """README.md and docs/conformance.md name the cases that skip without `--idle-timeout`: they
    are the cases that wait for the endpoint's idle timeout."""
    from rstreams.conformance import CASES

    waiting = {case.id for case in CASES if case.idle_waits}
    assert waiting
    for doc in (ROOT / "README.md", DOCS / "conformance.md"):
        text = " ".join(doc.read_text().split())
        said = re.search(r"without it (`ex\.\w+`(?:,? and `ex\.\w+`)*) (?:are skipped|skip)", text)
        assert said, f"{doc.name} no longer says which cases skip without --idle-timeout"
        assert set(re.findall(r"`(ex\.\w+)`", said.group(1))) == waiting, (doc.name, said.group(0), waiting)


def test_the_tck_page_s_defaults_are_the_code_s() -> None:
    """docs/tck.md: the options all four `verify_*` take, and the timeouts' environment
    variables, with the defaults the tables state."""
    import inspect

    import rstreams.tck

    text = (DOCS / "tck.md").read_text()
    options = re.findall(r"^\| `(\w+)` \| (`TestEnvironment\(\)`|[^|`]+|`[^`]+`) \|", text, re.M)
    stated = {
        name: default.strip().strip("`") for name, default in options if not name.startswith("RSTREAMS_")
    }
    assert set(stated) == {"env", "case_timeout", "skip_stochastic", "max_elements"}, stated
    verifiers = [getattr(rstreams.tck, f"verify_{kind}") for kind in ("publisher", "processor")] + [
        getattr(rstreams.tck, f"verify_subscriber_{kind}") for kind in ("whitebox", "blackbox")
    ]
    for verify in verifiers:
        parameters = inspect.signature(verify).parameters
        for name, default in stated.items():
            expected = None if default == "TestEnvironment()" else eval(default, {})  # (numbers, **, -)
            assert parameters[name].default == expected, (verify.__name__, name, default)
    variables = dict(re.findall(r"^\| `(RSTREAMS_TCK_\w+)` \| (\d+) \|", text, re.M))
    assert len(variables) == 4, variables
    for name, millis in variables.items():
        module = next(
            path
            for path in (ROOT / "src" / "rstreams" / "tck").glob("*.py")
            if f'"{name}"' in path.read_text()
        )
        constant = re.search(rf'env_millis\("{name}", (\w+)\)', module.read_text())
        assert constant, (name, module)
        imported = __import__(f"rstreams.tck.{module.stem}", fromlist=["_"])
        assert getattr(imported, constant.group(1)) == int(millis), name


def test_every_rstreams_name_the_documents_write_exists() -> None:
    """`rstreams.x.Y` in the README, PROTOCOL.md and docs/*.md: a module, class, function or
    attribute that imports as written; or, for the names that are not Python's (a logger, a
    span attribute), a string the code uses (`"rstreams.frames"`)."""
    import importlib

    documents = [ROOT / "README.md", ROOT / "PROTOCOL.md", *sorted(DOCS.glob("*.md"))]
    named = {
        (doc.name, name)
        for doc in documents
        for name in re.findall(r"`(rstreams(?:\.[A-Za-z_]\w*)+)", doc.read_text())
    }
    assert len(named) >= 60, named
    code = "".join(path.read_text() for path in (ROOT / "src" / "rstreams").rglob("*.py"))

    def exists(dotted: str) -> bool:
        parts = dotted.split(".")
        for split in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for part in parts[split:]:
                if not hasattr(found, part):
                    return False
                found = getattr(found, part)
            return True
        return False

    missing = sorted(f"{doc}: {name}" for doc, name in named if not exists(name) and f'"{name}"' not in code)
    assert not missing, f"names the documents write that rstreams does not have: {missing}"


@pytest.mark.parametrize("generator", ["make_protocol_docs.py", "make_tck_docs.py"])
def test_a_generator_s_help_or_a_typo_rewrites_nothing(generator: str) -> None:
    """docs/'s generators take `--check` or nothing: `--help` says so (exit 0) and a misspelt
    option is a usage error (exit 2), neither writing a file, where both used to regenerate."""
    script = load_script(f"docs/{generator}", f"docs_{generator.removesuffix('.py')}")
    watched = [ROOT / "PROTOCOL.md", DOCS / "protocol-vectors.json", DOCS / "tck.md"]
    before = [path.stat().st_mtime_ns for path in watched]
    assert script.main(["--help"]) == 0
    assert script.main(["--chek"]) == 2
    assert [path.stat().st_mtime_ns for path in watched] == before


SCRAPE = """
import asyncio, itertools, urllib.request
def sensor(params):
    return rstreams.from_iterable(itertools.count()).map(lambda i: i.to_bytes(8, "big"))
class Ten:
    def on_subscribe(self, subscription):
        subscription.request(10)
    def on_next(self, element):
        pass
    def on_error(self, error):
        pass
    def on_complete(self):
        pass
"""

SCRAPE_MAIN = """
server = await rstreams.serve("tcp://127.0.0.1:0", {"sensors/{id}": sensor}, metrics="127.0.0.1:0")
conn = await rstreams.connect(server.url)
taken = 0
async for _ in conn.publisher("sensors/kitchen"):
    taken += 1
    if taken == 1000:
        break
conn.publisher("sensors/attic").subscribe(Ten())
await asyncio.sleep(0.5)
print(await asyncio.to_thread(lambda: urllib.request.urlopen(server.metrics_url).read().decode()))
await conn.aclose()
await server.aclose()
"""


def test_the_scrape_is_what_such_a_server_exposes() -> None:
    """docs/observability.md, "A scrape": a server of 8-byte elements, one stream cancelled after
    1,000 of them and one whose subscriber asked for 10 and then nothing, exposes the lines
    shown. How many elements went out before the cancel arrived is the loop's timing (the page's
    1,034: 1,024 of the first stream's): those lines are checked against each other and the
    demand granted, the others exactly."""
    text = (DOCS / "observability.md").read_text()
    shown = next(block for _, block in fenced(text) if block.startswith("rstreams_connections_open"))
    lines = run_snippet(in_async_main(SCRAPE, SCRAPE_MAIN, "")).splitlines()
    exposed = {
        name: float(value) for name, value in (line.rsplit(" ", 1) for line in lines if line[:1].isalpha())
    }
    said = {name: float(value) for name, value in (line.rsplit(" ", 1) for line in shown.splitlines())}
    assert set(said) <= set(exposed), sorted(set(said) - set(exposed))
    key = '{publisher="sensors/{id}"}'
    timed = [f"rstreams_{name}{key}" for name in ("elements_sent_total", "element_bytes_sent_total")]
    timed += ["rstreams_bytes_sent_total", f"rstreams_stalled_demand_seconds_total{key}"]
    assert {name: exposed[name] for name in said if name not in timed} == {
        name: value for name, value in said.items() if name not in timed
    }
    for numbers in (said, exposed):
        elements, element_bytes, sent, stalled = (numbers[name] for name in timed)
        assert 1010 <= elements <= numbers[f"rstreams_demand_granted_total{key}"], numbers
        assert (element_bytes, stalled > 0) == (8 * elements, True), numbers
        assert element_bytes < sent, numbers


def test_the_reason_labels_the_page_lists_are_the_code_s() -> None:
    """docs/observability.md: the `reason` label values of goodbyes and of stream errors are
    exactly those the code reduces texts to."""
    from rstreams.observe import _metrics

    text = " ".join((DOCS / "observability.md").read_text().split())
    goodbyes = text[text.index("Goodbye `reason`s: ") : text.index("Stream error `reason`s: ")]
    errors = text[text.index("Stream error `reason`s: ") :].split("## ", 1)[0]
    labels = {label for _, label in _metrics._GOODBYES} | {"protocol error", "other"}
    assert set(re.findall(r"`([a-z ]+)`", goodbyes)) - {"reason"} == labels, goodbyes
    labels = {label for _, label in _metrics._STREAM_ERRORS} | {"publisher error"}
    assert set(re.findall(r"`([a-z ]+)`", errors)) - {"reason", "onError"} == labels, errors
