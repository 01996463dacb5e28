"""Golden transcripts: a few seeded episodes per game, recorded as JSON.

    python -m tests.golden.regen            # rewrite tests/golden/<game>.json
    python -m tests.golden.regen --check    # exit 1 if a replay differs from the files

Per game in ``list_games()``: the conformance suite's tasks
(``make_tasks(2, seed=11, game=...)``) played by ``ScriptedPlayer("noisy:0.3/minimax:1",
seed=0)`` straight through ``core.Episode``, in text mode (``<move>`` replies) and tool
mode (``make_move`` arguments), exactly as the reference driver plays them. Each
episode records its observations (what the model reads), the replies, the trajectory
(``Episode.to_dict()``: prompts, boards, events) and the reward breakdown.

Core must reproduce the files under any ``PYTHONHASHSEED`` (tests/golden/
test_golden.py runs ``--check`` in subprocesses under two); every driver must
reproduce their trajectories (tests/conformance/test_conformance.py). Regenerate
only for an intended change of behaviour, and say so in the commit message.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.episode import Episode
from core.games import list_games
from core.players import ScriptedPlayer
from core.tasks import Task, make_tasks

HERE = Path(__file__).resolve().parent
POLICY = "noisy:0.3/minimax:1"
PLAYER_SEED = 0
TASK_SEED = 11
TASKS_PER_GAME = 2
MODES = ("text", "tools")


def tasks(game: str) -> list[Task]:
    """The conformance suite's tasks for ``game``."""
    return make_tasks(TASKS_PER_GAME, seed=TASK_SEED, game=game)


def play(task: Task, mode: str) -> dict[str, Any]:
    """One episode as the reference driver (rollouts/drivers/core.py) plays it."""
    player = ScriptedPlayer(POLICY, PLAYER_SEED)
    episode = Episode(task)
    tools = mode == "tools"
    system = episode.tool_system_prompt if tools else episode.system_prompt
    observations = [episode.reset()]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": observations[0]},
    ]
    replies: list[str] = []
    while not episode.done:
        if tools:
            reply = player.move(messages)
            result = episode.step_move(reply)
            role = "tool"
        else:
            reply = player.reply(messages)
            result = episode.step(reply)
            role = "user"
        replies.append(reply)
        observations.append(result.observation)
        messages += [
            {"role": "assistant", "content": reply},
            {"role": role, "content": result.observation},
        ]
    return {
        "task_id": task.task_id,
        "mode": mode,
        "observations": observations,
        "replies": replies,
        "trajectory": episode.to_dict(),
        "reward": episode.reward().to_dict(),
    }


def transcript(game: str) -> dict[str, Any]:
    """The golden document of ``game`` (JSON-normalised)."""
    doc = {
        "game": game,
        "policy": POLICY,
        "player_seed": PLAYER_SEED,
        "task_seed": TASK_SEED,
        "episodes": [play(task, mode) for mode in MODES for task in tasks(game)],
    }
    return json.loads(json.dumps(doc))


def path(game: str) -> Path:
    return HERE / f"{game}.json"


def load(game: str) -> dict[str, Any]:
    return dict(json.loads(path(game).read_text(encoding="utf-8")))


def differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """Where two golden documents differ (first differing event per episode)."""
    out = []
    if len(expected["episodes"]) != len(got["episodes"]):
        return [f"{len(got['episodes'])} episodes, golden has {len(expected['episodes'])}"]
    for old, new in zip(expected["episodes"], got["episodes"], strict=True):
        if old == new:
            continue
        where = next((k for k in old if old[k] != new.get(k)), "?")
        if where == "trajectory":
            events = zip(old["trajectory"]["events"], new["trajectory"]["events"], strict=False)
            first = next((i for i, (a, b) in enumerate(events) if a != b), None)
            where = f"trajectory (event {first})" if first is not None else "trajectory"
        out.append(f"{old['task_id']} [{old['mode']}]: {where} differs")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden.regen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--game", action="append", help="only these games (repeatable)")
    args = parser.parse_args(argv)
    failed = False
    for game in args.game or list_games():
        doc = transcript(game)
        if args.check:
            if not path(game).exists():
                print(f"{game}: no golden file {path(game)}")
                failed = True
                continue
            diffs = differences(load(game), doc)
            failed = failed or bool(diffs)
            print(f"{game}: " + ("identical" if not diffs else "; ".join(diffs)))
        else:
            text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
            path(game).write_text(text, encoding="utf-8")
            print(f"{game}: wrote {path(game).relative_to(HERE.parents[1])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
