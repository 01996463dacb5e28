"""The Verifiers taskset id ``gamebridge-verifiers``: ``vf-eval`` imports a taskset id as a
top-level module (``-`` -> ``_``, no dots), so this shim re-exports adapters.verifiers."""

from adapters.verifiers import *  # noqa: F403 - the plugin loader reads __all__
from adapters.verifiers import __all__ as __all__
