"""The Verifiers (v1) adapter; see adapters/verifiers/taskset.py and docs/verifiers.md."""

from adapters.verifiers.taskset import (
    TASKSET_ID,
    ChatHarness,
    GameData,
    GameEnv,
    GameEnvConfig,
    GameTask,
    GameTaskset,
    GameTasksetConfig,
)

__all__ = [
    "TASKSET_ID",
    "ChatHarness",
    "GameData",
    "GameEnv",
    "GameEnvConfig",
    "GameTask",
    "GameTaskset",
    "GameTasksetConfig",
]
