"""``gamebridge play --terminal``: a quick game without a browser.

The same :class:`~rollouts.play.session.GameSession` as the page: you type a
move, core judges it. Type ``quit`` (or end the input) to stop.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from rollouts.play.session import GameSession, PlayError, ScriptedModel, Setup


def _model(args: argparse.Namespace) -> object:
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
        opponent=args.opponent,
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
            say(view["board_text"])
            reward = view["reward"]
            parts = ", ".join(f"{k} {v:+.3f}" for k, v in reward["components"].items())
            say(
                f"Game over: {view['result']} ({view['termination']}). Reward {reward['total']:.3f} ({parts})."
            )
            return 0
        if view["your_turn"] and session.setup.other == "model":
            say(view["board_text"])
            say("Legal moves: " + ", ".join(view["legal_moves"]))
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


def run_terminal(args: argparse.Namespace) -> int:
    return play(args)
