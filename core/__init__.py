"""gamebridge core: games, opponents, parsing, the one turn loop, rewards, tasks.

Standard library only; no framework is imported here or below.
"""

from typing import Any

from core.games import (
    BoardView,
    Game,
    GameError,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
    list_games,
    make_game,
    register_game,
)

# Everything beyond the games is loaded on first use (PEP 562), so
# ``import core`` stays cheap and free of import cycles.
_LAZY = {
    "Task": "core.tasks",
    "TaskError": "core.tasks",
    "make_tasks": "core.tasks",
    "Episode": "core.episode",
    "EpisodeError": "core.episode",
    "EpisodeFinishedError": "core.episode",
    "EpisodeNotStartedError": "core.episode",
    "StepResult": "core.episode",
    "ToolCall": "core.episode",
    "Event": "core.events",
    "Ending": "core.events",
    "EpisodeTermination": "core.events",
    "Result": "core.events",
    "Rubric": "core.rewards",
    "RewardBreakdown": "core.rewards",
    "DEFAULT_WEIGHTS": "core.rewards",
    "FormatError": "core.parsing",
    "parse_reply": "core.parsing",
    "ToolArgumentsError": "core.parsing",
    "parse_tool_arguments": "core.parsing",
    "ScriptedPlayer": "core.players",
    "legal_replies": "core.players",
    "make_opponent": "core.opponents",
    "MoveListOpponent": "core.opponents",
    "NoMoveLeftError": "core.opponents",
    "check_game": "core.checks",
    "GameContractError": "core.checks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    *_LAZY,
    "BoardView",
    "Game",
    "GameError",
    "GameSpec",
    "IllegalMoveError",
    "InvalidMoveError",
    "Outcome",
    "Termination",
    "list_games",
    "make_game",
    "register_game",
]
