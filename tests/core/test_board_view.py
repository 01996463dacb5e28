"""``Game.board_view``: the structured board and cell-to-move mapping the play page
draws, for every registered game; and ``MoveListOpponent`` / ``Episode(opponent=...)``,
the way a person plays the other side."""

from __future__ import annotations

import random

import pytest

from core import Episode, IllegalMoveError, list_games, make_game
from core.games.base import BoardView
from core.opponents import MoveListOpponent, NoMoveLeftError
from core.rng import derive_rng


def _playout(name: str, seed: int) -> list[object]:
    """Every state of one random game of ``name``."""
    game = make_game(name)
    rng = random.Random(seed)
    state = game.initial_state(derive_rng(seed, "initial", name))
    states = [state]
    while not game.is_terminal(state):
        state = game.apply(state, rng.choice(list(game.legal_moves(state))))
        states.append(state)
    return states


@pytest.mark.parametrize("name", list_games())
def test_every_game_has_a_board_view_that_maps_cells_to_legal_moves(name: str) -> None:
    game = make_game(name)
    for seed in range(4):
        for state in _playout(name, seed):
            view = game.board_view(state)
            assert isinstance(view, BoardView)
            assert view.shape == game.spec.board_shape
            assert all(len(row) == view.shape[1] for row in view.cells)
            assert [len(r) for r in view.marks] == [len(r) for r in view.cells]
            over = game.is_terminal(state)
            assert view.to_play == (None if over else game.to_play(state))
            if view.typed:
                assert view.moves == () and view.other_moves == ()
                continue
            texts = [t for t, _ in view.moves] + list(view.other_moves)
            assert sorted(texts) == sorted(game.legal_moves_text(state))
            seen: set[tuple[int, int]] = set()
            for text, cells in view.moves:
                assert cells, f"{text} has no cell"
                for r, c in cells:
                    assert 0 <= r < view.shape[0] and 0 <= c < view.shape[1]
                    assert (r, c) not in seen, f"cell {(r, c)} plays two moves"
                    seen.add((r, c))
                    assert view.move_at(r, c) == text
                game.parse_move(state, text)  # legal: does not raise
            d = view.to_dict()
            assert d["click"] == {f"{r},{c}": t for t, cs in view.moves for r, c in cs}


def test_tictactoe_view_is_the_grid() -> None:
    game = make_game("tictactoe")
    state = game.apply(game.apply(game.initial_state(), 4), 0)
    view = game.board_view(state)
    assert view.cells[1][1] == "X" and view.marks[1][1] == "p0"
    assert view.cells[0][0] == "O" and view.marks[0][0] == "p1"
    assert view.move_at(1, 1) is None and view.move_at(2, 2) == "8"


def test_connect_four_column_click_and_gravity() -> None:
    game = make_game("connect_four")
    state = game.play(game.play(game.initial_state(), "4"), "4")
    view = game.board_view(state)
    assert view.cells[5][3] == "X" and view.cells[4][3] == "O" and view.cells[3][3] == ""
    assert {view.move_at(r, 3) for r in range(6)} == {"4"}
    assert view.col_labels == tuple("1234567")


def test_othello_start_and_pass() -> None:
    game = make_game("othello")
    view = game.board_view(game.initial_state())
    # d4 and e5 White, e4 and d5 Black (row 0 is row 1, column 0 is a)
    assert (view.cells[3][3], view.cells[4][4], view.cells[3][4], view.cells[4][3]) == (
        "W",
        "W",
        "B",
        "B",
    )
    assert view.move_at(2, 3) == "d3" and view.other_moves == ()
    # A position where Black must pass (found in a random game).
    passing = game.from_discs(black=17996847630378180540, white=449896443331371072, to_play=0)
    assert game.legal_moves_text(passing) == ["pass"]
    pview = game.board_view(passing)
    assert pview.moves == () and pview.other_moves == ("pass",) and pview.to_play == 0


def test_nim_click_takes_the_stone_and_those_right_of_it() -> None:
    game = make_game("nim")
    view = game.board_view(game.initial_state())
    assert view.cells[2] == ("|",) * 5 and view.cells[0] == ("|",) * 3 + ("", "")
    assert view.move_at(2, 0) == "3:5" and view.move_at(2, 4) == "3:1"
    assert view.move_at(0, 3) is None  # no stone there


def test_wordle_view_shows_guesses_and_feedback_never_the_answer() -> None:
    game = make_game("wordle")
    state = game.initial_state(random.Random(3))
    state = game.play(state, "raise")
    view = game.board_view(state)
    assert view.typed and view.cells[0] == tuple("RAISE") and view.cells[1] == ("",) * 5
    assert set(view.marks[0]) <= {"green", "yellow", "gray"}
    answer = state.answer.upper()
    assert all(answer not in "".join(row) for row in view.cells[1:])


# --- a person as the opponent ----------------------------------------------------------


def test_move_list_opponent_plays_its_moves_then_asks_for_more() -> None:
    task = {"game": "tictactoe", "seed": 1, "model_player": 0}
    episode = Episode(task, opponent=MoveListOpponent(["0"]))
    episode.reset()
    result = episode.step("<move>4</move>")
    assert result.info["opponent_moves"] == ["0"]
    with pytest.raises(NoMoveLeftError) as caught:
        episode.step("<move>8</move>")
    game = make_game("tictactoe")
    assert game.to_play(caught.value.state) == 1  # the position where the person moves
    # Replaying with the next move added goes on from there.
    replayed = Episode.replay(
        task, ["<move>4</move>", "<move>8</move>"], opponent=MoveListOpponent(["0", "2"])
    )
    assert [e["opponent_moves"] for e in replayed.events] == [["0"], ["2"]]
    assert replayed.task.opponent == "minimax"  # the task is untouched; the opponent is not its


def test_move_list_opponent_moves_first_and_rejects_illegal_text() -> None:
    task = {"game": "connect_four", "seed": 0, "model_player": 1}
    with pytest.raises(NoMoveLeftError):
        Episode(task, opponent=MoveListOpponent()).reset()
    episode = Episode(task, opponent=MoveListOpponent(["4"]))
    assert "Opponent played: 4." in episode.reset()
    assert episode.opponent_first == ["4"]
    bad = Episode({"game": "tictactoe", "model_player": 0}, opponent=MoveListOpponent(["4"]))
    bad.reset()
    with pytest.raises(IllegalMoveError):
        bad.step("<move>4</move>")  # the person's 4 is taken by then


def test_one_player_game_ignores_an_opponent() -> None:
    episode = Episode({"game": "wordle"}, opponent=MoveListOpponent(["raise"]))
    assert episode.opponent is None


def test_no_move_left_error_names_the_move_the_seat_just_played() -> None:
    episode = Episode({"game": "tictactoe", "model_player": 0}, opponent=MoveListOpponent())
    episode.reset()
    with pytest.raises(NoMoveLeftError) as caught:
        episode.step("<move>4</move>")
    assert caught.value.move == "4"
    with pytest.raises(NoMoveLeftError) as first:
        Episode({"game": "nim", "model_player": 1}, opponent=MoveListOpponent()).reset()
    assert first.value.move is None


@pytest.mark.parametrize(
    ("game", "moves", "line"),
    [
        ("tictactoe", "0 3 1 4 2", [(0, 0), (0, 1), (0, 2)]),
        ("tictactoe", "2 0 4 1 6", [(0, 2), (1, 1), (2, 0)]),
        ("connect_four", "1 2 1 2 1 2 1", [(5, 0), (4, 0), (3, 0), (2, 0)]),
        ("connect_four", "1 1 2 2 3 3 4", [(5, 0), (5, 1), (5, 2), (5, 3)]),
        # a rising diagonal for X: (5,0) (4,1) (3,2) (2,3)
        ("connect_four", "1 2 2 3 3 4 3 4 4 7 4", [(5, 0), (4, 1), (3, 2), (2, 3)]),
    ],
)
def test_a_finished_games_winning_line_is_highlighted(
    game: str, moves: str, line: list[tuple[int, int]]
) -> None:
    g = make_game(game)
    state = g.initial_state()
    for text in moves.split():
        assert g.board_view(state).highlight == ()  # nothing before the win
        state = g.play(state, text)
    assert g.is_terminal(state)
    view = g.board_view(state)
    assert sorted(view.highlight) == sorted(line)
    assert all(view.marks[r][c] == "p0" for r, c in view.highlight)
    assert view.to_dict()["highlight"] == [list(c) for c in view.highlight]
