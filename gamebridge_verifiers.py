"""The Verifiers taskset id ``gamebridge-verifiers``: ``vf-eval`` imports a taskset id as a
top-level module (``-`` -> ``_``, no dots), so this shim re-exports adapters.verifiers."""

# rosetta: registration: the top-level module `vf-eval` imports for that id
# rosetta: packaging: `pip install gamebridge[verifiers]` installs this module (`py-modules`), so `vf-eval gamebridge-verifiers` finds the taskset
from adapters.verifiers import *  # noqa: F403 - the plugin loader reads __all__
from adapters.verifiers import __all__ as __all__
