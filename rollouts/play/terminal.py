"""``gamebridge play --terminal``: a quick game without a browser.

The same :class:`~rollouts.play.session.GameSession` as the page: you type a
move, core judges it. Type ``quit`` (or end the input, or press Ctrl-C) to
stop. At the end: the result (yours), why a game was forfeited, Wordle's
answer when it was not found, and the reward as its weighted parts.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from core.prompts import join_moves
from rollouts.play.session import GameSession, PlayError, ScriptedModel, Setup, default_opponent


def _model(args: argparse.Namespace) -> object:
    if getattr(args, "checkpoint", None) is not None:  # --model-path, loaded by ``run``
        return args.checkpoint
    if args.base_url:
        from rollouts.play.session import EndpointModel

        return EndpointModel(args.base_url, args.model, args.api_key)
    return ScriptedModel(args.policy, args.seed)


def play(args: argparse.Namespace, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    """One game in the terminal; returns the exit status (0, or 2 for a bad setup)."""

    def say(text: str = "") -> None:
        print(text, file=stdout, flush=True)

    setup = Setup(
        game=args.game,
        mode="play",
        side=args.side,
        other=args.against,
        opponent=args.opponent or default_opponent(args.game),
        depth=args.depth,
        random_move_prob=args.rmp,
        seed=args.seed,
    )
    try:
        model = _model(args) if args.against == "model" else None
        session = GameSession(setup, model)  # type: ignore[arg-type]
    except PlayError as e:
        print(f"gamebridge play: {e}", file=sys.stderr)
        return 2
    view = session.view()
    who = view["opponent"] or "nobody (one player)"
    if who == "you":  # against a model: the page's word for the person's side; name the model
        who = view["model"]
    say(f"{view['game']['title']}: you play {view['game']['players'][setup.side]}, against {who}.")
    shown = 0
    while True:
        view = session.view()
        for turn in view["turns"][shown:]:
            if turn["who"] == "model":
                what = f"rejected ({turn['error']})" if turn["error"] else f"played {turn['move']}"
                say(f"model replied {turn['reply']!r}: {what}")
        shown = len(view["turns"])
        if view["done"]:
            for line in ending(view):
                say(line)
            return 0
        if view["your_turn"] and session.setup.other == "model":
            say(view["board_text"])
            say("Legal moves: " + join_moves(view["legal_moves"]))
        else:
            say(view["observation"])
        say(f"(invalid moves left: {view['invalid_left']}) your move> ")
        line = stdin.readline()
        if not line or line.strip().lower() in ("quit", "exit", "q"):
            say("stopped.")
            return 0
        try:
            session.move(line.strip())
        except PlayError as e:
            say(f"not played: {e}")


def reward_line(reward: dict[str, Any], whose: str) -> str:
    """The reward as weighted parts that add up to the total:
    ``Your reward -1.200 = win 1 x 0.000 + margin 1 x -1.000 + ...``."""
    weights = reward.get("weights") or {}
    parts = " + ".join(
        f"{name} {weights.get(name, 1.0):g} x {value:.3f}"
        for name, value in reward["components"].items()
    )
    return f"{whose} reward {reward['total']:.3f} = {parts}."


def ending(view: dict[str, Any]) -> list[str]:
    """What the terminal says when the game is over."""
    lines = []
    seat = "The model" if view.get("reward_of") == "model" else "You"
    if view["termination"] == "forfeit":
        lines.append(
            f"{seat} forfeit{'s' if seat != 'You' else ''} the game: "
            f"{view['invalid_moves']} invalid replies, one more than the "
            f"{view['max_invalid_moves']} allowed."
        )
    else:
        lines.append(view["board_text"])
    if view.get("answer") and view["result"] != "win":
        lines.append(f"The answer was {view['answer'].upper()}.")
    result = view.get("your_result") or view["result"]
    lines.append(f"Game over: you {_VERB.get(result, result)} ({view['termination']}).")
    lines.append(reward_line(view["reward"], "Your" if seat == "You" else "The model's"))
    return lines


_VERB = {"win": "won", "loss": "lost", "draw": "drew"}


def run_terminal(args: argparse.Namespace) -> int:
    try:
        return play(args)
    except KeyboardInterrupt:  # Ctrl-C: stop, no traceback
        print("\nstopped.", flush=True)
        return 130
