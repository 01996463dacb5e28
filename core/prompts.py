"""Every word the model reads: the system prompt and the observations.

One place, shared by all adapters, so the same task shows the same text in
every framework (and scripted players can read it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.games.base import Game
from core.tasks import Task

TOOL_NAME = "make_move"
"""The one tool tool-calling frameworks expose; its single argument is ``move``."""
TOOL_DESCRIPTION = "Play your move in the current game."
TOOL_ARGUMENT_DESCRIPTION = "The move, in the game's notation (for example {examples})."


def system_prompt(
    game: Game[Any, Any],
    task: Task,
    *,
    tools: bool = False,
    seat: int | None = None,
    seats: tuple[int, ...] = (),
) -> str:
    """The system prompt for ``task``; ``tools``: the model moves by tool call;
    ``seat``: the seat it plays (default ``task.model_player``); ``seats``: it plays
    all of these seats in one conversation (self-play where a framework keeps one
    conversation per rollout), each observation saying whose turn it is."""
    spec = game.spec
    examples = ", ".join(spec.move_examples)
    seat = task.model_player if seat is None else seat
    if len(seats) > 1:
        names = " and ".join(spec.player_names[s] for s in seats)
        intro = (
            f"You are playing {spec.title} as both sides, {names}: each observation "
            "shows the position with the side to move, and you answer for that side."
        )
    elif spec.num_players > 1:
        intro = f"You are playing {spec.title} as {spec.player_names[seat]}, against an opponent."
    else:
        intro = f"You are playing {spec.title}."
    lines = [
        intro,
        spec.rules,
        f"{spec.move_syntax} Examples: {examples}.",
    ]
    lines.append(reply_instruction(game, task, tools=tools))
    return "\n".join(lines)


def reply_instruction(game: Game[Any, Any], task: Task, *, tools: bool = False) -> str:
    """The last line of the system prompt: how to answer (``<move>`` tags, or the
    tool). Frameworks that repeat a reminder after each observation use this
    (GEM's ``info["suffix"]``)."""
    if tools:
        return f"Make each move by calling the {TOOL_NAME} tool with your move."
    think = (
        "First think inside <think>...</think>, then"
        if task.think_required
        else ("You may think inside <think>...</think> first; then")
    )
    return (
        f"{think} give exactly one move inside <move>...</move>, "
        f"for example <move>{game.spec.move_examples[0]}</move>."
    )


def tool_schema(game: Game[Any, Any]) -> dict[str, Any]:
    """The ``make_move`` tool as an OpenAI function schema."""
    examples = ", ".join(game.spec.move_examples)
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "move": {
                        "type": "string",
                        "description": TOOL_ARGUMENT_DESCRIPTION.format(examples=examples),
                    }
                },
                "required": ["move"],
            },
        },
    }


LEGAL_MOVES = "Legal moves: "
MOVE_SEPARATORS = (", ", " | ", "\n")
"""How a list of moves is joined, the first that no move contains: ``", "`` for
every native game; ``" | "`` when a move holds a comma (``openspiel:nim``'s
``pile:1, take:1;``, ``openspiel:amazons``' ``X From (7, 1)``); one per line
when a move holds both."""


def join_moves(moves: Sequence[str]) -> str:
    """``moves`` as one unambiguous text: joined by the first of
    :data:`MOVE_SEPARATORS` that no move contains (a comma or a bar counts).

    >>> join_moves(["1", "2"])
    '1, 2'
    >>> join_moves(["pile:1, take:1;", "pile:2, take:1;"])
    'pile:1, take:1; | pile:2, take:1;'
    """
    for sep in MOVE_SEPARATORS[:-1]:
        mark = sep.strip()
        if not any(mark in m for m in moves):
            return sep.join(moves)
    return "\n" + "\n".join(moves)


def legal_moves_line(moves: Sequence[str]) -> str:
    """The observation's ``Legal moves:`` line (lines, when moves hold ``,`` and ``|``)."""
    return LEGAL_MOVES + join_moves(moves)


def _position(
    game: Game[Any, Any], state: Any, board: str | None, seat: int | None = None
) -> list[str]:
    if board is None:
        board = game.render(state) if seat is None else game.observation(state, seat)
    lines = [board]
    if game.spec.list_legal_moves:
        lines.append(legal_moves_line(game.legal_moves_text(state)))
    return lines


def listed_moves(observation: str) -> list[str] | None:
    """The legal moves an observation lists (its last ``Legal moves:`` line, read
    as :func:`join_moves` wrote it), or ``None`` where it lists none: what a
    scripted player picks from in a game whose observation cannot be read back
    into a position (hidden information)."""
    lines = observation.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(LEGAL_MOVES.rstrip())]
    if not starts:
        return None
    rest = lines[starts[-1]][len(LEGAL_MOVES) :]
    if not rest.strip():  # one move per line, up to the closing line
        return [m for m in lines[starts[-1] + 1 : -1] if m]
    sep = " | " if "|" in rest else ", "
    return [m for m in rest.split(sep) if m]


def waiting_observation(opponent_moves: list[str], board: str) -> str:
    """What a seat that is not to move sees meanwhile (several outside seats):
    the moves since its last turn and ``board``, its view of the position."""
    lines = []
    if opponent_moves:
        lines.append("Opponent played: " + join_moves(opponent_moves) + ".")
    lines.append(board)
    lines.append("Waiting for the opponent.")
    return "\n".join(lines)


def turn_observation(
    game: Game[Any, Any],
    state: Any,
    opponent_moves: list[str],
    *,
    board: str | None = None,
    seat: int | None = None,
) -> str:
    """The observation before a model turn: the opponent's reply, the board.
    ``board``, when given, is ``game.render(state)`` already made (the
    episode's step renders a position once, for its event and this); else
    ``seat``'s view (``Game.observation``), or ``render`` without a seat."""
    lines = []
    if opponent_moves:
        lines.append("Opponent played: " + join_moves(opponent_moves) + ".")
    lines += _position(game, state, board, seat)
    lines.append("Your move.")
    return "\n".join(lines)


def rejection_observation(
    game: Game[Any, Any],
    state: Any,
    error: str,
    message: str,
    invalid_left: int,
    *,
    board: str | None = None,
) -> str:
    """The observation after a rejected reply; the position is unchanged.
    ``board``: as for :func:`turn_observation`."""
    kind = {
        "format": "badly formatted",
        "invalid_move": "not a move",
        "illegal_move": "an illegal move",
    }[error]
    first = message.splitlines()[0] if message else kind
    lines = [
        f"Your reply was rejected ({kind}): {first}",
        f"Invalid replies left before you forfeit: {invalid_left}.",
    ]
    lines += _position(game, state, board)
    lines.append("Try again.")
    return "\n".join(lines)


def final_observation(
    game: Game[Any, Any],
    state: Any,
    result: str,
    termination: str,
    opponent_moves: list[str],
    *,
    board: str | None = None,
) -> str:
    """The last observation: how the game ended. ``board``: as for
    :func:`turn_observation`."""
    lines = []
    if opponent_moves:
        lines.append("Opponent played: " + join_moves(opponent_moves) + ".")
    reason = {
        "game_over": "",
        "forfeit": " You forfeited the game: too many invalid replies.",
        "turn_cap": " The turn limit was reached.",
        "stopped": " The game was stopped before its end.",
        "opponent_forfeit": " Your opponent forfeited: too many invalid replies.",
    }[termination]
    lines.append(
        f"Game over: you {'drew' if result == 'draw' else ('won' if result == 'win' else 'lost')}.{reason}"
    )
    lines.append(game.render(state) if board is None else board)
    return "\n".join(lines)
