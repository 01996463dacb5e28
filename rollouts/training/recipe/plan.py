"""The recipe's plan: the model's size, each game's plan, the settings and how
they resolve (:func:`resolve`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MODEL_CONFIG: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": True,
}
"""About 0.83M parameters (a 352-token vocabulary). Measured here, 800 SFT
steps of 64 on the teacher's games, 200 held-out games per opponent, greedy:
hidden 96 / 3 layers (0.37M, 0.26 CPU-s a step) won 86.0% against random and
did not lose 95.5% against optimal; hidden 128 / 4 layers (0.83M, 0.48 CPU-s
a step) 86.5% and 96.5%. The larger one is kept: it fits the teacher's
decisions better for under twice the cost. Wider still did not pay at equal
steps: hidden 192 / 4 layers (1.8M), 800 steps, 400 games per opponent, won
85.2% and did not lose 95.2% (its argmax move a teacher-best one on 78.1% of
the teacher's boards), where the 0.83M model given 1600 steps instead won
93.8% and did not lose 100% (fit 97.2%): steps, not width, were short."""


@dataclass(frozen=True)
class GamePlan:
    """What the recipe plays for one game."""

    opponent_depth: int
    """The minimax depth of the 'optimal' opponent (teacher games, RL, evaluation)."""
    opponent_label: str
    opening_plies: int
    max_new_tokens: int
    teacher_games: int
    sft_steps: int
    rl_steps: int
    hard_steps: int = 0
    """Steps of the hard-example SFT phase (0: none)."""
    exact: bool = False
    """Small enough to evaluate exactly: every move the opponent may play enumerated."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The game's own defaults of other :class:`RecipeSettings` (a flag still wins), e.g.
    RL stages matched to where its student plays."""


PLANS: dict[str, GamePlan] = {
    "tictactoe": GamePlan(9, "optimal (minimax:9)", 0, 8, 3000, 1600, 0, 400, True),
    "connect_four": GamePlan(
        2,
        "minimax:2",
        2,
        8,
        600,
        600,
        50,
        settings={"rl_stages": "0.5-1", "rl_learning_rate": 1e-4},
    ),
    "wordle": GamePlan(2, "-", 0, 12, 600, 600, 0),
    "othello": GamePlan(
        3,
        "minimax:3",
        4,
        10,
        600,
        2400,
        30,
        settings={"rl_stages": "0.5-1", "rl_learning_rate": 1e-4},
    ),
}
"""Per-game budgets (Connect Four and Wordle reduced: see docs/trl.md). Othello: the seed's
depth-3 opponent, four opening plies (236 distinct openings; core's default two give 12, too
few for held-out games against deterministic searches), 2,400 SFT steps (measured: 600 steps
gave 21.5% legal moves and no win, 2,400 gave 88-98% legal and 69 of 100 games won against
random, 31 against depth 1), and one RL stage against mostly random moves (0.5-1) at lr 1e-4,
where its student wins games (Connect Four's student, 50 such updates: 83 -> 90 of 100 won
against random). Connect Four's RL likewise: its two stages against 0.2-0.7 and 0-0.25 of
depth 2 (20 updates each, lr 2e-5) left the student flat to worse (83.5% -> 76.0% wins
against random, 2026-12-06); from the 2,400-step student, 50 updates against 0.5-1 at 1e-4
took it from 83 to 90 of 100 games won against random (13 -> 9 against depth 1). The strong
Tic-Tac-Toe recipe stops at SFT (``rl_steps`` 0): its RL was measured to change nothing
(the exact figures identical after SFT and after each of two GRPO stages, 2026-12-02:
docs/recipe-history.md) with a student within 0.05 points of its teacher; ``--rl-steps``
still runs it. Wordle stops at SFT too: GRPO was measured not to help its student
(2026-12-06, the full plan, 12 updates of 32x8 games at lr 1e-4, 400 held-out answers,
greedy). With five invalid guesses allowed a game, each penalised (the lever that took the
reduced run's legal guesses from about 0.5 to 1.0), the well-formed guesses rose from 0.583
to 0.998 but the legal ones did not (0.446 -> 0.432: five letters, not a word), nor the
solved rate (7.2% -> 6.8%); under ``--constrained-decoding`` (every guess an allowed word)
SFT solved 9.5% and RL took it to 5.0%."""

QUICK: dict[str, Any] = {
    "teacher_games": 300,
    "sft_steps": 150,
    "hard_steps": 0,
    "rl_steps": 3,
    "eval_games": 40,
    "ladder_games": 10,
    "num_groups": 2,
    "num_generations": 4,
    "sampled": False,
}
"""``--quick``: a smoke run of every stage (a minute or two on 2 cores)."""

ONE_PLAYER_STAGES = "0-0"
"""``rl_stages`` of a one-player game left at the default: one GRPO stage (no opponent, so
no random-move range to stage)."""

TEACHERS = ("strong", "weak")
"""``--teacher``: whose games SFT imitates (see ``RecipeSettings.teacher``)."""

WEAK: dict[str, Any] = {
    "sft_steps": 600,
    "hard_steps": 0,
    "rl_steps": 150,
    "rl_stages": "0-0.25,0-1",
    "rl_stage_learning_rates": "1e-4,5e-5",
    "rl_group": "game",
    "rl_learning_rate": 1e-4,
    "eval_every": 25,
}
"""``--teacher weak``: the settings that differ from the strong teacher's recipe."""


@dataclass
class RecipeSettings:
    """Settings of ``gamebridge train recipe`` (0 / "" / "auto": the game's plan)."""

    game: str = "tictactoe"
    """The game (its plan in :data:`PLANS`)."""
    teacher: str = "strong"
    """``strong``: ``core.teacher`` (minimax-optimal, ties toward the best chance against
    imperfect play); ``weak``: the seed's imperfect teacher (``core.teacher.weak_teacher``:
    minimax depth 1 with 5% random moves), which RL has to go beyond (:data:`WEAK`)."""
    seed: int = 0
    """Seed of the teacher games, the model, SFT, GRPO and the held-out tasks."""
    quick: bool = False
    """A smoke run of every stage (:data:`QUICK`; a minute or two)."""
    teacher_games: int = 0
    """Sampled teacher games (0: the game's plan)."""
    unique_repeats: int = 2
    """Times each unique decision is repeated in the SFT rows (plus every decision once)."""
    sft_steps: int = 0
    """SFT optimizer steps (0: the game's plan)."""
    sft_batch_size: int = 64
    """SFT rows per step."""
    sft_learning_rate: float = 2e-3
    """SFT peak learning rate (cosine decay)."""
    sft_loss: str = "sequence"
    """``sequence`` (whole sequence, measured better) or ``assistant`` (replies only)."""
    sft_assistant_weight: float = 0.0
    """With ``sequence`` loss: add this many times the replies' mean token loss."""
    hard_steps: int = -1
    """Steps of the hard-example SFT phase after SFT (-1: the game's plan; 0: none): the
    replies' loss only, on the SFT rows plus every trained decision the student's greedy
    reply gets wrong, ``hard_repeats`` times. For a student that already fits: from the
    1,600-step student (48 of 1,614 teacher boards wrong) 400 steps took it to 6 wrong;
    after 200 steps (1,098 wrong) 20 steps made it worse (1,173), so ``--quick`` has none."""
    hard_repeats: int = 9
    """Times each decision the student gets wrong is added to the hard phase's rows."""
    hard_learning_rate: float = 1e-4
    """Peak learning rate of the hard phase (cosine decay)."""
    exhaustive: str = "auto"
    """``yes``/``no``/``auto``: add the teacher's games against an exhaustive opponent
    (every reply, both sides; Tic-Tac-Toe's ``auto`` is yes) to the sampled games."""
    vocab_size: int = 512
    """The locally trained tokenizer's largest vocabulary."""
    rl_stages: str = "0.2-0.7,0-0.25"
    """Random-move probability ranges, one GRPO stage each. A one-player game (Wordle) has
    no opponent, so the ranges mean nothing there: its default is one stage
    (:data:`ONE_PLAYER_STAGES`), and its stages are labelled ``RL1``, ``RL2``, ... only."""
    rl_steps: int = -1
    """GRPO steps per stage (-1: the game's plan; 0: no RL)."""
    num_groups: int = 32
    """GRPO groups per update (tasks spread over the stage's random-move range): with
    ``num_generations`` 8, 256 games an update, the seed course's batch."""
    num_generations: int = 8
    """Games per GRPO group (each group one task)."""
    rl_group: str = "game"
    """What one GRPO group compares (``TextRollout(group=...)``): ``game``:
    ``num_generations`` games of one task, ``rl_decisions_per_game`` decisions of each,
    every decision scored with its game's reward; ``position``: replies sampled at one
    position of the model's greedy game, each played on greedily to the end, so the
    group's advantage is that decision's (measured worse here: ``gamebridge train
    levers``)."""
    rl_decisions_per_game: int = 4
    """Decisions of each game GRPO trains on (``TextRollout(decisions_per_game=...)``;
    the group then has ``num_generations`` x this many samples). Measured from a weak
    start at 0.643 non-loss vs optimal (40 steps of 8x8 games against 0-0.25, 400
    held-out games, one seed): one decision a game 0.615 / 0.878 / 0.378 at lr 2e-5 /
    5e-5 / 1e-4, four decisions 0.728 / 0.758 / 0.648; one decision at 5e-5 from the
    recipe's own weak start (0.728) went to 0.700. Four gain at every rate tried, one
    swings from -0.27 to +0.23: four is the default."""
    loss_type: str = "cispo"
    """TRL's GRPOConfig.loss_type (cispo: the seed's loss; grpo, dapo, dr_grpo, ...)."""
    epsilon_high: float = 5.0
    """The upper clip (cispo's suggested 5)."""
    rl_learning_rate: float = 2e-5
    """GRPO learning rate, constant (the weak teacher's recipe: 1e-4)."""
    rl_stage_learning_rates: str = ""
    """Comma-separated learning rates, one per RL stage (empty: ``rl_learning_rate`` for
    every stage)."""
    temperature: float = 1.0
    """GRPO sampling temperature."""
    explore_epsilon: float = 0.0
    """Epsilon-greedy exploration in the GRPO games: each decision is, with this chance, a
    uniformly drawn legal move instead of the model's sampled reply
    (``TextRollout(explore_epsilon=...)``)."""
    constrained_decoding: bool = False
    """Constrained decoding, an option: the model's replies restricted to the legal moves
    core lists (``core.players.legal_replies``; ``rollouts.model.constrained``), in every
    evaluation (greedy, sampled, ladder, exact) and in the GRPO games; SFT and the
    hard-example phase are unchanged. The table says so: legal-move rates then say nothing
    about the model itself."""
    rl_max_invalid_moves: int = 0
    """Invalid replies allowed per GRPO game (0: the first forfeits)."""
    eval_games: int = 400
    """Held-out games per opponent (sides alternate) of Tic-Tac-Toe and Wordle (the other
    two-player games play ``ladder_games`` a rung instead). A sample: a student that plays exactly
    as well as Tic-Tac-Toe's teacher expects 95.56% wins against random, with one standard
    error of a point at 400 games; games small enough also get the exact figure
    (:func:`exact_evaluation`). 1,000 games took the recipe to 15.5 minutes."""
    ladder_games: int = 200
    """Held-out games per rung of the ladder (two-player games not evaluated exactly:
    Connect Four, Othello; ``rollouts.training.recipe.ladder``), sides alternating: the
    teacher's and every stage's (greedy, and sampled with ``sampled``). 200 games give an
    interval of about +-7 points at a 50% win rate."""
    ladder_rungs: str = ""
    """Comma-separated names of the ladder's rungs to play (``random,minimax:1``; empty:
    every rung, ``rollouts.training.recipe.ladder.rungs``). Against the deeper alpha-beta
    rungs a whole game costs the opponent's searches: the reduced Othello run of
    ``tests/trl/test_reduced_othello.py``, its games played out (constrained decoding), keeps
    random and depth 1."""
    sampled: bool = True
    """Also evaluate sampled play (at ``eval_temperature``)."""
    eval_every: int = 0
    """Exact evaluation every this many GRPO updates inside each RL stage (0: after each
    stage only; games small enough to enumerate): the learning curve in the table."""
    eval_temperature: float = 1.0
    """Temperature of the sampled evaluation."""
    hidden_size: int = 0
    """Model width (0: :data:`MODEL_CONFIG`; the intermediate size is three times it)."""
    num_layers: int = 0
    """Model depth (0: :data:`MODEL_CONFIG`)."""
    threads: int = 1
    """Torch threads (1: on a shared, overloaded machine a second thread mostly spins)."""
    output_dir: str = ""
    """Default ``runs/recipe-<game>`` (``-quick`` appended in quick mode)."""
    docs: str = "auto"
    """File whose recipe markers get the table (auto: docs/trl.md on full runs)."""
    progress: bool = False
    """Progress bars for SFT and GRPO."""


def resolve(s: RecipeSettings) -> RecipeSettings:
    """The settings with the game's plan and quick mode filled in."""
    plan = PLANS.get(s.game)
    if plan is None:
        raise ValueError(f"the recipe knows {sorted(PLANS)}, not {s.game!r}")
    if s.teacher not in TEACHERS:
        raise ValueError(f"teacher must be one of {TEACHERS}, not {s.teacher!r}")
    if s.teacher == "weak" and one_player(s.game):
        raise ValueError("the weak teacher needs a two-player game")
    values = asdict(s)
    if s.teacher == "weak":
        stages_given = values["rl_stages"] != RecipeSettings().rl_stages
        for key, value in WEAK.items():
            if key == "rl_stage_learning_rates" and stages_given:
                continue  # the weak recipe's rates are for its own stages
            if values[key] == getattr(RecipeSettings(), key):
                values[key] = value
    if s.teacher == "strong":
        for key, value in plan.settings.items():
            if values[key] == getattr(RecipeSettings(), key):
                values[key] = value
    if one_player(s.game) and values["rl_stages"] == RecipeSettings().rl_stages:
        values["rl_stages"] = ONE_PLAYER_STAGES
    if s.quick:
        for key, value in QUICK.items():
            if values[key] == getattr(RecipeSettings(), key):
                values[key] = value
    for key in ("teacher_games", "sft_steps"):
        if not values[key]:
            values[key] = getattr(plan, key)
    if values["rl_steps"] < 0:
        values["rl_steps"] = plan.rl_steps
    if values["hard_steps"] < 0:
        values["hard_steps"] = plan.hard_steps
    if not values["output_dir"]:
        values["output_dir"] = f"runs/recipe-{run_name(s)}" + ("-quick" if s.quick else "")
    if values["docs"] == "auto":
        values["docs"] = "" if s.quick else "docs/trl.md"
    if values["sft_loss"] not in ("sequence", "assistant"):
        raise ValueError(f"sft_loss must be sequence or assistant, not {values['sft_loss']!r}")
    if values["exhaustive"] == "auto":
        values["exhaustive"] = "yes" if s.game == "tictactoe" and s.teacher == "strong" else "no"
    if values["exhaustive"] not in ("yes", "no"):
        raise ValueError(f"exhaustive must be yes, no or auto, not {values['exhaustive']!r}")
    if values["exhaustive"] == "yes" and (
        plan.opening_plies or one_player(s.game) or s.teacher != "strong"
    ):
        raise ValueError(
            "exhaustive teacher games need the strong teacher and a two-player game "
            "without an opening"
        )
    if values["rl_group"] not in ("position", "game"):
        raise ValueError(f"rl_group must be position or game, not {values['rl_group']!r}")
    if values["rl_decisions_per_game"] < 1:
        raise ValueError(
            f"rl_decisions_per_game must be >= 1, not {values['rl_decisions_per_game']!r}"
        )
    if not 0.0 <= values["explore_epsilon"] <= 1.0:
        raise ValueError(f"explore_epsilon must be in [0, 1], not {values['explore_epsilon']!r}")
    if values["sft_assistant_weight"] < 0:
        raise ValueError(
            f"sft_assistant_weight must be >= 0, not {values['sft_assistant_weight']!r}"
        )
    if values["ladder_games"] < 2:
        raise ValueError(f"ladder_games must be >= 2 (both sides), not {values['ladder_games']!r}")
    ladder_names(RecipeSettings(**values))
    stages = parse_stages(values["rl_stages"])
    rates = stage_learning_rates(RecipeSettings(**values))
    if len(rates) != len(stages):
        raise ValueError(
            f"rl_stage_learning_rates names {len(rates)} rates for {len(stages)} stages"
        )
    return RecipeSettings(**values)


def stage_learning_rates(s: RecipeSettings) -> list[float]:
    """The learning rate of each RL stage (``rl_stage_learning_rates``, else
    ``rl_learning_rate`` for each)."""
    if not s.rl_stage_learning_rates.strip():
        return [s.rl_learning_rate] * len(parse_stages(s.rl_stages))
    try:
        rates = [float(x) for x in s.rl_stage_learning_rates.split(",")]
    except ValueError:
        raise ValueError(
            f"rl_stage_learning_rates must be numbers like '1e-4,5e-5', "
            f"not {s.rl_stage_learning_rates!r}"
        ) from None
    if any(r <= 0 for r in rates):
        raise ValueError(f"rl_stage_learning_rates must be > 0: {s.rl_stage_learning_rates!r}")
    return rates


def ladder_names(s: RecipeSettings) -> tuple[str, ...] | None:
    """The ladder's rungs ``ladder_rungs`` names, in the ladder's order (None: every rung);
    a name the game's ladder lacks is a ``ValueError``."""
    chosen = [n.strip() for n in s.ladder_rungs.split(",") if n.strip()]
    if not chosen:
        return None
    from rollouts.training.recipe.ladder import rungs

    known = [r.name for r in rungs(s.game)]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise ValueError(f"ladder_rungs: {s.game}'s ladder has {known}, not {unknown}")
    return tuple(n for n in known if n in chosen)


def run_name(s: RecipeSettings) -> str:
    """The run's name: the game, ``-weak`` for the weak teacher (output folder, docs markers)."""
    return s.game + ("-weak" if s.teacher == "weak" else "")


def one_player(game: str) -> bool:
    """A one-player game (Wordle: solved or not, no sides, only wins kept): core's spec."""
    from core.games import make_game

    return make_game(game).spec.num_players == 1


def is_ladder_game(game: str) -> bool:
    """Whether the recipe evaluates ``game`` by the ladder (``recipe.ladder``): two
    players, not exact."""
    return not one_player(game) and not PLANS[game].exact


def kept_results(game: str) -> set[str]:
    """The teacher games SFT keeps (the seed's filter): won or drawn; won (solved) alone
    in a one-player game."""
    return {"win"} if one_player(game) else {"win", "draw"}


def model_config(s: RecipeSettings) -> dict[str, Any]:
    """:data:`MODEL_CONFIG` with the settings' size overrides."""
    config = dict(MODEL_CONFIG)
    if s.hidden_size:
        config["hidden_size"] = s.hidden_size
        config["intermediate_size"] = 3 * s.hidden_size
    if s.num_layers:
        config["num_hidden_layers"] = s.num_layers
    return config


def parse_stages(text: str) -> list[tuple[float, float]]:
    """``"0.2-0.7,0-0.25"`` -> ``[(0.2, 0.7), (0.0, 0.25)]``."""
    stages = []
    for part in text.split(","):
        if not part.strip():
            continue
        lo, sep, hi = part.strip().partition("-")
        try:
            a, b = float(lo), float(hi)
        except ValueError:
            raise ValueError(f"bad RL stage {part!r}: expected LOW-HIGH, e.g. 0.2-0.7") from None
        if not sep or not 0.0 <= a <= b <= 1.0:
            raise ValueError(f"bad RL stage {part!r}: need 0 <= LOW <= HIGH <= 1")
        stages.append((a, b))
    return stages
