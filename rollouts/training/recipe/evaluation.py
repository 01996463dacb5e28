"""Evaluation: generation, the student's errors on trained boards, exact
expectations (:func:`exact_evaluation`), held-out play and its summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rollouts.training.recipe.plan import PLANS, RecipeSettings


def generation_config(tokenizer: Any, max_new_tokens: int, temperature: float = 0.0) -> Any:
    """The recipe's ``GenerationConfig``: greedy unless ``temperature`` > 0 (then pure
    sampling at that temperature, no top-k)."""
    from transformers import GenerationConfig

    sample = temperature > 0
    return GenerationConfig(
        do_sample=sample,
        temperature=temperature if sample else None,
        top_k=0 if sample else None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_new_tokens=max_new_tokens,
    )


def greedy_replies(
    model: Any,
    tokenizer: Any,
    observations: Sequence[str],
    max_new_tokens: int,
    batch_size: int = 256,
    *,
    game: str | None = None,
) -> list[str]:
    """The model's greedy reply to each observation as the only user turn: the
    one-decision prompt and the batched generation of the held-out evaluation
    (``TextRollout.decision_prompt`` and ``TextRollout.generate``). ``game`` (constrained
    decoding, an option): each reply restricted to the legal replies core lists for its
    observation of that game (``core.players.legal_replies``); None: unconstrained."""
    from core.games import make_game
    from core.players import legal_replies
    from rollouts.training.text_rollout import TextRollout

    rollout = TextRollout(max_new_tokens, history="none", constrained=game is not None)
    board = None if game is None else make_game(game)
    config = generation_config(tokenizer, max_new_tokens)
    replies: list[str] = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(observations), batch_size):
            chunk = observations[start : start + batch_size]
            contexts = [rollout.decision_prompt(tokenizer, o) for o in chunk]
            legal = None if board is None else [legal_replies(board, o) for o in chunk]
            generated = rollout.generate(
                model, tokenizer, contexts, config, [tokenizer.eos_token_id], legal
            )
            replies += [tokenizer.decode(r, skip_special_tokens=True) for r in generated]
    finally:
        model.train(was_training)
    return replies


def student_errors(
    model: Any, tokenizer: Any, support: dict[str, set[str]], max_new_tokens: int
) -> set[str]:
    """The observations of ``support`` where the model's greedy reply is not one of
    the teacher's moves there (a malformed reply counts as wrong), read the way
    ``core.Episode`` reads a reply (``core.parsing.parse_reply``). Never constrained: the
    hard-example phase trains the model on its own errors, illegal moves included."""
    from core.parsing import FormatError, parse_reply

    observations = list(support)
    wrong: set[str] = set()
    for observation, reply in zip(
        observations, greedy_replies(model, tokenizer, observations, max_new_tokens), strict=True
    ):
        try:
            move: str | None = parse_reply(reply).move
        except FormatError:
            move = None
        if move not in support[observation]:
            wrong.add(observation)
    return wrong


def played_line(episode: Any) -> str:
    """The moves of a finished ``core.Episode`` in the order played, from the initial
    position (an invalid reply shown as ``?``)."""
    moves = [*episode.opening, *episode.opponent_first]
    for event in episode.events:
        moves += [event.move or "?", *event.opponent_moves]
    return " ".join(moves)


def exact_outcomes(
    task: Any, replies_to: Any, opponent: Any, losses: dict[str, float] | None = None
) -> dict[str, float]:
    """The expected W/D/L of a player on ``task``: ``replies_to(observations)`` gives its
    reply to each (a text: a deterministic player; or a mapping of replies to their
    probabilities: a stochastic one), ``opponent.distribution(game, state)`` every move the
    opponent may play there and its probability, and every branch is played through
    ``core.Episode`` (a ``MoveListOpponent`` replaying one branch), which judges the
    replies and the ending. The branches advance together, a round at a time, so the
    player is asked about every position the round reaches in one batch. No sampling:
    the figure a held-out sample of games estimates. ``losses``, when given, gets each lost
    game's line (:func:`played_line`; of transposed branches, merged, the one that goes on)
    and its chance."""
    from core.episode import Episode
    from core.opponents import MoveListOpponent, NoMoveLeftError

    totals = {"win": 0.0, "draw": 0.0, "loss": 0.0}
    branches: list[tuple[list[str], list[str], float]] = [([], [], 1.0)]
    while branches:
        # Branches that reach one position (the same state and invalid replies so far) by
        # different orders have one future: one of them goes on, with their summed chance.
        merged: dict[Any, list[Any]] = {}
        for theirs, mine, p in branches:
            ep = Episode(task, opponent=MoveListOpponent(theirs))
            try:
                ep.reset()
                for reply in mine:
                    ep.step(reply)
            except NoMoveLeftError as e:  # the opponent's turn
                key: tuple[Any, ...] = ("opponent", e.state, ep.invalid_moves)
                payload: Any = (ep.game, e.state)
            else:
                if ep.done:
                    result = ep.result if ep.result in totals else "loss"
                    totals[result] += p
                    if losses is not None and result == "loss":
                        line = played_line(ep)
                        losses[line] = losses.get(line, 0.0) + p
                    continue
                key = ("player", ep.state, ep.invalid_moves, ep.observation)
                payload = ep.observation
            if key in merged:
                merged[key][2] += p
            else:
                merged[key] = [theirs, mine, p, payload, key[0]]
        following: list[tuple[list[str], list[str], float]] = []
        asking = [b for b in merged.values() if b[4] == "player"]
        for theirs, mine, p, (game, state), _ in (b for b in merged.values() if b[4] != "player"):
            for m, q in opponent.distribution(game, state).items():  # every move it may play
                following.append((theirs + [game.move_to_text(state, m)], mine, p * q))
        replies = replies_to([b[3] for b in asking]) if asking else []
        for (theirs, mine, p, _, _), reply in zip(asking, replies, strict=True):
            for r, q in ({reply: 1.0} if isinstance(reply, str) else reply).items():
                following.append((theirs, mine + [r], p * q))
        branches = following
    return totals


def exact_evaluation(s: RecipeSettings, replies_to: Any) -> dict[str, dict[str, Any]]:
    """:func:`exact_outcomes` against the random opponent (its legal moves) and the
    optimal one (minimax's tied best moves, as it breaks ties uniformly), both sides
    averaged, as the held-out sets alternate them: win, draw, loss and non-loss rates, and
    the same for each side (``sides``: the model moving first, then second), with each
    side's most likely lost games (``losing_lines``: up to :data:`LOSING_LINES` lines and
    their chances)."""
    from core.opponents import MinimaxOpponent, RandomOpponent
    from core.tasks import make_tasks

    plan = PLANS[s.game]
    opponents = {"random": RandomOpponent(), "optimal": MinimaxOpponent(plan.opponent_depth)}
    out = {}
    for name, opponent in opponents.items():
        tasks = make_tasks(2, seed=1, game=s.game, opening_plies=0, max_random_move_prob=0.0)
        lost: list[dict[str, float]] = [{}, {}]  # the model's side 0 and 1
        sides = [exact_outcomes(t, replies_to, opponent, lost[i]) for i, t in enumerate(tasks)]
        out[name] = {
            **rates(sum(o["win"] for o in sides) / 2, sum(o["draw"] for o in sides) / 2),
            "sides": [
                {**rates(o["win"], o["draw"]), "losing_lines": likeliest(lines)}
                for o, lines in zip(sides, lost, strict=True)
            ],
        }
    return out


LOSING_LINES = 3
"""Lost games kept per side and opponent by :func:`exact_evaluation`."""


def likeliest(lines: dict[str, float]) -> list[list[Any]]:
    """The :data:`LOSING_LINES` likeliest lines as ``[line, chance]`` (ties by line)."""
    ranked = sorted(lines.items(), key=lambda kv: (-kv[1], kv[0]))[:LOSING_LINES]
    return [[line, round(p, 4)] for line, p in ranked]


def rates(win: float, draw: float) -> dict[str, float]:
    """Win, draw, loss and non-loss rates from a win and a draw chance, rounded."""
    return {
        "win_rate": round(win, 4),
        "draw_rate": round(draw, 4),
        "loss_rate": round(1.0 - win - draw, 4),
        "non_loss_rate": round(win + draw, 4),
    }


def model_replies_to(
    model: Any, tokenizer: Any, max_new_tokens: int, *, game: str | None = None
) -> Any:
    """The model's greedy replies to observations, each asked once, the new ones in one
    batch (:func:`greedy_replies`; ``game``: constrained to its legal replies)."""
    cache: dict[str, str] = {}

    def replies_to(observations: Sequence[str]) -> list[str]:
        new = list(dict.fromkeys(o for o in observations if o not in cache))
        if new:
            replies = greedy_replies(model, tokenizer, new, max_new_tokens, game=game)
            cache.update(zip(new, replies, strict=True))
        return [cache[o] for o in observations]

    return replies_to


def teacher_replies_to(teacher: Any, game_name: str) -> Any:
    """The teacher's replies to observations: every move it may play on the board each
    observation shows, with its probability (``teacher.distribution``), as ``<move>``
    replies."""
    from core.games import make_game
    from core.parsing import format_reply

    game = make_game(game_name)

    def reply_to(observation: str) -> dict[str, float]:
        state = game.parse_board(observation)
        return {
            format_reply(game.move_to_text(state, m)): q
            for m, q in teacher.distribution(game, state).items()
        }

    return lambda observations: [reply_to(o) for o in observations]


# --- evaluation ---------------------------------------------------------------------------------
def interval95(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of ``k`` in ``n`` (``core.stats.wilson_interval``), rounded
    to four places for the tables."""
    from core.stats import wilson_interval

    lo, hi = wilson_interval(k, n)
    return (round(lo, 4), round(hi, 4))


def summarize(episodes: Sequence[Any]) -> dict[str, Any]:
    """W/D/L counts, rates, intervals, legal-move and format rates of finished episodes;
    a two-player game's counts for each side too (``sides``: the player first, then
    second)."""
    n = len(episodes)
    w = sum(e.result == "win" for e in episodes)
    d = sum(e.result == "draw" for e in episodes)
    losses = n - w - d
    replies = sum(len(e.events) for e in episodes)
    legal = sum(1 for e in episodes for ev in e.events if ev["error"] is None)
    formed = sum(1 for e in episodes for ev in e.events if ev["format_ok"])
    out: dict[str, Any] = {
        "games": n,
        "wins": w,
        "draws": d,
        "losses": losses,
        "win_rate": round(w / max(n, 1), 4),
        "non_loss_rate": round((w + d) / max(n, 1), 4),
        "win_ci": interval95(w, n),
        "non_loss_ci": interval95(w + d, n),
        "replies": replies,
        "legal_move_rate": round(legal / max(replies, 1), 4),
        "legal_move_ci": interval95(legal, replies),
        "format_rate": round(formed / max(replies, 1), 4),
    }
    if episodes and episodes[0].game.spec.num_players == 2:
        out["sides"] = [
            side_counts([e for e in episodes if e.task.model_player == p]) for p in (0, 1)
        ]
    if episodes and episodes[0].game.spec.num_players == 1:
        solved = [len(e.events) for e in episodes if e.result == "win"]
        out["mean_guesses"] = round(sum(solved) / len(solved), 3) if solved else None
    return out


def side_counts(episodes: Sequence[Any]) -> dict[str, int]:
    """Games, wins, draws and losses of ``episodes`` (the player on one side)."""
    results = [e.result for e in episodes]
    wins, draws = results.count("win"), results.count("draw")
    return {
        "games": len(results),
        "wins": wins,
        "draws": draws,
        "losses": len(results) - wins - draws,
    }


def evaluate_model(
    model: Any,
    tokenizer: Any,
    sets: dict[str, list[Any]],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    constrained: bool = False,
) -> dict[str, Any]:
    """Held-out play of every set through ``core.Episode`` (``TextRollout`` with
    one-decision prompts), greedy unless ``temperature`` > 0; ``constrained``: every
    reply one of the legal replies core lists (constrained decoding, an option). Each
    set's games (:func:`held_out_games`) summarized (:func:`summarize`)."""
    games = held_out_games(
        model,
        tokenizer,
        sets,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        seed=seed,
        constrained=constrained,
    )
    return {name: summarize(episodes) for name, episodes in games.items()}


def held_out_games(
    model: Any,
    tokenizer: Any,
    sets: dict[str, list[Any]],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    constrained: bool = False,
) -> dict[str, list[Any]]:
    """The finished episodes :func:`evaluate_model` summarizes, per set, in task order
    (a served checkpoint's games are compared with these, game by game)."""
    import torch

    from rollouts.training.text_rollout import TextRollout

    config = generation_config(tokenizer, max_new_tokens, temperature)
    rollout = TextRollout(max_new_tokens, history="none", constrained=constrained)
    was_training = model.training
    model.eval()
    out = {}
    try:
        for name, tasks in sets.items():
            torch.manual_seed(seed)
            played = rollout.play(model, tokenizer, tasks, config, [tokenizer.eos_token_id], 0)
            out[name] = played.episodes
    finally:
        model.train(was_training)
    return out


def climb(policy: Any, sets: dict[str, list[Any]]) -> dict[str, dict[str, Any]]:
    """A scripted player's ladder (an ``Opponent`` choosing the player's moves: the
    teacher), each rung summarized (``summarize``)."""
    from rollouts.training.recipe.data import play_teacher

    return {name: summarize(play_teacher(policy, tasks)) for name, tasks in sets.items()}
