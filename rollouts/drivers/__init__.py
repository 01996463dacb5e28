"""The driver registry: framework name -> "module:Class", imported lazily.

>>> sorted(DRIVERS)[:2]
['core', 'gem']
"""

from __future__ import annotations

import importlib

from rollouts.drivers.base import Driver, DriverError, RolloutRecord, RunContext, StepClock

DRIVERS: dict[str, str] = {
    "core": "rollouts.drivers.core:CoreDriver",
    "verifiers": "rollouts.drivers.verifiers:VerifiersDriver",
    "openenv": "rollouts.drivers.openenv:OpenEnvDriver",
    "openenv_tools": "rollouts.drivers.openenv:OpenEnvToolsDriver",
    "nemo_gym": "rollouts.drivers.nemo_gym:NemoGymDriver",
    "nemo_gym_tools": "rollouts.drivers.nemo_gym:NemoGymToolsDriver",
    "skyrl_gym": "rollouts.drivers.skyrl_gym:SkyRLGymDriver",
    "gem": "rollouts.drivers.gem:GemDriver",
    "ors": "rollouts.drivers.ors:ORSDriver",
    "trl": "rollouts.drivers.trl:TRLDriver",
}


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
