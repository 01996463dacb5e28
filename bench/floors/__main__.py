"""``python -m bench.floors <openenv|nemo_gym|ors> [its arguments]``: start a floor as
gamebridge's servers start (their ``__main__`` calls ``adapters._lifeline.watch()``
first, so the server stops with the process that started it), then run the floor
module as ``__main__``. The floor modules themselves import nothing of gamebridge."""

from __future__ import annotations

import runpy
import sys

from rollouts.frameworks import FRAMEWORKS

FLOORS = tuple(f.id for f in FRAMEWORKS.values() if f.floor is not None and f.transport == "http")
"""The served frameworks' floors (the framework manifest's ``floor``)."""


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in FLOORS:
        print(f"usage: python -m bench.floors {{{','.join(FLOORS)}}} [args]", file=sys.stderr)
        raise SystemExit(2)
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends
    name = sys.argv.pop(1)
    sys.argv[0] = f"bench.floors.{name}"
    runpy.run_module(f"bench.floors.{name}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
