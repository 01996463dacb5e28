"""Served back: a recipe checkpoint behind ``gamebridge serve-policy --model-path``, played
through a framework's whole chat (Verifiers: the system prompt and every turn, the
server's ``--context chat``), plays the recipe's own held-out tasks game for game as the
recipe's evaluation played them (``held_out_games``; ``evaluate_model``'s figures, the
table's, are their summary).

The checkpoints are built here in seconds as the recipe builds its own (teacher decisions,
the recipe's tokenizer and chat template, a few SFT steps of a tiny model, saved with the
reply limit the recipe evaluates with); the server is the real command, a subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("verifiers")

SFT_STEPS = 60
"""Enough for a mix of legal moves, illegal ones and malformed replies (legal-move rate
about 0.5-0.8 on Connect Four): games that end every way."""


def recipe_checkpoint(game: str, steps: int, out: Path) -> tuple[Any, Any, Path]:
    """(model, tokenizer, folder) of a tiny recipe-style student of ``game``."""
    from core.tasks import make_tasks
    from core.teacher import make_teacher
    from rollouts.training.recipe import PLANS, decisions, play_teacher, sft_rows
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import (
        DECISION_CHAT_TEMPLATE,
        build_model,
        build_tokenizer,
        save_tiny,
    )

    games = play_teacher(make_teacher(game), make_tasks(8, seed=1, game=game))
    rows = sft_rows(decisions(games, {"win", "draw", "loss"}), 1, 0)
    tokenizer = build_tokenizer(rows, 300, DECISION_CHAT_TEMPLATE)
    model = build_model(
        tokenizer, seed=0, hidden_size=32, intermediate_size=64, num_hidden_layers=1
    )
    if steps:
        run_sft(
            model,
            tokenizer,
            rows,
            output_dir=str(out / "sft"),
            max_steps=steps,
            learning_rate=3e-3,
            batch_size=16,
            progress=False,
        )
    model.eval()
    folder = save_tiny(model, tokenizer, out / "model", max_new_tokens=PLANS[game].max_new_tokens)
    return model, tokenizer, folder


def recipe_sets(game: str) -> dict[str, list[Any]]:
    """The recipe's own held-out tasks, a handful: Tic-Tac-Toe's random and optimal
    opponents, Connect Four's whole ladder (two games a rung, one a side)."""
    from rollouts.training.recipe import RecipeSettings, eval_sets

    return eval_sets(RecipeSettings(game=game, eval_games=3, ladder_games=2))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made: dict[tuple[str, int], tuple[Any, Any, Path]] = {}

    def get(game: str, steps: int) -> tuple[Any, Any, Path]:
        if (game, steps) not in made:
            made[game, steps] = recipe_checkpoint(
                game, steps, tmp_path_factory.mktemp(f"{game}-{steps}")
            )
        return made[game, steps]

    return get


SLOW = pytest.mark.slow  # each case is a checkpoint and a server start (about 10 s)


@pytest.mark.parametrize(
    ("game", "steps", "constrained"),
    [
        pytest.param("connect_four", SFT_STEPS, False, id="connect_four"),
        pytest.param("connect_four", SFT_STEPS, True, id="connect_four-constrained", marks=SLOW),
        pytest.param("connect_four", 0, False, id="connect_four-untrained", marks=SLOW),
        pytest.param("tictactoe", SFT_STEPS, False, id="tictactoe", marks=SLOW),
    ],
)
def test_a_served_checkpoint_plays_as_the_recipe_evaluated_it(
    checkpoints: Any, game: str, steps: int, constrained: bool
) -> None:
    """Every game's trajectory (replies, moves, errors, the opponent's answers, result,
    reward) equal, and so the table's figures. Untrained, every reply runs to the token
    limit: the served one is cut where the recipe's was (the checkpoint's own limit)."""
    from core.episode import Episode
    from rollouts.drivers import get_driver
    from rollouts.model.servers import start_server
    from rollouts.training.recipe import PLANS, evaluate_model, held_out_games, summarize

    model, tokenizer, folder = checkpoints(game, steps)
    sets = recipe_sets(game)
    limit = PLANS[game].max_new_tokens
    options = {"max_new_tokens": limit, "constrained": constrained}
    recipe = held_out_games(model, tokenizer, sets, **options)
    figures = evaluate_model(model, tokenizer, sets, **options)

    argv = ["python", "-m", "rollouts.cli", "serve-policy", "--model-path", str(folder)]
    argv += ["--context", "chat", "--port", "{port}"]
    argv += ["--constrained-decoding"] if constrained else []
    tasks = [task for tasks in sets.values() for task in tasks]
    with start_server(argv, "/health", timeout=120) as server:
        records = get_driver("verifiers").run(
            tasks, base_url=f"{server.base_url}/v1", model=str(folder)
        )
    assert not [r.error for r in records if r.failed]

    served = iter(records)
    for name, episodes in recipe.items():
        mine = [next(served) for _ in episodes]
        for episode, record in zip(episodes, mine, strict=True):
            assert record.trajectory == episode.to_dict()
        replayed = [
            Episode.replay(r.task, [e["reply"] for e in r.trajectory["events"]]) for r in mine
        ]
        assert summarize(replayed) == figures[name]

    events = [ev for eps in recipe.values() for ep in eps for ev in ep.events]
    assert events and any(ev["move"] is not None for ev in events) == bool(steps)
    if constrained:
        assert all(ev["error"] is None for ev in events)
    elif steps:  # a mix: the comparison covers moves and rejected replies alike
        assert any(ev["error"] is not None for ev in events)
    else:  # untrained: each reply cut at the recipe's limit, served or not
        assert all(len(tokenizer(ev["reply"])["input_ids"]) >= limit - 2 for ev in events)


def test_the_checkpoint_carries_the_recipes_reply_limit(checkpoints: Any) -> None:
    """The recipe saves the limit it evaluated with; the served backend cuts there unless
    told otherwise (a folder without one: 24 tokens)."""
    from rollouts.model.transformers_backend import DEFAULT_MAX_NEW_TOKENS, TransformersModel
    from rollouts.training.recipe import PLANS
    from rollouts.training.tiny import save_tiny

    model, tokenizer, folder = checkpoints("connect_four", 0)
    assert TransformersModel(folder).max_new_tokens == PLANS["connect_four"].max_new_tokens
    assert TransformersModel(folder, max_new_tokens=5).max_new_tokens == 5
    plain = save_tiny(model, tokenizer, folder.parent / "plain")
    assert TransformersModel(plain).max_new_tokens == DEFAULT_MAX_NEW_TOKENS
    assert model.generation_config.max_new_tokens is None  # the live model left as it was
