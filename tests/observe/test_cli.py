"""rstreams ping and rstreams top (driven in a pseudo-terminal), against real servers."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import subprocess
import sys
import termios

import pytest

import rstreams
from rstreams.cli import main
from testkit import patience
from testkit.observe import WAIT, served

pytestmark = pytest.mark.timeout(60)


def test_ping_an_answering_server(capsys: pytest.CaptureFixture[str]) -> None:
    with served({"n": rstreams.just(b"x")}) as url:
        assert main(["ping", url, "--count", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"{url}: ok in ") and "1 connection(s)" in line for line in lines)


def test_ping_a_refusing_server_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with served({"n": rstreams.just(b"x")}, authorize=lambda who, name: False) as url:
        assert main(["ping", url]) == 1
    assert "answered rstreams/health with an error: unauthorized" in capsys.readouterr().err


def test_ping_a_server_without_health_says_which_servers_have_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A server that does not offer rstreams/health (the Java and JavaScript servers refuse it
    as unknown, stood in for here by an entry of the same name)."""
    unknown: rstreams.Flow[bytes] = rstreams.error(LookupError("no publisher named 'rstreams/health'"))
    with served({"rstreams/health": unknown}) as url:
        assert main(["ping", url]) == 1
    assert capsys.readouterr().err.endswith(
        "(rstreams/health is offered by rstreams' Python servers, not by the Java and JavaScript ones)\n"
    )


def test_ping_nothing_listening_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["ping", f"tcp://127.0.0.1:{port}"]) == 2
    assert "cannot reach" in capsys.readouterr().err


def _own_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty (so ^C is SIGINT)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``rstreams top ...`` on a pseudo-terminal: what it drew, and keys typed at it."""

    def __init__(self, *argv: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rstreams.cli", "top", *argv],
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            preexec_fn=_own_terminal,  # two system calls: nothing that could hold a lock
        )
        os.close(slave)
        self.screen = b""

    def read_until(self, text: bytes) -> bytes:
        """The screen once ``text`` is on it; fails after WAIT seconds of top's own time and ours."""

        def step(seconds: float) -> bool:
            ready, _, _ = select.select([self.master], [], [], seconds)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process ended: nothing more will come
                    chunk = b""
                assert chunk, f"top ended before {text!r}: {self.screen[-2000:]!r}"
                self.screen += chunk
            return text in self.screen

        bound = patience.Patience(WAIT, [self.process.pid])
        assert text in self.screen or bound.until(step), (
            f"no {text!r} on the screen after {bound.said()}: {self.screen[-2000:]!r}"
        )
        return self.screen

    def finish(self) -> tuple[int, bytes]:
        """Wait for the end: (exit status, what it wrote to stderr)."""
        try:
            _, err = patience.communicate(self.process, WAIT)
            return self.process.returncode, err
        finally:
            os.close(self.master)
            if self.process.poll() is None:
                self.process.kill()
                self.process.communicate()


def streaming(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.range(10**12).map(lambda i: b"tick")  # as much as is asked, no more


@pytest.mark.parametrize("how", ["q", "ctrl-c"])
def test_top_draws_the_streams_and_quits_cleanly(how: str) -> None:
    with served({"ticks": streaming}, metrics=True) as url:
        terminal = Terminal(url, "--interval", "0.2")
        screen = terminal.read_until(b"WAIT SOCKET")
        assert b"\x1b[H\x1b[2J" in screen  # a terminal: redrawn in place
        assert b"0 stream(s) (+1 of rstreams/*, not listed)" in screen  # its own stats stream
        assert b"rstreams/stats" not in screen.replace(b"rstreams/*", b"")
        for column in (b"PUBLISHER", b"SUBSCRIBER", b"DEMAND", b"EL/S", b"WAIT DEMAND", b"WAIT SOCKET"):
            assert column in screen
        if how == "q":
            os.write(terminal.master, b"q")
        else:
            os.write(terminal.master, b"\x03")  # the terminal turns it into SIGINT
        assert terminal.finish() == (0, b"")


def test_top_shows_a_stalled_stream_waiting_for_demand() -> None:
    """A subscriber that took one element and asks for no more: 100% waiting for demand."""
    import asyncio

    from rstreams.net import connect

    with served({"ticks": streaming}, metrics=True) as url:

        async def hold() -> None:
            async with await connect(url) as conn:
                async for _ in conn.publisher("ticks"):
                    break  # cancels: then subscribe again, taking nothing
                from testkit.observe import Waiter

                waiter = Waiter(initial=0)
                conn.publisher("ticks").subscribe(waiter)
                terminal = Terminal(url, "--interval", "0.2")
                try:
                    await asyncio.to_thread(terminal.read_until, b"ticks ")
                    screen = await asyncio.to_thread(terminal.read_until, b"100%")
                    assert any(b"ticks" in line and b"100%" in line for line in screen.splitlines())
                finally:
                    terminal.process.send_signal(signal.SIGINT)
                    assert await asyncio.to_thread(terminal.finish) == (0, b"")

        asyncio.run(hold())


def test_top_against_a_server_without_metrics_says_how_to_start_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server started without metrics: one line saying so and naming rstreams serve's option
    (told by rstreams/health's "metrics", not by the stats error's words), exit 1, no traceback
    and no Python type name."""
    from rstreams._cli_observe import NO_METRICS

    with served({"n": rstreams.just(b"x")}) as url:
        assert main(["top", url, "--interval", "0.2"]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"rstreams top: {url}: {NO_METRICS}\n" and captured.out == ""
    assert "rstreams serve URL --metrics on" in NO_METRICS and "Error" not in NO_METRICS


@pytest.mark.parametrize(
    ("metrics", "refused"),
    [(True, "rstreams/stats"), (False, "rstreams/")],
    ids=["counts-refuses-stats", "refuses-health-too"],
)
def test_top_refused_otherwise_says_the_servers_words(
    metrics: bool, refused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that counts but refuses rstreams/stats, or one that refuses rstreams/health too
    (so it does not say whether it counts): the server's own error, exit 1."""
    from rstreams._cli_observe import NO_METRICS

    def authorize(who: object, name: str) -> bool:
        return not name.startswith(refused)

    with served({"n": rstreams.just(b"x")}, metrics=metrics, authorize=authorize) as url:
        assert main(["top", url, "--interval", "0.2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams top: {url}: unauthorized") and err.count("\n") == 1, err
    assert NO_METRICS not in err


@pytest.mark.parametrize("command", ["ping", "top"])
def test_a_server_that_never_answers_is_given_up_on(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Something that accepts but never speaks RS.io: exit 2 naming --timeout, not a hang (top
    waited for its first snapshot for ever)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        extra = ["--interval", "0.2"] if command == "top" else []
        assert main([command, url, "--timeout", "0.3", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams {command}: {url} ") and "--timeout" in err
    assert err.count("\n") == 1


def test_ping_into_a_closed_pipe_exits_quietly() -> None:
    """``rstreams ping URL --count N | head -1``: no BrokenPipeError traceback once head leaves."""
    with served({"n": rstreams.just(b"x")}) as url:
        process = subprocess.Popen(
            [sys.executable, "-m", "rstreams.cli", "ping", url, "--count", "1000000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert patience.child_line(process, "its first line").startswith(f"{url}: ok in ".encode())
        process.stdout.close()  # what head does after its line
        _, err = patience.communicate(process, WAIT)
    assert (process.returncode, err.decode()) == (0, "")


def test_subscribe_into_a_closed_pipe_exits_quietly() -> None:
    """``rstreams subscribe URL NAME | head -1``: exit 0, no BrokenPipeError traceback (the same
    runner as ping's)."""
    with served({"n": rstreams.range(0, 10_000_000).map(lambda i: b"%d" % i)}) as url:
        process = subprocess.Popen(
            [sys.executable, "-m", "rstreams.cli", "subscribe", url, "n"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert patience.child_line(process, "its first line") == b"0\n"
        process.stdout.close()  # what head does after its line
        _, err = patience.communicate(process, WAIT)
    assert (process.returncode, err.decode()) == (0, "")


def test_ctrl_c_while_waiting_for_a_silent_server_exits_130_at_once() -> None:
    """Ctrl-C during ``rstreams subscribe`` to a server that never answers: exit 130, no traceback."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        code = "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        code += "from rstreams.cli import main; sys.exit(main())"
        process = subprocess.Popen(
            [sys.executable, "-c", code, "subscribe", url, "counter"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        accepted, _ = silent.accept()  # the client is connected: it now waits for its stream
        with accepted:
            process.send_signal(signal.SIGINT)  # (a background job's SIGINT is ignored: hence -c)
            out, err = patience.communicate(process, WAIT)
    assert (process.returncode, out, err) == (130, b"", b"")
