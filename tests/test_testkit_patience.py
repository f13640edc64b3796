"""testkit.patience: a blocking wait's bound counts the awaited processes' own time, not the
time other processes' CPU took from them, and still ends whatever the load."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator

import pytest

from testkit import bound, patience
from testkit.bound import HARD
from testkit.patience import Patience
from testkit.recording import RecordingSubscriber

LINUX_SCHEDSTAT = os.path.exists("/proc/thread-self/schedstat") and hasattr(os, "sched_setaffinity")


def starved_all_along(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if some thread had waited for a CPU all along: no wall second counts as own time."""
    monkeypatch.setattr(bound, "_delays", lambda pids, children: {1: time.monotonic()})


@pytest.mark.timeout(30)
def test_every_wait_fails_after_its_limit_when_what_it_awaits_never_comes() -> None:
    never: concurrent.futures.Future[int] = concurrent.futures.Future()
    stuck = threading.Event()
    thread = threading.Thread(target=stuck.wait, daemon=True)
    thread.start()
    with pytest.raises(
        AssertionError, match=r"after 0\.05 s of own time .* waiting for 1 items; signals=\[\]"
    ):
        RecordingSubscriber[int]().await_items(1, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"no result after 0\.05 s of own time"):
        patience.result(never, 0.05)
    assert patience.wait(threading.Event(), 0.05) is False
    patience.join(thread, 0.05)
    assert thread.is_alive()
    stuck.set()  # (a wait that did not end would meet the test's timeout)


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds one after another)
def test_what_comes_in_time_is_given_and_errors_are_raised() -> None:
    done: concurrent.futures.Future[int] = concurrent.futures.Future()
    threading.Timer(0.01, done.set_result, [7]).start()
    assert patience.result(done) == 7
    failed: concurrent.futures.Future[int] = concurrent.futures.Future()
    failed.set_exception(TimeoutError("the stream's own error"))
    with pytest.raises(TimeoutError, match="the stream's own error"):
        patience.result(failed)  # (a TimeoutError that is the outcome, not the bound's)
    assert isinstance(patience.exception(failed), TimeoutError)
    cancelled: concurrent.futures.Future[int] = concurrent.futures.Future()
    cancelled.cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        patience.result(cancelled)


@pytest.mark.timeout(30)
def test_time_lost_waiting_for_a_cpu_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result that comes well past its limit of own time is still given."""
    starved_all_along(monkeypatch)
    late: concurrent.futures.Future[str] = concurrent.futures.Future()
    threading.Timer(0.2, late.set_result, ["late"]).start()
    assert patience.result(late, 0.02) == "late"


@pytest.mark.timeout(30)
def test_an_event_wait_counts_the_childrens_time_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """``wait(event, limit, children)``: the children's waits for a CPU are read as well."""
    asked: list[list[int]] = []

    def delays(pids: object, children: Iterable[int]) -> dict[int, float]:
        asked.append(list(children))
        return {1: time.monotonic()}  # (starved all along)

    monkeypatch.setattr(bound, "_delays", delays)
    late = threading.Event()
    threading.Timer(0.2, late.set).start()
    assert patience.wait(late, 0.02, [4242]) is True
    assert asked and all(children == [4242] for children in asked)


@pytest.mark.timeout(30)
def test_the_hard_bound_ends_a_wait_however_loaded_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    starved_all_along(monkeypatch)
    started = time.monotonic()
    assert patience.wait(threading.Event(), 0.01) is False
    assert time.monotonic() - started >= HARD * 0.01  # (one that did not end: the test's timeout)


def fake_time(monkeypatch: pytest.MonkeyPatch, starved: float) -> list[float]:
    """A clock moved only by the waits of the steps below, with ``starved`` of each second lost
    waiting for a CPU: [wall, delay]."""
    now = [0.0, 0.0]
    monkeypatch.setattr(patience, "_clock", lambda: now[0])
    monkeypatch.setattr(bound, "_delays", lambda pids, children: {1: now[1]})
    return now


def never_steps(now: list[float], starved: float, waits: list[float]) -> Callable[[float], bool]:
    def step(seconds: float) -> bool:
        waits.append(seconds)
        now[0] += seconds
        now[1] += seconds * starved
        return False

    return step


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("starved", "own", "wall"), [(0.0, 10.0, 10.0), (0.5, 10.0, 20.0), (0.99, 3.0, 300.0)]
)
def test_on_a_virtual_clock_a_bound_ends_at_its_own_time_or_at_the_hard_bound(
    monkeypatch: pytest.MonkeyPatch, starved: float, own: float, wall: float
) -> None:
    """Idle (nothing starved): the limit in wall time. Half starved: twice that. Starved nearly
    all along: the hard bound, HARD times the limit."""
    now = fake_time(monkeypatch, starved)
    waits: list[float] = []
    wait = Patience(10.0)
    assert wait.until(never_steps(now, starved, waits)) is False
    spent_own, spent_wall = wait.spent()
    assert (spent_own, spent_wall) == pytest.approx((own, wall), abs=patience.STEP)  # (its last step)
    assert min(waits[1:]) >= patience.STEP  # (never a busy loop)


def spinners(cpu: int, count: int) -> Iterator[subprocess.Popen[str]]:
    """``count`` processes spinning on ``cpu``, each started once it said it spins."""
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print('spinning', flush=True)\nwhile True: pass"
    for _ in range(count):
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        yield child
        assert patience.child_line(child, "'spinning'") == "spinning\n"


def stop(children: Iterable[subprocess.Popen[str]]) -> None:
    for child in children:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def spin_for(cpu_seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < cpu_seconds:
        pass


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux's schedstat and CPU affinity")
@pytest.mark.timeout(60)
def test_cpu_that_other_processes_take_from_the_awaited_thread_is_not_counted() -> None:
    """The awaited thread needs 0.1 s of CPU and shares one CPU with four spinning processes:
    it takes about 0.5 s of wall time, more than a 0.3 s bound of wall time allows; its own
    time stays near 0.1 s."""
    cpu = min(os.sched_getaffinity(0))
    children: list[subprocess.Popen[str]] = []
    done: concurrent.futures.Future[float] = concurrent.futures.Future()
    measured = threading.Event()
    try:
        children.extend(spinners(cpu, 4))

        def work() -> None:
            os.sched_setaffinity(0, {cpu})  # (this thread only)
            spin_for(0.1)
            done.set_result(time.monotonic())
            measured.wait()  # (a thread that ended is not counted: it stays until measured)

        wait = Patience(0.3)
        started = time.monotonic()
        threading.Thread(target=work, daemon=True).start()
        assert wait.until(lambda seconds: patience._settled(done, seconds)), wait.said()
        own, _ = wait.spent()
        wall = done.result() - started
    finally:
        measured.set()
        stop(children)
    assert own < 0.3 < wall, (own, wall)


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux's schedstat and CPU affinity")
@pytest.mark.timeout(60)
def test_a_childs_wait_for_a_cpu_is_not_counted_either() -> None:
    """The same for a child that works 0.1 s of CPU before its first line: the bound is on the
    child's own time and ours."""
    cpu = min(os.sched_getaffinity(0))
    code = (
        f"import os, time; os.sched_setaffinity(0, {{{cpu}}}); start = time.thread_time()\n"
        "while time.thread_time() - start < 0.1: pass\nprint('ready', flush=True)"
    )
    children: list[subprocess.Popen[str]] = []
    try:
        children.extend(spinners(cpu, 4))
        worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        children.append(worker)
        started = time.monotonic()
        assert patience.child_line(worker, "'ready'", 0.3) == "ready\n"
        wall = time.monotonic() - started
    finally:
        stop(children)
    assert wall > 0.3, f"the child was not starved ({wall:.2f} s): this run proves nothing"


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds one after another)
def test_a_silent_child_is_killed_after_its_limit_and_one_that_exits_is_named() -> None:
    silent = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE, text=True
    )
    with silent, pytest.raises(TimeoutError, match=r"printed no its port after 0.2 s of own time"):
        patience.child_line(silent, "its port", 0.2)
    assert silent.returncode is not None
    exiting = subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit(3)"], stdout=subprocess.PIPE, text=True
    )
    with exiting, pytest.raises(RuntimeError, match="exited with status 3 before printing its port"):
        patience.child_line(exiting, "its port")
    talking = subprocess.Popen(
        [sys.executable, "-c", "print(input().upper())"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    with talking:
        out, err = patience.communicate(talking, given="hi")
        assert (out, err) == ("HI\n", None)
        assert patience.wait_child(talking) == 0


@pytest.mark.timeout(30)
def test_run_is_subprocess_run_bounded_by_the_childs_own_time() -> None:
    """``run``: the child's output and status as ``subprocess.run``'s; a child still running once
    its bound is over is killed, ``TimeoutExpired``; ``check`` raises for a failed one."""
    done = patience.run(
        [sys.executable, "-c", "import sys; print(input().upper()); sys.exit(2)"],
        input="hi",
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "HI\n", "")
    with pytest.raises(subprocess.CalledProcessError):
        patience.run([sys.executable, "-c", "raise SystemExit(1)"], check=True, capture_output=True)
    with pytest.raises(subprocess.TimeoutExpired, match=r"0\.2 s of own time"):  # killed, not awaited
        patience.run([sys.executable, "-c", "import time; time.sleep(600)"], 0.2, capture_output=True)


@pytest.mark.timeout(30)
def test_the_delays_walk_takes_a_childs_descendants_and_not_the_children_of_pids() -> None:
    """One walk of /proc: a child's grandchild's threads are counted; ``pids`` are counted
    without their descendants."""
    if not os.path.exists("/proc/self/task"):
        pytest.skip("needs /proc")
    code = (
        "import subprocess, sys, time\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(grandchild.pid, flush=True); time.sleep(60)"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        try:
            grandchild = int(patience.child_line(child, "its child's pid"))
            try:
                assert grandchild in bound._delays([], [child.pid])
                assert child.pid in bound._delays([], [child.pid])
                alone = bound._delays([os.getpid()], [])
                assert threading.get_native_id() in alone
                assert child.pid not in alone and grandchild not in alone
            finally:
                os.kill(grandchild, 9)
        finally:
            child.kill()


@pytest.mark.timeout(30)
def test_call_gives_a_threads_value_or_error_and_gives_up_after_its_limit() -> None:
    assert patience.call(lambda: 7) == 7
    empty: dict[str, int] = {}
    with pytest.raises(KeyError, match="its own"):
        patience.call(lambda: empty["its own"])
    stuck = threading.Event()
    with pytest.raises(TimeoutError, match=r"no result after 0\.05 s of own time"):
        patience.call(stuck.wait, 0.05)
    stuck.set()


@pytest.mark.timeout(30)
def test_urlopen_gives_the_status_headers_and_body_an_http_errors_too() -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = self.path.encode()
            self.send_response(200 if self.path == "/here" else 404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Answer) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}"
            status, headers, body = patience.urlopen(url + "/here")
            assert (status, headers["Content-Type"], body) == (200, "text/plain", b"/here")
            assert patience.urlopen(url + "/gone")[::2] == (404, b"/gone")
        finally:
            server.shutdown()
