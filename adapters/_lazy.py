"""Frameworks imported late, for the adapters whose framework takes seconds to import
(standard library only).

* ``__getattr__ = lazy_names(__name__, {"Name": "submodule", ...})`` in a package's
  ``__init__``: ``package.Name`` imports ``package.submodule`` the first time it is
  read, and ``import package`` alone imports no framework.
* ``with needs("adapters.ors", "openreward 0.1.167", "ors"):`` around a framework's
  imports: a missing one is an ``ImportError`` that says which pip extra to install
  (the CLI prints that one line and exits 2).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``modules[name]`` names the submodule
    that defines ``name``; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


@contextlib.contextmanager
def needs(who: str, what: str, extra: str, note: str = "") -> Iterator[None]:
    """Imports that need pip extra ``extra``: an ``ImportError`` inside becomes
    ``"<who> needs <what>; install with: pip install -e '.[<extra>]'<note>"``, chained
    to the original (which names the module missing)."""
    try:
        yield
    except ImportError as e:
        hint = f"{who} needs {what}; install with: pip install -e '.[{extra}]'{note}"
        raise ImportError(hint) from e
