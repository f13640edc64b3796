"""docs/web.md's samples, run as written there: the live page from Python, a page of one's own
in headless Chromium (the browser modules written out by the Python sample, served over HTTP,
reading the `rstreams serve` its comment names), and the Node sample against the replay log the
text before it names. Ports the documents fix (8000, 9000, 9030) become free ones."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testkit import patience
from testkit.chromium import chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
WEB_MD = (ROOT / "docs" / "web.md").read_text()
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", WEB_MD, re.S)


@contextmanager
def _process(argv: list[str], **options: object) -> Iterator[subprocess.Popen[str]]:
    """A child process (its standard output a pipe of text), terminated on the way out."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=ENV, **options) as child:  # type: ignore[call-overload]
        try:
            yield child
        finally:
            child.terminate()


def _said(child: subprocess.Popen[str], pattern: str) -> re.Match[str]:
    """The first line of ``child``'s output that matches ``pattern``."""
    assert child.stdout is not None
    for line in child.stdout:
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"the child ended without printing {pattern!r}")


@pytest.mark.timeout(60)
def test_the_live_page_sample_starts_and_stops_the_page() -> None:
    """ "From Python": the LivePage block prints the page's and its WebSocket's addresses, and
    Enter stops it."""
    block = next(block for block in _blocks("python") if "LivePage(" in block)
    assert "port=8000" in block
    done = patience.run(
        [sys.executable, "-c", block.replace("port=8000", "port=0")],
        40,
        input="\n",
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert re.fullmatch(r"open http://127\.0\.0\.1:\d+/ - RS\.io on ws://127\.0\.0\.1:\d+/rsio", first), first


@pytest.mark.timeout(90)
@pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_a_page_of_one_s_own_shows_the_counter_in_chromium(tmp_path: Path) -> None:
    """The modules written by the Python sample, the page beside them, served by http.server as
    the text says, against the `rstreams serve ... --origin` of the page's comment: 0 to 4."""
    write_modules = next(block for block in _blocks("python") if "STATIC_FILES" in block)
    page = _blocks("html")[0]
    serve = re.search(r"// (rstreams serve ws://127\.0\.0\.1:9030/rsio[^\n]*)", page)
    http = re.search(r"`(python -m http\.server 8000 [^`]*)`", WEB_MD)
    assert serve and http, "docs/web.md lost the server the page reads or how the page is served"
    site = tmp_path / "site"
    site.mkdir()
    done = patience.run(
        [sys.executable, "-c", write_modules], 30, cwd=site, capture_output=True, text=True, env=ENV
    )
    assert done.returncode == 0, done.stderr
    assert (site / "rsio.js").exists()
    http_argv = shlex.split(http.group(1).replace(" 8000 ", " 0 "))
    with _process([sys.executable, "-u", *http_argv[1:]], cwd=site) as pages:
        origin = _said(pages, r"\((http://127\.0\.0\.1:\d+)/\)").group(1)
        argv = shlex.split(serve.group(1).replace(":9030/", ":0/").replace("http://127.0.0.1:8000", origin))
        with _process([sys.executable, "-m", "rstreams", *argv[1:]]) as server:
            url = _said(server, r" on (ws://\S+)").group(1)
            (site / "index.html").write_text(page.replace("ws://127.0.0.1:9030/rsio", url))

            async def shown() -> str:
                async with chromium(find_chromium() or "", tmp_path / "profile") as browser:
                    tab = await browser.open(origin + "/")
                    text = ""
                    async with asyncio.timeout(30):
                        while text != "0\n1\n2\n3\n4\n":
                            await asyncio.sleep(0.1)
                            text = await tab.evaluate("document.getElementById('out')?.textContent ?? ''")
                    return text

            assert asyncio.run(shown()) == "0\n1\n2\n3\n4\n"


@pytest.mark.timeout(60)
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node 20+")
def test_the_node_sample_reads_the_log_it_names(tmp_path: Path) -> None:
    """The package's sample, with draw and enough of the reader's own, against the replay log
    the sentence before it serves: both subscriptions read the log, the loop stops at the row
    `enough` picks, `?latest` answers, and nothing is printed as an error."""
    block = next(block for block in _blocks("js") if 'conn.request("results?latest"' in block)
    serve = re.search(r"`(rstreams serve tcp://127\.0\.0\.1:9000 results[^`]*)`", WEB_MD)
    assert serve, "docs/web.md no longer names the server of its Node sample"
    argv = shlex.split(serve.group(1).replace(":9000", ":0"))
    rows = "".join(json.dumps({"n": n}) + "\n" for n in range(1, 6))
    with _process([sys.executable, "-m", "rstreams", *argv[1:]], stdin=subprocess.PIPE) as server:
        assert server.stdin is not None
        server.stdin.write(rows)
        server.stdin.flush()  # left open: a live log
        url = _said(server, r" on (tcp://\S+)").group(1)
        own = (
            "\nfunction draw(element) {\n"
            "  const bytes = element instanceof Uint8Array;\n"
            "  console.log(bytes ? `bytes ${new TextDecoder().decode(element)}` : `row ${element.n}`);\n"
            "}\n"
            "function enough(row) { return row.n === 3; }\n"
            "console.log(`latest ${JSON.stringify(latest)}`);\n"
        )
        code = block.replace("tcp://127.0.0.1:9000", url).replace(
            '"@rstreams/rsio"', json.dumps((ROOT / "js" / "src" / "node.js").as_uri())
        )
        script = tmp_path / "sample.mjs"
        script.write_text(code + own)
        done = patience.run(["node", str(script)], 40, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("row ")] == ["row 1", "row 2", "row 3"], lines
    drawn = [line for line in lines if line.startswith("bytes ")]
    assert drawn == [f"bytes {json.dumps({'n': n})}" for n in range(1, len(drawn) + 1)]
    latest = json.loads(next(line for line in lines if line.startswith("latest "))[len("latest ") :])
    assert latest["first"] == 0 and latest["end"] >= 3 and latest["error"] is None, latest
