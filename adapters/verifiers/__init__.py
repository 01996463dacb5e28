"""The Verifiers (v1) adapter; see adapters/verifiers/taskset.py and docs/verifiers.md."""

from adapters.verifiers.taskset import *  # noqa: F403 - the names of taskset.__all__
from adapters.verifiers.taskset import __all__ as __all__
