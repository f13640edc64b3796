"""The interop matrix: every client (Python, Java, JavaScript in Node and in Chromium) against
every server (Python, Java, and the JavaScript package as the publisher) over TCP and
WebSocket, each cell through the same cases, with real processes.

* Servers, each started once and requiring a token: ``rstreams serve URL --token T
  --publishers tests/interop/offer.py`` (the built-in ``counter`` as INT64 and the conformance
  publishers; one process per transport), the Java ``InteropServerMain`` and
  ``tests/interop/server.mjs`` (``listen()`` of @rstreams/rsio), both with the same names and
  both transports in one process.
* Clients, each one process for all its cells: ``tests/interop/driver.py`` (rstreams.connect),
  ``InteropClientMain`` (the Java binding's RsioClient), ``tests/interop/driver.mjs``
  (@rstreams/rsio in Node) and ``tests/interop/driver_browser.py`` (the browser build of
  @rstreams/rsio in headless Chromium, WebSocket cells only; it runs the same
  ``driver-core.mjs`` as the Node driver). They print what their subscribers saw as JSON lines;
  the tests judge them.

The README's "Interop matrix" table is generated from :data:`CASES`, :data:`CLIENTS`,
:data:`SERVERS` and :data:`NOT_YET`; a test keeps it in step
(``python tests/interop/test_matrix.py --write`` rewrites it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit import patience

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
JAVA = ROOT / "java"
JS = ROOT / "js"
TOKEN = "interop-matrix-token"
WRONG_TOKEN = "not-the-token"
STARTUP_SECONDS = 120.0
RUN_SECONDS = 240.0

CLIENTS = {"python": "Python", "java": "Java", "javascript": "JavaScript", "browser": "Browser (Chromium)"}
SERVERS = {
    "python": "Python (`rstreams serve`)",
    "java": "Java (`RsioServer`)",
    "javascript": "JavaScript (`listen`)",
}
TRANSPORTS = {"tcp": "TCP", "ws": "WebSocket"}

NOT_YET: dict[tuple[str, str, str], str] = {}
"""(client, server, transport) -> why that cell is not tested yet."""

NOT_APPLICABLE: dict[tuple[str, str, str], str] = {
    ("browser", server, "tcp"): "a browser opens no TCP socket" for server in SERVERS
}
"""(client, server, transport) -> why that cell cannot exist."""

Events = list[dict[str, Any]]


def element_bytes(index: int, size: int) -> bytes:
    """Element ``index`` of the conformance publishers (docs/conformance.md)."""
    head = min(size, 8)
    tail = bytes((k - 8) % 251 for k in range(8, size))
    return (index & ((1 << (8 * head)) - 1)).to_bytes(head, "big") + tail


# -- the cases ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One case of a cell: the streams subscribed on one connection and how to judge them."""

    key: str
    title: str
    streams: Callable[[str], list[dict[str, str]]]  # tag -> [{"name", "script", "codec"?}]
    check: Callable[[Events], None]
    token: str | None = TOKEN


def stream_events(events: Events, stream: int) -> Events:
    return [e for e in events if e.get("stream") == stream]


def kinds(events: Events) -> list[str]:
    return [e["event"] for e in events]


def nexts(events: Events) -> Events:
    return [e for e in events if e["event"] == "next"]


def assert_connected(events: Events) -> None:
    assert kinds(events)[:1] == ["connected"], events[:3]
    assert not [e for e in events if e["event"] == "timeout"], events


def check_demand(events: Events) -> None:
    assert_connected(events)
    first = stream_events(events, 0)
    assert [bytes.fromhex(e["hex"]) for e in nexts(first)] == [element_bytes(i, 8) for i in range(5)], first
    assert kinds(first) == ["next"] * 5, f"a cancelled stream must stay silent: {first}"
    stats = stream_events(events, 1)
    assert kinds(stats) == ["next", "complete"], stats
    seen = json.loads(bytes.fromhex(stats[0]["hex"]))
    # requested: what the server's local publisher was asked for, exactly the client's 3 + 2
    assert seen == {"subscribed": 1, "requested": 5, "pulled": 5, "cancelled": 1}, seen


def check_cancel_in_flight(events: Events) -> None:
    assert_connected(events)
    cancelled = stream_events(events, 0)
    got = [bytes.fromhex(e["hex"]) for e in nexts(cancelled)]
    assert 50 <= len(got) <= 200 and got == [element_bytes(i, 8) for i in range(len(got))], len(got)
    assert kinds(cancelled) == ["next"] * len(got), f"a cancelled stream must stay silent: {cancelled[-3:]}"
    after = stream_events(events, 1)  # the connection goes on
    assert [e["value"] for e in nexts(after)] == [0, 1, 2] and kinds(after)[-1] == "complete", after
    stats = stream_events(events, 2)
    assert kinds(stats) == ["next", "complete"], stats
    seen = json.loads(bytes.fromhex(stats[0]["hex"]))
    assert seen["subscribed"] == 1 and seen["cancelled"] == 1, seen
    assert len(got) <= seen["pulled"] <= seen["requested"] <= 200, seen


def check_packed(events: Events) -> None:
    assert_connected(events)
    values = [e["value"] for e in nexts(events)]
    assert values == list(range(5, 105)), values
    assert all(e["size"] == 8 for e in nexts(events))
    batches = [e["batch"] for e in nexts(events) if "batch" in e]  # the Python client sees frames
    assert not batches or max(batches) > 1, f"the server never packed elements (§7): {batches}"
    assert kinds(events)[-2:] == ["complete", "done"], events[-3:]


SPLIT_SIZE = 100_000  # above the 64 KiB split threshold (PROTOCOL.md §8)


def check_split(events: Events) -> None:
    assert_connected(events)
    got = [(e["size"], e["sha256"]) for e in nexts(events)]
    want = [(SPLIT_SIZE, hashlib.sha256(element_bytes(i, SPLIT_SIZE)).hexdigest()) for i in range(2)]
    assert got == want
    assert kinds(events)[-2:] == ["complete", "done"], events[-3:]


def check_auth_accepted(events: Events) -> None:
    assert_connected(events)
    assert [e["value"] for e in nexts(events)] == [0, 1, 2]
    assert kinds(events)[-2:] == ["complete", "done"], events[-3:]


def check_auth_refused(events: Events) -> None:
    assert not nexts(events), events
    ends = [e for e in events if e["event"] in ("closed", "connect-failed", "error", "complete")]
    assert len(ends) == 1 and ends[0]["event"] in ("closed", "connect-failed"), events
    assert "authentication failed" in ends[0]["message"], ends[0]


def check_remote_error(events: Events) -> None:
    assert_connected(events)
    assert [bytes.fromhex(e["hex"]) for e in nexts(events)] == [element_bytes(i, 8) for i in range(2)]
    assert kinds(events)[-2:] == ["error", "done"], events[-3:]
    assert "conformance/error: the publisher failed on purpose" in events[-2]["message"]


def check_unknown_name(events: Events) -> None:
    assert_connected(events)
    refused = stream_events(events, 0)
    assert kinds(refused) == ["error"], refused
    assert "no publisher named 'interop/no-such-publisher'" in refused[0]["message"]
    after = stream_events(events, 1)  # the connection goes on
    assert [e["value"] for e in nexts(after)] == [0, 1] and kinds(after)[-1] == "complete", after


CASES = [
    Case(
        "demand",
        "subscribe, request 3 then 2, cancel: the server's publisher was asked for exactly 5 and cancelled",
        lambda tag: [
            {"name": f"conformance/infinite?tag={tag}", "script": "r3 w3 r2 w5 c"},
            {"name": f"conformance/stats?tag={tag}", "script": "r1 t"},
        ],
        check_demand,
    ),
    Case(
        "cancel-in-flight",
        "request 200 of an endless stream, cancel after 50 with elements in flight: at most 200"
        " arrive, in order, then nothing; the server's publisher is cancelled, the connection goes on",
        lambda tag: [
            {"name": f"conformance/infinite?tag={tag}", "script": "r200 w50 c"},
            {"name": "counter?to=3", "script": "r3 t", "codec": "int64"},
            {"name": f"conformance/stats?tag={tag}", "script": "r1 t"},
        ],
        check_cancel_in_flight,
    ),
    Case(
        "packed",
        "`counter?from=5&to=105` as INT64: 100 values, complete; the Python client (batched) sees"
        " them arrive several to a frame (onNextPacked, §7)",
        lambda tag: [{"name": "counter?from=5&to=105", "script": "r40 w40 r60 t", "codec": "int64"}],
        check_packed,
    ),
    Case(
        "split",
        f"two {SPLIT_SIZE}-byte elements (above the 64 KiB split threshold) joined byte for byte",
        lambda tag: [{"name": f"conformance/large?size={SPLIT_SIZE}&n=2", "script": "r2 t"}],
        check_split,
    ),
    Case(
        "auth-accepted",
        "the server requires a token (§15); the right one is accepted",
        lambda tag: [{"name": "counter?to=3", "script": "r3 t", "codec": "int64"}],
        check_auth_accepted,
    ),
    Case(
        "auth-refused",
        "a wrong token: the server says goodbye (authentication failed), no element arrives",
        lambda tag: [{"name": "counter?to=3", "script": "r3 t", "codec": "int64"}],
        check_auth_refused,
        token=WRONG_TOKEN,
    ),
    Case(
        "remote-error",
        "two elements, then the publisher's onError with its text",
        lambda tag: [{"name": "conformance/error?after=2", "script": "r5 t"}],
        check_remote_error,
    ),
    Case(
        "unknown-name",
        "an unknown name is refused with onError naming it; the connection goes on",
        lambda tag: [
            {"name": "interop/no-such-publisher", "script": "r1 t"},
            {"name": "counter?to=2", "script": "r2 t", "codec": "int64"},
        ],
        check_unknown_name,
    ),
]

CELLS = [
    (client, server, transport)
    for client in CLIENTS
    for server in SERVERS
    for transport in TRANSPORTS
    if (client, server, transport) not in NOT_YET | NOT_APPLICABLE
]


def case_id(client: str, server: str, transport: str, case: Case) -> str:
    return f"{client}-{server}-{transport}-{case.key}"


def test_the_checks_catch_wrong_behaviour() -> None:
    """Each check fails on a deviation it is there for (the cells above only ever show it passing)."""

    def line(event: str, stream: int | None = 0, **fields: Any) -> dict[str, Any]:
        return {"case": "x", **({} if stream is None else {"stream": stream}), "event": event, **fields}

    def element(i: int, stream: int = 0) -> dict[str, Any]:
        return line("next", stream, size=8, hex=element_bytes(i, 8).hex())

    stats = json.dumps({"subscribed": 1, "requested": 5, "pulled": 5, "cancelled": 1}).encode().hex()
    demand = [
        line("connected", None),
        *map(element, range(5)),
        line("next", 1, hex=stats),
        line("complete", 1),
    ]
    check_demand(demand)
    with pytest.raises(AssertionError):  # an element beyond the demand
        check_demand([*demand[:6], element(5), *demand[6:]])
    more = json.dumps({"subscribed": 1, "requested": 6, "pulled": 5, "cancelled": 1}).encode().hex()
    with pytest.raises(AssertionError):  # the server asked its publisher for more than the client did
        check_demand([*demand[:6], line("next", 1, hex=more), demand[-1]])
    values = [line("next", value=v, size=8, batch=1) for v in range(5, 105)]
    with pytest.raises(AssertionError):  # never packed
        check_packed([line("connected", None), *values, line("complete"), line("done", None)])
    with pytest.raises(AssertionError):  # an element delivered without authentication
        check_auth_refused([line("connected", None), line("next", value=0), line("closed", message="x")])


# -- the README table ---------------------------------------------------------------------------

BEGIN = "<!-- generated:interop-matrix -->"
END = "<!-- /generated:interop-matrix -->"


def readme_table() -> str:
    header = ["server, transport", *(f"{label} client" for label in CLIENTS.values())]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for server, label in SERVERS.items():
        for transport, name in TRANSPORTS.items():
            cells = []
            for client in CLIENTS:
                why = NOT_YET.get((client, server, transport))
                never = NOT_APPLICABLE.get((client, server, transport))
                cells.append(
                    f"not yet: {why}" if why else f"n/a: {never}" if never else f"all {len(CASES)} cases"
                )
            lines.append(f"| {label}, {name} | " + " | ".join(cells) + " |")
    lines += ["", "| case | what every cell checks |", "|---|---|"]
    lines += [f"| `{case.key}` | {case.title} |" for case in CASES]
    return "\n".join([BEGIN, *lines, END])


def test_readme_shows_the_matrix() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme.find(BEGIN), readme.find(END)
    assert start >= 0 and end > start, f"README.md has no {BEGIN} ... {END} block"
    assert readme[start : end + len(END)] == readme_table(), (
        "README.md's interop matrix is stale: run python tests/interop/test_matrix.py --write"
    )


# -- running the servers and the clients --------------------------------------------------------


def unavailable(what: str) -> None:
    """Skip (fail under CI=true: CI must run every cell)."""
    if os.environ.get("CI") == "true":
        pytest.fail(what)
    pytest.skip(what)


def serving_lines(
    process: subprocess.Popen[str], count: int, timeout: float
) -> tuple[list[str], threading.Thread]:
    """The first ``count`` lines of ``process``'s stdout that start with ``serving `` (fails after
    ``timeout``), and the thread that goes on draining stdout until it ends (then closes it)."""
    from testkit import patience  # (here: `python tests/interop/test_matrix.py --write` has no testkit)

    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        with process.stdout:
            for line in process.stdout:
                lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    found: list[str] = []
    while len(found) < count:
        try:  # (bounded by the server's own time and ours: a loaded machine starts a JVM late)
            line = patience.get(lines, timeout, [process.pid])
        except queue.Empty as empty:
            raise AssertionError(f"{process.args!r} printed no 'serving' line: {empty}") from None
        if line is None:
            raise AssertionError(f"{process.args!r} ended (status {process.wait()}) before serving")
        if line.startswith("serving "):
            found.append(line.strip())
    return found, reader


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def node_available() -> None:
    if shutil.which("node") is None:
        unavailable("no node (Node.js 20+): the JavaScript cells need it")
    if not (JS / "node_modules" / "ws").is_dir():
        unavailable("js/node_modules is missing: run `npm ci` in js/")


@pytest.fixture(scope="module")
def java_classpath() -> str:
    """test-classes, classes and the test-scope dependencies of java/ (compiled here once)."""
    if shutil.which("mvn") is None or shutil.which("javac") is None:
        unavailable("no mvn/javac (JDK 17+ and Maven): the Java cells need them")
    out = JAVA / "target" / "interop-classpath.txt"
    patience.run(
        [
            "mvn", "-B", "-ntp", "-q", "-f", str(JAVA / "pom.xml"), "test-compile",
            "dependency:build-classpath", f"-Dmdep.outputFile={out}", "-Dmdep.includeScope=test",
        ],
        STARTUP_SECONDS * 2,
        check=True,
    )  # fmt: skip
    deps = out.read_text(encoding="utf-8").strip()
    return os.pathsep.join([str(JAVA / "target" / "test-classes"), str(JAVA / "target" / "classes"), deps])


def server_commands(
    server: str, transports: list[str], request: pytest.FixtureRequest
) -> list[tuple[list[str], dict[str, str], list[str]]]:
    """(command, environment, transports it serves, in the order it prints them) for ``server``;
    skips when the server's language is not installed."""
    listen = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/rsio"}
    # The browser driver's page comes from its own file server, on a port chosen when it starts:
    # the Python WebSocket server accepts every page's origin (--origin '*'; rstreams' servers
    # accept only their own by default, docs/security.md), as server.mjs's listen() does (its
    # origins: ["*"]) and InteropServerMain's RsioServer (its origins("*")).
    pages = {"tcp": [], "ws": ["--origin", "*"]}
    if server == "python":  # rstreams serve takes one URL
        return [
            (
                [
                    sys.executable, "-m", "rstreams.cli", "serve", listen[t], "--token", TOKEN,
                    "--publishers", str(HERE / "offer.py"), *pages[t],
                ],
                python_env(),
                [t],
            )
            for t in transports
        ]  # fmt: skip
    urls = [listen[t] for t in transports]
    if server == "java":
        classpath = request.getfixturevalue("java_classpath")
        main = "io.rstreams.conformance.InteropServerMain"
        return [(["java", "-cp", classpath, main, TOKEN, *urls], dict(os.environ), transports)]
    node_available()
    return [(["node", str(HERE / "server.mjs"), TOKEN, *urls], dict(os.environ), transports)]


@dataclass(frozen=True)
class Served:
    """The servers started: (server, transport) -> URL (or "skip: why"), and -> the process that
    serves it (the drivers' waits count its own time)."""

    urls: dict[tuple[str, str], str]
    pids: dict[tuple[str, str], int]


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest) -> Iterator[Served]:
    """Each server started once and stopped at the end; the Java and JavaScript servers listen on
    both transports in one process."""
    started: list[tuple[subprocess.Popen[str], str, list[str]]] = []
    readers: list[threading.Thread] = []
    urls: dict[tuple[str, str], str] = {}
    pids: dict[tuple[str, str], int] = {}
    try:
        for server in SERVERS:
            transports = [t for t in TRANSPORTS if any(c[1:] == (server, t) for c in CELLS)]
            try:
                commands = server_commands(server, transports, request)
            except pytest.skip.Exception as skipped:
                urls.update({(server, t): f"skip: {skipped}" for t in transports})
                continue
            for command, env, served in commands:
                process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
                started.append((process, server, served))
        for process, server, served in started:  # all start at once; then each says where
            lines, reader = serving_lines(process, len(served), STARTUP_SECONDS)
            readers.append(reader)
            for transport, line in zip(served, lines, strict=True):
                urls[server, transport] = line.rsplit(" on ", 1)[1]
                pids[server, transport] = process.pid
        yield Served(urls, pids)
    finally:
        for process, _, _ in started:
            process.terminate()
        for process, _, _ in started:
            try:
                patience.wait_child(process, 10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for reader in readers:
            patience.join(reader, 10)


def plan_for(client: str, served: Served) -> dict[str, Any]:
    """The client's plan; each case names the process of its server ("pids": every driver's
    waits count the own time of its process and these)."""
    urls = served.urls
    cases = []
    for c, server, transport in CELLS:
        if c != client:
            continue
        for case in CASES:
            cid = case_id(client, server, transport, case)
            if urls[server, transport].startswith("skip: "):
                continue
            cases.append(
                {
                    "id": cid,
                    "url": urls[server, transport],
                    "token": case.token,
                    "streams": case.streams(cid.replace("-", "_")),
                    "pids": [served.pids[server, transport]],
                }
            )
    return {"cases": cases}


def client_command(
    client: str, plan: Path, request: pytest.FixtureRequest
) -> tuple[list[str], dict[str, str]]:
    if client == "python":  # (testkit.bound, for its waits)
        env = python_env()
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env["PYTHONPATH"]])
        return [sys.executable, str(HERE / "driver.py"), str(plan)], env
    if client == "java":
        classpath = request.getfixturevalue("java_classpath")
        main = "io.rstreams.interop.InteropClientMain"
        return ["java", "-cp", classpath, main, str(plan)], dict(os.environ)
    if client == "browser":
        if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
            pytest.skip(
                "chromium is not installed (Debian: apt-get install chromium; scripts/test.sh does it)"
            )
        env = python_env()
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env["PYTHONPATH"]])
        return [sys.executable, str(HERE / "driver_browser.py"), str(plan)], env
    node_available()
    return ["node", str(HERE / "driver.mjs"), str(plan)], dict(os.environ)


@pytest.fixture(scope="module")
def outputs(
    request: pytest.FixtureRequest,
    servers: Served,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Events | str]:
    """Case id -> the events its client printed; each client runs all its cells in one process,
    the three at once. A client that could not run maps its case ids to the reason."""
    directory = tmp_path_factory.mktemp("interop")
    running: dict[str, tuple[subprocess.Popen[str], Path]] = {}
    results: dict[str, Events | str] = {}
    for (client, server, transport), case in itertools.product(CELLS, CASES):
        if servers.urls[server, transport].startswith("skip: "):
            results[case_id(client, server, transport, case)] = servers.urls[server, transport]
    for client in CLIENTS:
        plan = directory / f"{client}.json"
        plan.write_text(json.dumps(plan_for(client, servers)), encoding="utf-8")
        try:
            command, env = client_command(client, plan, request)
        except pytest.skip.Exception as skipped:
            for cid in (c["id"] for c in plan_for(client, servers)["cases"]):
                results[cid] = f"skip: {skipped}"
            continue
        log = directory / f"{client}.stderr"
        with log.open("w") as stderr:
            running[client] = (
                subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env),
                log,
            )
    from testkit import patience

    for client, (process, log) in running.items():
        try:
            out, _ = patience.communicate(process, RUN_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        for line in lines:
            if "case" in line:
                events = results.setdefault(line["case"], [])
                assert isinstance(events, list)
                events.append(line)
        if process.returncode != 0 or not lines or lines[-1] != {"event": "exit"}:
            problem = f"the {client} driver exited with {process.returncode}: {log.read_text()[-2000:]}"
            for cid in (c["id"] for c in plan_for(client, servers)["cases"]):
                results.setdefault(cid, problem)
    return results


@pytest.mark.timeout(STARTUP_SECONDS * 2 + RUN_SECONDS + 60)
@pytest.mark.parametrize(
    ("client", "server", "transport", "case"),
    [
        pytest.param(client, server, transport, case, id=case_id(client, server, transport, case))
        for (client, server, transport), case in itertools.product(CELLS, CASES)
    ],
)
def test_cell(client: str, server: str, transport: str, case: Case, outputs: dict[str, Events | str]) -> None:
    events = outputs.get(case_id(client, server, transport, case))
    if isinstance(events, str):
        if events.startswith("skip: "):
            pytest.skip(events[len("skip: ") :])
        pytest.fail(events)
    assert events, "the client printed nothing for this case"
    assert events[-1]["event"] == "done", events[-3:]
    case.check(events)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/interop/test_matrix.py --write   (rewrites README.md's matrix)")
    path = ROOT / "README.md"
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f"README.md has no {BEGIN} ... {END} block")
    path.write_text(text[:start] + readme_table() + text[end + len(END) :], encoding="utf-8")
