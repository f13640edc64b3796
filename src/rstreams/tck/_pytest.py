"""The end of a pytest session reports what reached a verification class after its teardown.

A TCK subscriber stays alive as long as the implementation under test holds it and checks
every signal that reaches it; a breach seen after its case ended goes to the class's log of
late breaches (:class:`~rstreams.tck._env.LateBreaches`). The next case of the class reports
it, and ``teardown_class`` reports what is there when the class ends. A publisher still
running after that (a thread, a loop, a later test that shuts it down) could signal once
more where no case would ever look.

So every verification class made while pytest is loaded gets one more fixture: autouse,
session-scoped, so pytest sets it up with the class's first test and finalizes it when the
whole session ends. Its finalizer reads the class's log once, without waiting, and fails
naming the class, the case whose stream it was and the rule (pytest reports it as an error
at the teardown of the session's last test). pytest makes one fixture per collected class,
so each class reads its own log (a classmethod: pytest binds it to the collected class).

Imported only when pytest already is (:func:`rstreams.tck._registry.Verification`'s
``__init_subclass__`` checks ``sys.modules``): the TCK itself never imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

from rstreams.tck._env import LateBreaches
from rstreams.tck._failures import TCKFailure

__all__ = ["ATTRIBUTE", "install"]

ATTRIBUTE: Final = "_rstreams_tck_session_end"
"""Where the fixture lives on a verification class (pytest finds it there when collecting)."""


def _fail_on_late(cls: type, late: list[tuple[str, str]]) -> None:
    """Fail naming the class, the case whose stream it was and the rule (nothing when ``late`` is
    empty)."""
    if not late:
        return
    case, message = late[0]
    then = "".join(f"\n  then: {more} (case {cls.__name__}.{other})" for other, more in late[1:5])
    raise TCKFailure(
        f"{message}, signalled to a subscriber of {cls.__name__}.{case} after the class"
        f" {cls.__name__} was torn down (found when the pytest session ended){then}"
    )


def install(cls: type, late_breaches: Callable[[type], LateBreaches]) -> None:
    """Give ``cls`` (and so its subclasses) the session-end fixture, once; ``late_breaches`` gives
    a class's log (the registry's, passed in so that this module does not import it back)."""
    if hasattr(cls, ATTRIBUTE):
        return

    def session_end(verification: type) -> Iterator[None]:
        """Set up with the class's first test; at the session's end, fail on late breaches."""
        yield
        _fail_on_late(verification, late_breaches(verification).take())

    fixture = pytest.fixture(scope="session", autouse=True, name="rstreams_tck_session_end")
    method: Any = classmethod(session_end)  # pytest takes a classmethod; its stubs say callable
    setattr(cls, ATTRIBUTE, fixture(method))
