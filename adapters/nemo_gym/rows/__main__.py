"""``python -m adapters.nemo_gym.rows --game othello -n 4 > rows.jsonl``: NeMo Gym
dataset rows (JSONL) for ``core.make_tasks`` tasks (core only: no NeMo Gym import)."""

from __future__ import annotations

import argparse
import json

from adapters.nemo_gym.rows import STYLES, make_row
from core.games import game_arg
from core.tasks import make_tasks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m adapters.nemo_gym.rows", description=__doc__)
    parser.add_argument("--game", default="tictactoe", type=game_arg)
    parser.add_argument("-n", type=int, default=8, help="number of rows (core.make_tasks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--style", default="gymnasium", choices=STYLES)
    args = parser.parse_args(argv)
    for task in make_tasks(args.n, seed=args.seed, game=args.game):
        print(json.dumps(make_row(task, args.style)))


if __name__ == "__main__":
    main()
