"""The framework manifest: every framework gamebridge speaks, as data, in one place.

The CLI's ``--framework`` choices and aliases, the driver registry
(``rollouts.drivers.DRIVERS``), bench (its in-process step rows, the breakdown's
order, the versions in its report), the docs generators (``docs/tools/rosetta.py``,
``docs/tools/floors.py``) and the install test all read :data:`FRAMEWORKS`; no other
file lists the frameworks (``tests/test_framework_manifest.py`` greps for one).
Adding a framework is its adapter folder, its driver file, one row here, and its
tests (docs/add-a-framework.md).

Standard library only and importing nothing else of gamebridge, so a docs tool can
load this file by path and the layer test counts it a leaf.

>>> FRAMEWORKS["skyrl_gym"].title, FRAMEWORKS["skyrl_gym"].extra
('SkyRL Gym', 'skyrl')
>>> list(driver_table())[:3]
['core', 'verifiers', 'openenv']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

TEXT = "text"
"""The model replies with text holding a ``<move>`` tag."""
TOOLS = "tools"
"""The model moves by calling the ``make_move`` tool."""


@dataclass(frozen=True)
class Framework:
    """One framework: who it is, where its code lives, how it is installed and run."""

    id: str
    """The name every command takes (``--framework skyrl_gym``), a driver's name for
    its first mode; a further mode's driver is ``<id>_<mode>``."""
    title: str
    """How docs and tables name it."""
    drivers: tuple[tuple[str, str], ...]
    """``(mode, "module:Class")`` per mode the driver runs (:data:`TEXT`,
    :data:`TOOLS`), the first one the default."""
    adapter: str | None = None
    """The adapter package (``None`` for core, the reference, which has none)."""
    sources: tuple[str, ...] = ()
    """The adapter's files and folders from the repo root (the Rosetta table reads
    and counts them); default the adapter's folder."""
    extra: str | None = None
    """The pip extra that installs it (``pip install -e '.[extra]'``)."""
    distribution: str | None = None
    """The distribution on PyPI whose version bench reports."""
    entry_module: str | None = None
    """The framework's own module that must be importable where it is installed."""
    venv: str = ".venv"
    """The virtual environment it runs in (NeMo Gym and ORS pin what the others
    cannot share)."""
    aliases: tuple[str, ...] = ()
    """Other names ``--framework`` takes (``skyrl``, the extra's name)."""
    step_call: str | None = None
    """The adapter call bench times for the per-step cost of an in-process adapter
    (``None``: the framework steps over HTTP or has no step outside its runtime)."""
    transport: str = "in-process"
    """``"http"`` where the environment is a server the driver talks to (each mode's
    driver a server of its own, as the load and reliability tools see them)."""
    floor: str | None = None
    """bench's floor: the framework's own minimal Tic-Tac-Toe environment written in
    its documented idiom (``bench/floors/<id>.py``), which bench runs beside ours."""

    @property
    def adapter_paths(self) -> tuple[str, ...]:
        """:attr:`sources`, or the adapter's folder."""
        if self.sources:
            return self.sources
        return (self.adapter.replace(".", "/"),) if self.adapter else ()

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(mode for mode, _ in self.drivers)

    def driver_names(self) -> Iterator[tuple[str, str]]:
        """``(driver name, "module:Class")``: ``id`` for the first mode,
        ``<id>_<mode>`` for the others."""
        for i, (mode, target) in enumerate(self.drivers):
            yield (self.id if i == 0 else f"{self.id}_{mode}", target)

    def install_hint(self) -> str:
        """What to run to install it here."""
        if self.venv == ".venv-nemo":
            return "make setup-nemo"
        if self.venv == ".venv-ors":
            return "make setup-ors"
        return f"pip install -e '.[{self.extra}]'" if self.extra else "make setup"


FRAMEWORKS: dict[str, Framework] = {
    f.id: f
    for f in (
        Framework(
            id="core",
            title="core",
            drivers=((TEXT, "rollouts.drivers.core:CoreDriver"),),
        ),
        Framework(
            id="verifiers",
            title="Verifiers",
            drivers=((TEXT, "rollouts.drivers.verifiers:VerifiersDriver"),),
            adapter="adapters.verifiers",
            sources=("adapters/verifiers", "gamebridge_verifiers.py"),
            extra="verifiers",
            distribution="verifiers",
            entry_module="verifiers.v1",
            floor="bench.floors.verifiers",
        ),
        Framework(
            id="openenv",
            title="OpenEnv",
            drivers=(
                (TEXT, "rollouts.drivers.openenv:OpenEnvDriver"),
                (TOOLS, "rollouts.drivers.openenv:OpenEnvToolsDriver"),
            ),
            adapter="adapters.openenv",
            extra="openenv",
            distribution="openenv-core",
            entry_module="openenv.core.env_server",
            transport="http",
            floor="bench.floors.openenv",
        ),
        Framework(
            id="nemo_gym",
            title="NeMo Gym",
            drivers=(
                (TEXT, "rollouts.drivers.nemo_gym:NemoGymDriver"),
                (TOOLS, "rollouts.drivers.nemo_gym:NemoGymToolsDriver"),
            ),
            adapter="adapters.nemo_gym",
            extra="nemo",
            distribution="nemo-gym",
            entry_module="nemo_gym",
            transport="http",
            floor="bench.floors.nemo_gym",
            venv=".venv-nemo",
        ),
        Framework(
            id="skyrl_gym",
            title="SkyRL Gym",
            drivers=((TEXT, "rollouts.drivers.skyrl_gym:SkyRLGymDriver"),),
            adapter="adapters.skyrl_gym",
            extra="skyrl",
            distribution="skyrl-gym",
            entry_module="skyrl_gym",
            aliases=("skyrl",),
            step_call="`GameTextEnv.step(text)`",
        ),
        Framework(
            id="gem",
            title="GEM",
            drivers=((TEXT, "rollouts.drivers.gem:GemDriver"),),
            adapter="adapters.gem",
            extra="gem",
            distribution="gem-llm",
            entry_module="gem",
            step_call="`GameEnv.step(text)`",
        ),
        Framework(
            id="ors",
            title="ORS",
            drivers=((TEXT, "rollouts.drivers.ors:ORSDriver"),),
            adapter="adapters.ors",
            extra="ors",
            distribution="openreward",
            entry_module="openreward",
            transport="http",
            floor="bench.floors.ors",
            venv=".venv-ors",
        ),
        Framework(
            id="trl",
            title="TRL",
            drivers=((TOOLS, "rollouts.drivers.trl:TRLDriver"),),
            adapter="adapters.trl",
            extra="trl",
            distribution="trl",
            entry_module="trl",
            step_call="`GameEnvironment.make_move(move)`",
        ),
    )
}
"""Every framework, the reference (``core``) first, in the order tables list them."""


def adapter_frameworks() -> list[Framework]:
    """The frameworks with an adapter (all but core), in manifest order."""
    return [f for f in FRAMEWORKS.values() if f.adapter]


def driver_table() -> dict[str, str]:
    """Driver name -> ``"module:Class"``, every mode of every framework."""
    return {name: target for f in FRAMEWORKS.values() for name, target in f.driver_names()}


def servers() -> list[str]:
    """The driver names of every mode of every framework served over HTTP."""
    return [
        name for f in FRAMEWORKS.values() if f.transport == "http" for name, _ in f.driver_names()
    ]


def aliases() -> dict[str, str]:
    """Other name -> framework id (``{"skyrl": "skyrl_gym"}``)."""
    return {alias: f.id for f in FRAMEWORKS.values() for alias in f.aliases}


def framework_of(driver: str) -> Framework:
    """The framework a driver name belongs to (``"openenv_tools"`` -> OpenEnv).
    Raises ``KeyError`` for an unknown name."""
    for f in FRAMEWORKS.values():
        if any(name == driver for name, _ in f.driver_names()):
            return f
    raise KeyError(driver)


def by_title(title: str) -> Framework:
    """The framework whose :attr:`Framework.title` is ``title``."""
    for f in FRAMEWORKS.values():
        if f.title == title:
            return f
    raise KeyError(title)


__all__ = [
    "FRAMEWORKS",
    "TEXT",
    "TOOLS",
    "Framework",
    "adapter_frameworks",
    "aliases",
    "by_title",
    "driver_table",
    "framework_of",
    "servers",
]
