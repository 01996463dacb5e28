"""A package's names loaded on first use (PEP 562's module ``__getattr__``), for the
adapters whose framework takes seconds to import (standard library only).

``__getattr__ = lazy_names(__name__, {"Name": "submodule", ...})`` in a package's
``__init__``: ``package.Name`` imports ``package.submodule`` the first time it is
read, and ``import package`` alone imports no framework.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
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
