"""The driver registry: framework name -> "module:Class", imported lazily, read
from the framework manifest (``rollouts.frameworks``).

>>> sorted(DRIVERS)[:2]
['core', 'gem']
"""

from __future__ import annotations

import importlib

from rollouts.drivers.base import Driver, DriverError, RolloutRecord, RunContext, StepClock
from rollouts.frameworks import driver_table

DRIVERS: dict[str, str] = driver_table()
"""Driver name -> "module:Class", every mode of every framework in the manifest
(``rollouts.frameworks``: one row per framework, one driver per mode)."""


def get_driver(name: str) -> Driver:
    """A new driver instance for framework ``name``.

    Raises ``KeyError`` for an unknown name and ``ImportError`` (with an
    install hint) when the driver module or its framework is missing.
    """
    try:
        spec = DRIVERS[name]
    except KeyError:
        raise KeyError(f"unknown framework {name!r}; known: {', '.join(DRIVERS)}") from None
    module_name, _, cls_name = spec.partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, cls_name)
    driver: Driver = cls()
    return driver


def driver_status(name: str) -> tuple[bool, str]:
    """``(True, "")`` if the driver for ``name`` imports and says it can run
    here, else ``(False, reason)``."""
    try:
        driver = get_driver(name)
    except (ImportError, AttributeError) as e:
        return False, f"{type(e).__name__}: {e}"
    return driver.available()


def available_drivers() -> list[str]:
    """Registered framework names whose driver is usable here, in registry order."""
    return [name for name in DRIVERS if driver_status(name)[0]]


__all__ = [
    "DRIVERS",
    "Driver",
    "DriverError",
    "RolloutRecord",
    "RunContext",
    "StepClock",
    "available_drivers",
    "driver_status",
    "get_driver",
]
