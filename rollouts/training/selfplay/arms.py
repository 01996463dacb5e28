"""Self-play's arms (fixed opponent, self, snapshot) at equal compute, their evaluation and
their table. See :mod:`rollouts.training.selfplay`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollouts.training.selfplay.kuhn import KUHN, KUHN_WEIGHTS, kuhn_figures, model_kuhn_policy
from rollouts.training.selfplay.rollout import SelfPlayRollout
from rollouts.training.text_rollout import TextRollout


@dataclass(frozen=True)
class GameSetup:
    """One game's comparison: where the start comes from and the RL settings every arm
    shares (the fixed arm's are the weak recipe's on Tic-Tac-Toe)."""

    game: str
    fixed_opponent: str
    depth: int
    min_random: float
    max_random: float
    max_new_tokens: int
    num_groups: int
    games_per_group: int
    decisions: int
    learning_rate: float
    loss_type: str
    epsilon_high: float
    temperature: float
    reward_weights: str = ""


def tictactoe_setup() -> GameSetup:
    """The weak recipe's RL settings (``gamebridge train recipe --teacher weak``), its first
    stage's opponent and learning rate (the fixed arm: mostly optimal play, 0-0.25)."""
    from rollouts.training.recipe import (
        PLANS,
        RecipeSettings,
        parse_stages,
        resolve,
        stage_learning_rates,
    )

    s = resolve(RecipeSettings(game="tictactoe", teacher="weak", docs=""))
    lo, hi = parse_stages(s.rl_stages)[0]
    return GameSetup(
        "tictactoe",
        "minimax",
        PLANS["tictactoe"].opponent_depth,
        lo,
        hi,
        PLANS["tictactoe"].max_new_tokens,
        s.num_groups,
        s.num_generations,
        s.rl_decisions_per_game,
        stage_learning_rates(s)[0],
        s.loss_type,
        s.epsilon_high,
        s.temperature,
    )


def kuhn_setup() -> GameSetup:
    """Kuhn: the random bot as the fixed opponent, one decision of each seat a game."""
    return GameSetup(
        KUHN, "random", 1, 0.0, 0.0, 8, 32, 8, 1, 1e-4, "cispo", 5.0, 1.0, KUHN_WEIGHTS
    )


ARMS = ("fixed", "self", "snapshot")


def arm_rollout(arm: str, g: GameSetup, refresh_every: int) -> TextRollout:
    """The rollout of one arm. Equal compute: every arm trains ``num_groups x
    games_per_group x decisions`` rows an update; ``fixed`` plays ``num_groups x
    games_per_group`` games (one model seat each), ``self`` half as many (both seats the
    model's, so as many model turns), ``snapshot`` as many as ``fixed`` (the snapshot's
    turns on top)."""
    if arm == "fixed":
        return TextRollout(g.max_new_tokens, history="none", decisions_per_game=g.decisions)
    return SelfPlayRollout(
        g.max_new_tokens,
        opponent=arm,
        refresh_every=refresh_every,
        games_per_group=g.games_per_group,
        decisions_per_seat=g.decisions,
    )


def train_arm(
    arm: str, g: GameSetup, model: Any, tokenizer: Any, updates: int, refresh_every: int, seed: int
) -> tuple[Any, dict[str, Any]]:
    """GRPO ``updates`` updates of ``model`` in place (the recipe's trainer: constant lr,
    no KL, invalid replies forfeit); returns the model and what was played."""
    from rollouts.training.grpo import staged_settings, train_grpo

    rollout = arm_rollout(arm, g, refresh_every)
    counted = _Counted(rollout)
    settings = staged_settings(
        updates=updates,
        num_groups=g.num_groups,
        max_new_tokens=g.max_new_tokens,
        game=g.game,
        opponent=g.fixed_opponent,
        depth=g.depth,
        opening_plies=0,
        min_random_move_prob=g.min_random,
        max_random_move_prob=g.max_random,
        num_generations=g.games_per_group * g.decisions,
        temperature=g.temperature,
        learning_rate=g.learning_rate,
        loss_type=g.loss_type,
        epsilon_high=g.epsilon_high,
        seed=seed,
        output_dir=str(Path("/tmp") / f"gamebridge-selfplay-{arm}"),
        reward_weights=g.reward_weights,
    )
    trainer = train_grpo(
        settings, model=model, tokenizer=tokenizer, progress=False, rollout=counted
    )
    played = {
        "games": counted.games,
        "model_turns": counted.turns,
        "snapshot_turns": counted.snapshot_turns,
        "rows": counted.rows,
        "refreshes": list(getattr(rollout, "refreshes", [])),
    }
    return trainer.model, played


class _Counted:
    """A rollout that counts games, model turns and rows (the equal-compute columns)."""

    def __init__(self, inner: TextRollout) -> None:
        self.inner = inner
        self.games = self.turns = self.snapshot_turns = self.rows = 0

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        out = self.inner(prompts, trainer)
        self.rows += len(out["prompt_ids"])
        if isinstance(self.inner, SelfPlayRollout):
            self.games, self.turns = self.inner.games, self.inner.turns
            self.snapshot_turns = self.inner.snapshot_turns
        else:
            self.games += len(self.inner.last_episodes)
            self.turns += sum(len(ep.events) for ep in self.inner.last_episodes)
        return out


def evaluate(game: str, model: Any, tokenizer: Any) -> dict[str, Any]:
    """Tic-Tac-Toe: the recipe's exact evaluation (greedy); Kuhn: OpenSpiel's figures for
    the model's move probabilities."""
    if game == KUHN:
        probs, least = model_kuhn_policy(model, tokenizer)
        return {**kuhn_figures(probs), "least_mass": least, "policy": probs}
    from rollouts.training import recipe as R

    s = R.resolve(R.RecipeSettings(game="tictactoe", teacher="weak", docs=""))
    return R.exact_evaluation(s, R.model_replies_to(model, tokenizer, 8))


# --- the table -----------------------------------------------------------------------------------
ARM_NAMES = {
    "start": "the start (no RL)",
    "fixed": "fixed opponent",
    "self": "self-play (the model in both seats)",
    "snapshot": "self-play against a snapshot",
}

TTT_HEAD = [
    "| arm | games x updates | model turns | rows | vs random win (exact) "
    "| vs optimal non-loss (exact) | wall |",
    "|---|---|---|---|---|---|---|",
]
KUHN_HEAD = [
    "| arm | games x updates | model turns | rows | exploitability | first player's value "
    "| value vs random | wall |",
    "|---|---|---|---|---|---|---|---|",
]


def table_row(game: str, name: str, r: dict[str, Any], updates: int) -> str:
    e = r["eval"]
    p = r.get("played", {})
    turns = p.get("model_turns", 0)
    if p.get("snapshot_turns"):
        turns = f"{turns} (+{p['snapshot_turns']} snapshot)"
    games = f"{p.get('games', 0) // max(1, updates)} x {updates}" if p else "-"
    head = f"| {name} | {games} | {turns if p else '-'} | {p.get('rows', '-') if p else '-'} "
    wall = f"{r.get('seconds', 0):.0f} s"
    if game == KUHN:
        return (
            head + f"| {e['exploitability']:.4f} | {e['first_player_value']:+.4f} "
            f"| {e['value_vs_random']:+.4f} | {wall} |"
        )
    return (
        head + f"| {100 * e['random']['win_rate']:.2f}% "
        f"| {100 * e['optimal']['non_loss_rate']:.2f}% | {wall} |"
    )


def slug(game: str) -> str:
    """A game's name in the docs markers and output files (``kuhn_poker``, ``tictactoe``)."""
    return game.split(":")[-1]


def markdown(results: dict[str, Any], game: str) -> str:
    """One game's docs section: what was run, then the table, the figures as measured."""
    entry = results["games"][game]
    u = entry["updates"]
    lines = [
        f"`{results['command']}` (written by the command, {results['date']}): copies of "
        f"`{entry['start']}` trained by GRPO for {u} updates each (lr {entry['lr']:g}, "
        "loss `cispo`, temperature 1) against the fixed opponent, against themselves (both "
        "seats, both seats' turns trained) and against a snapshot of themselves refreshed "
        f"every {results['refresh_every']} updates, at equal compute (the same updates and "
        "training rows; games and model turns as played, the snapshot's counted apart); "
        "every GRPO group is one seat's decisions (per-role baselines). One seed each.",
        "",
    ]
    if game == KUHN:
        lines += [
            "The start: a tiny model SFT-trained on a random behaviour policy (a Bet "
            "probability drawn from 0.2-0.8 at each information state); the fixed opponent "
            "the random bot; the reward the chips won. Figures: OpenSpiel's "
            "`exploitability` of the `TabularPolicy` of the model's move probabilities at "
            "the 12 information states (0 at a Nash equilibrium; the uniform policy's is "
            "0.4583, always betting 0.3333), the first player's value when the policy "
            "plays itself (-1/18 = -0.0556 at equilibrium), and its mean value over both "
            "seats against uniform random play.",
            "",
            *KUHN_HEAD,
        ]
    else:
        lines += [
            "The start: the weak recipe's SFT student; the fixed arm: the recipe's RL "
            f"(minimax:9 with 0-0.25 random moves, {entry['decisions']} decisions of each "
            "game; self-play: of each seat). Figures: the recipe's exact evaluation, greedy, "
            "both sides.",
            "",
            *TTT_HEAD,
        ]
    for arm, r in entry["arms"].items():
        lines.append(table_row(game, ARM_NAMES[arm], r, u))
    if game == KUHN:
        lines += ["", "Bet probability at each information state (card, then the bets):", ""]
        keys = sorted(entry["arms"]["start"]["eval"]["policy"])
        lines += ["| arm | " + " | ".join(f"`{k}`" for k in keys) + " |"]
        lines += ["|---|" + "---|" * len(keys)]
        for arm, r in entry["arms"].items():
            policy = r["eval"]["policy"]
            cells = " | ".join(f"{policy[k]['Bet']:.2f}" for k in keys)
            lines.append(f"| {ARM_NAMES[arm]} | {cells} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "ARMS",
    "ARM_NAMES",
    "GameSetup",
    "arm_rollout",
    "evaluate",
    "kuhn_setup",
    "markdown",
    "slug",
    "table_row",
    "tictactoe_setup",
    "train_arm",
]
