"""The whole shipped package, walked class by class: one error tree, real slots, public modules.

Every module under ``src/rstreams`` is imported (the optional extras are installed by the test
command) and every class defined there is checked:

- each exception derives from :class:`rstreams.ReactiveStreamsError`, keeping its stdlib base;
- each class that declares ``__slots__`` really has no ``__dict__`` (a base without slots
  would add one, and typos in attribute names would pass silently);
- each class or function a public package exports reports a public module that has it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType
from typing import Any

import pytest

import rstreams
from rstreams._exports import is_private_module

PUBLIC_PACKAGES = [
    "rstreams",
    "rstreams.net",
    "rstreams.wire",
    "rstreams.tck",
    "rstreams.replay",
    "rstreams.spark",
    "rstreams.conformance",
    "rstreams.web",
]


def _modules() -> list[ModuleType]:
    names = [i.name for i in pkgutil.walk_packages(rstreams.__path__, "rstreams.")]
    return [rstreams, *(importlib.import_module(n) for n in names if not n.endswith("__main__"))]


MODULES = _modules()
CLASSES = sorted(
    {
        obj
        for module in MODULES
        for obj in vars(module).values()
        if inspect.isclass(obj) and (obj.__module__ or "").startswith("rstreams")
    },
    key=lambda c: f"{c.__module__}.{c.__qualname__}",
)
EXCEPTIONS = [c for c in CLASSES if issubclass(c, BaseException)]
SLOTTED = [c for c in CLASSES if "__slots__" in c.__dict__]


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_walk_sees_the_package() -> None:
    """The walk is not empty: it finds the known exceptions and slotted classes."""
    names = {c.__name__ for c in EXCEPTIONS}
    assert {"RemoteStreamError", "TrimmedError", "ElementError", "FrameError"} <= names
    assert len(SLOTTED) > 50


INTERNAL_SIGNALS = {"rstreams.spark._demo._Stopped", "rstreams.tck._test_subscribers._StreamHalted"}
"""BaseExceptions that are signals, not errors: the demo's stop on SIGTERM or Ctrl-C, raised in
its main thread and caught by run_demo itself (a BaseException, as KeyboardInterrupt is, so that
no ``except Exception`` on the way swallows it); the TCK's end of a runaway stream's thread once
its case is over (a SystemExit, which ends a thread quietly, raised from a closed subscriber's
on_next into a stream that swallowed StreamAbandoned)."""


@pytest.mark.parametrize("cls", [c for c in EXCEPTIONS if _name(c) not in INTERNAL_SIGNALS], ids=_name)
def test_every_exception_is_in_the_tree(cls: type[BaseException]) -> None:
    """`except rstreams.ReactiveStreamsError` catches everything rstreams raises or signals."""
    assert issubclass(cls, rstreams.ReactiveStreamsError), f"{_name(cls)} is outside ReactiveStreamsError"


@pytest.mark.parametrize("name", sorted(INTERNAL_SIGNALS))
def test_internal_signals_are_private_and_not_exceptions(name: str) -> None:
    """What the tree test leaves out is a private BaseException that ``except Exception`` does not
    catch, and that its module does not export."""
    (cls,) = [c for c in EXCEPTIONS if _name(c) == name]
    module = importlib.import_module(cls.__module__)
    assert cls.__name__.startswith("_") and not issubclass(cls, Exception)
    assert cls.__name__ not in getattr(module, "__all__", ())


@pytest.mark.parametrize(
    ("name", "stdlib"),
    [
        ("RemoteLogError", RuntimeError),
        ("TrimmedError", LookupError),
        ("StagingFullError", RuntimeError),
        ("ElementError", ValueError),
        ("DecodeError", ValueError),
        ("EncodeError", TypeError),
        ("JavaMissingError", RuntimeError),
        ("DemoQueryError", RuntimeError),
        ("PublishersSpecError", ValueError),
        ("PublisherParameterError", ValueError),
        ("UnknownPublisherError", LookupError),
        ("InvalidDemandError", ValueError),
        ("TCKFailure", AssertionError),
        ("AccessDeniedError", PermissionError),
        ("CertificateRefusedError", PermissionError),
        ("TLSHandshakeError", PermissionError),
        ("ServerUnavailableError", ConnectionError),
        ("MetricsOffError", RuntimeError),
        ("StatsIntervalError", ValueError),
        ("AlreadySubscribedError", RuntimeError),
        ("NoEventLoopError", RuntimeError),
        ("LoopClosedError", RuntimeError),
        ("RuleViolationError", RuntimeError),
        ("BlockingInLoopError", RuntimeError),
        ("NoneElementError", TypeError),
        ("MissingExtraError", ModuleNotFoundError),
        ("LogRequestError", ValueError),
        ("LogLookupError", LookupError),
        ("LogEndedError", RuntimeError),
        ("ServerNotRunningError", RuntimeError),
        ("ServerAlreadyRunningError", RuntimeError),
        ("ReplayTimeoutError", TimeoutError),
        ("UnknownStaticFileError", KeyError),
        ("StaticFileMissingError", FileNotFoundError),
        ("PageNotRunningError", RuntimeError),
        ("StreamTimeoutError", TimeoutError),
        ("TextMessageError", ValueError),
        ("ElementSizeError", ValueError),
        ("FailedOnPurposeError", RuntimeError),
    ],
)
def test_exceptions_keep_their_stdlib_base(name: str, stdlib: type[BaseException]) -> None:
    """Callers that catch the stdlib type (LookupError, ValueError...) still catch these."""
    (cls,) = [c for c in EXCEPTIONS if c.__name__ == name]
    assert issubclass(cls, stdlib)


def test_the_refusals_of_a_client_certificate_refine_their_errors() -> None:
    """A caller tells a refused client certificate, or another failed TLS handshake, by type, and
    one that catches the broader error (a broken connection, a denied access, a refused
    connection) still catches it."""
    from rstreams.errors import ConnectionBrokenError, TLSRefusedError
    from rstreams.net._transport import TLSEndedError, TLSNoResponseError
    from rstreams.replay import AccessDeniedError, CertificateRefusedError, TLSHandshakeError

    assert issubclass(TLSRefusedError, ConnectionBrokenError)
    assert issubclass(CertificateRefusedError, TLSHandshakeError)
    assert issubclass(TLSHandshakeError, AccessDeniedError)
    assert issubclass(TLSEndedError, TLSNoResponseError)
    assert issubclass(TLSNoResponseError, ConnectionRefusedError)


def test_a_handshake_timeout_refines_a_broken_connection() -> None:
    """A client tells a peer silent past its handshake timeout by type, exported beside
    ConnectionBrokenError, which it was before and which a caller that catches that still
    catches; not a TimeoutError (an OSError), as AuthTimeoutError is not."""
    import rstreams.errors as errors
    from rstreams.errors import ConnectionBrokenError, HandshakeTimeoutError

    assert issubclass(HandshakeTimeoutError, ConnectionBrokenError)
    assert not issubclass(HandshakeTimeoutError, TimeoutError)
    assert "HandshakeTimeoutError" in errors.__all__


def test_the_ends_of_authentication_refine_a_broken_connection() -> None:
    """A client tells how extension auth ended its connection (PROTOCOL.md §15.2, §15.3) by type,
    exported beside ConnectionBrokenError, which a caller that catches the broader error still
    catches."""
    import rstreams.errors as errors
    from rstreams.errors import AuthenticationError, ConnectionBrokenError

    assert issubclass(AuthenticationError, ConnectionBrokenError)
    cases = ["AuthNotOfferedError", "AuthRequiredError", "AuthRefusedError", "AuthTimeoutError"]
    for name in cases:
        assert issubclass(getattr(errors, name), AuthenticationError), name
    assert {"AuthenticationError", *cases} <= set(errors.__all__)


@pytest.mark.parametrize("cls", SLOTTED, ids=_name)
def test_slotted_classes_have_no_dict(cls: type) -> None:
    """Every base of a slotted class declares slots too, so instances carry no __dict__."""
    dicted = [b.__qualname__ for b in cls.__mro__ if b is not object and "__slots__" not in b.__dict__]
    assert cls.__dictoffset__ == 0, f"{_name(cls)} has a __dict__ from {dicted}"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_exported_names_report_their_public_module(package: str) -> None:
    """`rstreams.net.Connection`, not `rstreams.net._connection.Connection`; and it is there."""
    module = importlib.import_module(package)
    wrong = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__name__ != name:
            continue
        home = obj.__module__
        if is_private_module(home) or getattr(importlib.import_module(home), name, None) is not obj:
            wrong.append(f"{name}: {home}")
    assert not wrong, f"{package} exports names that report a private or wrong module: {wrong}"


@pytest.mark.parametrize("name", ["serve", "connect", "connect_pipe"])
def test_the_network_entry_points_say_what_they_raise(name: str) -> None:
    """``help(rstreams.connect)`` and its siblings list the errors a caller should expect."""
    doc = inspect.getdoc(getattr(rstreams, name)) or ""
    raises = doc.partition("\nRaises:\n")[2]
    assert raises.strip(), f"rstreams.{name}'s docstring has no Raises: section"
    assert "ValueError" in raises


@pytest.mark.parametrize(
    ("name", "call", "expected"),
    [
        ("Resume", lambda: rstreams.Resume(attempts=-1), ValueError),
        ("Resume", lambda: rstreams.Resume(stall_timeout=0), ValueError),
        ("Token", lambda: rstreams.Token(5), TypeError),  # type: ignore[arg-type]
        ("Token", lambda: rstreams.Token("a\udc00"), ValueError),
        ("UserPassword", lambda: rstreams.UserPassword("u", None), TypeError),  # type: ignore[arg-type]
        ("UserPassword", lambda: rstreams.UserPassword("u", "a\udc00"), ValueError),
    ],
)
def test_the_network_settings_say_what_they_raise(name: str, call: Any, expected: type[Exception]) -> None:
    """``rstreams.Resume``, ``Token`` and ``UserPassword`` refuse bad fields with an error their
    docstring's ``Raises:`` section lists."""
    with pytest.raises(expected):
        call()
    doc = inspect.getdoc(getattr(rstreams, name)) or ""
    assert expected.__name__ in doc.partition("\nRaises:\n")[2]


def test_the_flow_and_replay_errors_are_exported_beside_their_siblings() -> None:
    """The operators' errors are exported by rstreams.errors, the replay server's by rstreams.replay,
    the live page's static files' by rstreams.web."""
    import rstreams.errors as errors
    import rstreams.replay as replay
    import rstreams.web as web

    assert {
        "AlreadySubscribedError",
        "NoEventLoopError",
        "LoopClosedError",
        "RuleViolationError",
        "BlockingInLoopError",
        "NoneElementError",
        "MissingExtraError",
    } <= set(errors.__all__)
    assert {
        "LogRequestError",
        "LogLookupError",
        "LogEndedError",
        "ServerNotRunningError",
        "ServerAlreadyRunningError",
        "ReplayTimeoutError",
    } <= set(replay.__all__)
    assert {"UnknownStaticFileError", "StaticFileMissingError", "PageNotRunningError"} <= set(web.__all__)


def test_a_text_websocket_message_is_a_frame_error_exported_by_net() -> None:
    """The WebSocket transport's violation (PROTOCOL.md §1) is a wire FrameError that
    rstreams.net exports without the websockets extra."""
    import rstreams.net as net
    from rstreams.wire import FrameError

    assert issubclass(net.TextMessageError, FrameError) and "TextMessageError" in net.__all__
