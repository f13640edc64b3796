"""Public names report their public module.

Implementation lives in underscore modules; each package re-exports a curated ``__all__``.
:func:`claim` sets ``__module__`` of the classes and functions a package re-exports from its
private modules to the package itself, so reprs, tracebacks, docs and pickles say
``rstreams.net.Connection`` rather than ``rstreams.net._connection.Connection``. Every
claimed object stays reachable under the new name (it is in the package's namespace), so
pickling by reference keeps working.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

__all__ = ["claim", "is_private_module"]


def is_private_module(module: str) -> bool:
    """True when any component of the dotted ``module`` name starts with an underscore."""
    return any(part.startswith("_") for part in module.split("."))


def claim(package: str, names: Iterable[str], namespace: Mapping[str, object]) -> None:
    """Make the classes and functions ``package`` exports from its private modules its own."""
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        module = obj.__module__
        if obj.__name__ == name and module.startswith(package + ".") and is_private_module(module):
            obj.__module__ = package
