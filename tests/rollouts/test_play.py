"""``gamebridge play`` without a browser: the sessions (every turn through
core.Episode, equal to core's replay of the same moves), the HTTP API (4xx with a
message for bad requests, isolation, the cap and the idle timeout), the replay of
records and the terminal mode."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from core.episode import Episode
from core.games import list_games, make_game
from core.opponents import MoveListOpponent
from core.players import ScriptedPlayer
from rollouts.play.session import GameSession, PlayError, ScriptedModel, Setup
from rollouts.play.store import SessionStore

GAMES = list_games()


def _pick(view: dict[str, Any], rng: random.Random) -> str:
    if view["board"]["typed"]:
        return rng.choice(["raise", "crane", "slate", "adieu", "mount", "pious"])
    return rng.choice(view["legal_moves"])


def scripted_replay(
    task: dict[str, Any], person_moves: list[str], policy: str, seed: int
) -> Episode:
    """Core's replay of a game between the scripted model (in the seat) and a person
    who played ``person_moves``: the model's replies regenerated from the conversation."""
    player = ScriptedPlayer(policy, seed)
    replies: list[str] = []
    while True:
        episode = Episode(task, opponent=MoveListOpponent(person_moves))
        messages = [{"role": "system", "content": episode.system_prompt}]
        messages.append({"role": "user", "content": episode.reset()})
        for r in replies:
            messages.append({"role": "assistant", "content": r})
            messages.append({"role": "user", "content": episode.step(r).observation})
        if episode.done:
            return episode
        replies.append(player.reply(messages))


@pytest.mark.parametrize("game", GAMES)
def test_person_against_the_random_opponent_equals_core_replay(game: str) -> None:
    rng = random.Random(7)
    session = GameSession(Setup(game=game, opponent="random", seed=3, side=0))
    moves = []
    while not session.episode.done:
        move = _pick(session.view(), rng)
        moves.append(move)
        session.move(move)
    view = session.view()
    replayed = Episode.replay(view["task"], [{"move": m} for m in moves])
    assert view["trajectory"] == replayed.to_dict()
    assert view["result"] == replayed.result and view["reward"] == replayed.reward().to_dict()


@pytest.mark.parametrize("game", [g for g in GAMES if make_game(g).spec.num_players > 1])
def test_person_against_the_scripted_model_equals_core_replay(game: str) -> None:
    rng = random.Random(11)
    for side in (0, 1):
        session = GameSession(
            Setup(game=game, other="model", side=side, seed=5), ScriptedModel("minimax:1", 5)
        )
        moves = []
        while not session.episode.done:
            view = session.view()
            assert view["your_turn"]
            assert view["board"]["to_play"] == side
            move = _pick(view, rng)
            moves.append(move)
            session.move(move)
        view = session.view()
        assert view["task"]["model_player"] == 1 - side
        replayed = scripted_replay(view["task"], moves, "minimax:1", 5)
        assert view["trajectory"] == replayed.to_dict()


def test_watch_steps_the_model_against_the_opponent() -> None:
    setup = Setup(game="connect_four", mode="watch", side=0, opponent="minimax", depth=1, seed=2)
    session = GameSession(setup, ScriptedModel("minimax:2", 2))
    with pytest.raises(PlayError):
        session.move("4")  # watching: the person has no move
    while not session.episode.done:
        session.step()
    view = session.view()
    replies = [t["reply"] for t in view["turns"]]
    assert Episode.replay(view["task"], replies).to_dict() == view["trajectory"]
    with pytest.raises(PlayError) as over:
        session.step()
    assert over.value.status == 409


def test_a_typed_typo_costs_the_person_a_retry_as_it_would_a_model() -> None:
    session = GameSession(Setup(game="tictactoe", seed=1))
    session.move("nine")
    view = session.view()
    assert view["turns"][-1]["error"] == "invalid_move"
    assert view["invalid_left"] == view["max_invalid_moves"] - 1
    assert "rejected" in view["observation"]


def test_the_persons_illegal_move_against_a_model_is_refused_without_a_change() -> None:
    session = GameSession(Setup(game="tictactoe", other="model", side=1), ScriptedModel("random"))
    taken = session.view()["turns"][0]["move"]
    before = session.view()
    with pytest.raises(PlayError):
        session.move(taken)
    assert session.view() == before


def test_session_store_cap_and_idle_timeout() -> None:
    now = [0.0]
    store = SessionStore(cap=2, idle_seconds=10, clock=lambda: now[0])
    a = store.add(GameSession(Setup()))
    store.add(GameSession(Setup()))
    with pytest.raises(PlayError) as full:
        store.add(GameSession(Setup()))
    assert full.value.status == 429
    now[0] = 5.0
    store.get(a)  # touches a
    now[0] = 12.0  # b idle for 12 s: gone; a for 7 s: kept
    assert len(store) == 1 and store.get(a)
    store.add(GameSession(Setup()))
    now[0] = 100.0
    with pytest.raises(PlayError) as gone:
        store.get(a)
    assert gone.value.status == 404


# --- the HTTP API ----------------------------------------------------------------------


@pytest.fixture()
def client(tmp_path: Path) -> Any:
    from starlette.testclient import TestClient

    from rollouts.play.app import create_app

    runs = tmp_path / "runs"
    runs.mkdir()
    with TestClient(create_app(runs=[runs], cap=4), raise_server_exceptions=False) as c:
        c.runs = runs  # type: ignore[attr-defined]
        yield c


def test_api_plays_a_game_and_keeps_sessions_apart(client: Any) -> None:
    a = client.post("/api/sessions", json={"game": "tictactoe", "opponent": "random"}).json()
    b = client.post("/api/sessions", json={"game": "nim", "opponent": "random"}).json()
    assert a["id"] != b["id"]
    r = client.post(f"/api/sessions/{a['id']}/move", json={"move": "4"})
    assert r.status_code == 200 and r.json()["turns"][0]["move"] == "4"
    assert client.get(f"/api/sessions/{b['id']}").json()["turns"] == []
    assert client.delete(f"/api/sessions/{a['id']}").status_code == 200
    assert client.get(f"/api/sessions/{a['id']}").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("post", "/api/sessions", {"game": "chess"}, 400),
        ("post", "/api/sessions", {"game": "tictactoe", "depth": 99}, 422),
        ("post", "/api/sessions", {"game": "tictactoe", "side": 5}, 422),
        ("post", "/api/sessions", {"game": "nim", "mode": "watch", "policy": "genius"}, 400),
        ("post", "/api/sessions", {"game": "tictactoe", "model": "endpoint", "mode": "watch"}, 400),
        ("post", "/api/sessions", [1, 2], 422),
        ("get", "/api/sessions/nope", None, 404),
        ("post", "/api/sessions/nope/move", {"move": "4"}, 404),
        ("get", "/api/replay?file=../../etc/passwd", None, 404),
        ("get", "/api/replay?file=/etc/passwd", None, 404),
        ("get", "/static/../app.py", None, 404),
    ],
)
def test_api_bad_requests_get_a_4xx_with_a_message(
    client: Any, method: str, path: str, body: Any, status: int
) -> None:
    r = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == status, r.text
    assert r.json()["detail"]


def test_api_refuses_bad_bodies_and_moves(client: Any) -> None:
    sid = client.post("/api/sessions", json={"game": "tictactoe"}).json()["id"]
    assert client.post(f"/api/sessions/{sid}/move", content=b"{not json").status_code == 422
    big = client.post(f"/api/sessions/{sid}/move", json={"move": "x" * 100_000})
    assert big.status_code == 413 and big.json()["detail"]
    surrogate = client.post(
        f"/api/sessions/{sid}/move",
        content=b'{"move": "\\ud800"}',
        headers={"content-type": "application/json"},
    )
    assert surrogate.status_code == 400
    assert client.post(f"/api/sessions/{sid}/step").status_code == 409  # not watch mode
    for _ in range(4):
        client.post("/api/sessions", json={"game": "tictactoe"})
    full = client.post("/api/sessions", json={"game": "tictactoe"})
    assert full.status_code == 429 and "too many" in full.json()["detail"]


def test_api_replays_a_record_through_core(client: Any) -> None:
    from rollouts.drivers.base import RolloutRecord

    episode = Episode.replay({"game": "othello", "seed": 4, "depth": 1}, [])
    rng = random.Random(0)
    game = make_game("othello")
    while not episode.done:
        episode.step_move(rng.choice(game.legal_moves_text(episode.state)))
    traj = episode.to_dict()
    record = RolloutRecord("core", traj["task"], traj, traj["reward"], 0.0, 0.0, 1, 0)
    path = client.runs / "demo-x" / "othello-core.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(record.to_dict()) + "\n\n")
    listed = client.get("/api/runs").json()["files"]
    assert [f["name"] for f in listed] == ["runs/demo-x/othello-core.jsonl"]
    data = client.get("/api/replay", params={"file": str(path), "episode": 0}).json()
    assert data["verified"] and data["result"] == traj["result"]
    assert len(data["frames"]) == len(traj["events"]) + 1
    last = data["frames"][-1]
    assert last["board_text"] == traj["events"][-1]["board"]
    # A relative name works too; an episode out of range is a 404.
    assert (
        client.get("/api/replay", params={"file": "demo-x/othello-core.jsonl"}).status_code == 200
    )
    assert client.get("/api/replay", params={"file": str(path), "episode": 3}).status_code == 404
    (client.runs / "bad.jsonl").write_text("[1]\n[2]\n")  # a bad line, not just a torn last one
    assert client.get("/api/replay", params={"file": "bad.jsonl"}).status_code == 400


def test_terminal_mode_plays_a_game() -> None:
    import argparse

    from rollouts.play.terminal import play

    args = argparse.Namespace(
        game="tictactoe", side=0, against="opponent", opponent="random", depth=1, rmp=0.0,
        policy="minimax:2", seed=0, base_url=None, model=None, api_key=None,
    )  # fmt: skip
    moves = "\n".join(str(c) for c in range(9)) + "\n"
    out = io.StringIO()
    assert play(args, stdin=io.StringIO("nine\n" + moves), stdout=out) == 0
    text = out.getvalue()
    assert "Game over:" in text and "reward" in text
    assert "rejected" in text  # "nine" was judged by core and cost a retry


def test_cli_play_help_and_bad_setup(capsys: Any) -> None:
    from rollouts.cli import main

    with pytest.raises(SystemExit) as e:
        main(["play", "--help"])
    assert e.value.code == 0
    assert "--terminal" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:  # checked while parsing, as eval's --game
        main(["play", "--terminal", "--game", "chess"])
    assert e.value.code == 2
    assert main(["play", "--base-url", "http://127.0.0.1:9/v1"]) == 2


def test_a_dead_model_endpoint_is_a_502_with_a_message(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from rollouts.play.app import Endpoint, create_app

    dead = Endpoint("http://127.0.0.1:9/v1", "nobody")  # port 9 (discard): nothing listens
    with TestClient(create_app(runs=[tmp_path], endpoint=dead)) as c:
        assert [m["id"] for m in c.get("/api/config").json()["models"]] == ["scripted", "endpoint"]
        r = c.post(
            "/api/sessions", json={"game": "tictactoe", "mode": "watch", "model": "endpoint"}
        )
        assert r.status_code == 200  # the model has not been asked yet
        step = c.post(f"/api/sessions/{r.json()['id']}/step")
        assert step.status_code == 502 and "endpoint failed" in step.json()["detail"]


@pytest.mark.server
def test_an_openai_compatible_endpoint_plays_like_the_scripted_model_in_process() -> None:
    """The policy server is an OpenAI-compatible endpoint backed by the same scripted
    player: a game against it over HTTP equals the same game in-process."""
    from rollouts.model.policy_server import serve_in_thread
    from rollouts.play.session import EndpointModel

    setup = Setup(game="nim", other="model", side=1, seed=9)
    with serve_in_thread("minimax:2", 9) as url:
        remote = GameSession(setup, EndpointModel(url, "scripted"))
        local = GameSession(setup, ScriptedModel("minimax:2", 9))
        rng = random.Random(2)
        while not remote.episode.done:
            move = _pick(remote.view(), rng)
            remote.move(move)
            local.move(move)
    assert remote.view()["trajectory"] == local.view()["trajectory"]
    assert remote.view()["model"].startswith("scripted at http://127.0.0.1:")


def _terminal_args(**kw: Any) -> Any:
    import argparse

    base = dict(
        game="tictactoe", side=0, against="opponent", opponent=None, depth=1, rmp=0.0,
        policy="minimax:2", seed=0, base_url=None, model=None, api_key=None,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_terminal_forfeit_says_why_and_shows_no_next_turn() -> None:
    from rollouts.play.terminal import play

    out = io.StringIO()
    assert play(_terminal_args(), stdin=io.StringIO("zz\n" * 4), stdout=out) == 0
    text = out.getvalue()
    tail = text[text.rindex("your move>") :]
    assert "You forfeit the game: 4 invalid replies, one more than the 3 allowed." in tail
    assert "to move" not in tail and "Game over: you lost (forfeit)." in tail


def test_terminal_reward_line_adds_up_from_weighted_parts() -> None:
    import re

    from rollouts.play.terminal import play

    out = io.StringIO()
    play(_terminal_args(), stdin=io.StringIO("zz\n" * 4), stdout=out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("Your reward"))
    total, parts = re.fullmatch(r"Your reward (\S+) = (.*)\.", line).groups()  # type: ignore[union-attr]
    terms = re.findall(r"\w+ (\S+) x (\S+)", parts)
    assert len(terms) == 4
    assert abs(sum(float(w) * float(v) for w, v in terms) - float(total)) < 1e-3


def test_terminal_wordle_reveals_the_answer_after_a_loss() -> None:
    from rollouts.play.terminal import play

    guesses = "\n".join(["fuzzy", "jazzy", "pizza", "buzzy", "dizzy", "fizzy"]) + "\n"
    out = io.StringIO()
    play(_terminal_args(game="wordle", seed=1), stdin=io.StringIO(guesses), stdout=out)
    text = out.getvalue()
    session = GameSession(Setup(game="wordle", seed=1))
    answer = session.episode.state.answer
    assert f"The answer was {answer.upper()}." in text and "you lost" in text


def _as_a_terminal_starts_it() -> None:
    """In the child, before it runs: SIGINT delivered and at its default, as a terminal's
    shell leaves it. The test process may not: a library loaded by an earlier test in the
    same worker (Ray's driver) can leave SIGINT blocked or ignored, and a child inherits
    both, so its Ctrl-C would never arrive."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_terminal_ctrl_c_stops_without_a_traceback() -> None:
    import signal
    import subprocess
    import sys as _sys

    r = subprocess.Popen(
        [_sys.executable, "-m", "rollouts.cli", "play", "--terminal"],
        preexec_fn=_as_a_terminal_starts_it,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert r.stdout is not None
    shown = ""
    while "your move>" not in shown:  # the game waits for a move: press Ctrl-C
        line = r.stdout.readline()
        assert line, r.stderr.read() if r.stderr else ""
        shown += line
    r.send_signal(signal.SIGINT)
    # wait with stdin still open: communicate() would close it, and on a loaded machine
    # the game could read that end of input (a normal exit 0) before the signal lands
    r.wait(timeout=60)
    out, err = r.communicate(timeout=10)
    assert r.returncode == 130, err
    assert "Traceback" not in shown + out + err and out.rstrip().endswith("stopped.")


def test_terminal_plays_a_bridged_openspiel_game() -> None:
    pytest.importorskip("pyspiel")
    from rollouts.play.terminal import play

    session = GameSession(Setup(game="openspiel:tic_tac_toe", opponent="random", seed=2))
    moves = []
    rng = random.Random(1)
    while not session.episode.done:
        move = rng.choice(session.view()["board"]["other_moves"])
        moves.append(move)
        session.move(move)
    assert session.view()["board"]["generic"] is True
    out = io.StringIO()
    args = _terminal_args(game="openspiel:tic_tac_toe", opponent="random", seed=2)
    assert play(args, stdin=io.StringIO("\n".join(moves) + "\n"), stdout=out) == 0
    text = out.getvalue()
    assert "Game over: you" in text and "Legal moves: x(0,0) | x(0,1)" in text


def test_cli_play_terminal_openspiel_is_not_an_unknown_game() -> None:
    pytest.importorskip("pyspiel")
    import subprocess
    import sys as _sys

    r = subprocess.run(
        [
            _sys.executable,
            "-m",
            "rollouts.cli",
            "play",
            "--terminal",
            "--game",
            "openspiel:tic_tac_toe",
        ],
        input="x(1,1)\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert r.returncode == 0, r.stderr
    assert "against mcts" in r.stdout and "Opponent played:" in r.stdout
    assert r.stdout.rstrip().endswith("stopped.")


def test_the_result_against_a_model_is_the_persons() -> None:
    """The person plays X against the model; the view's ``your_result`` is the
    person's (the episode's result is the model's, in the seat)."""
    session = GameSession(
        Setup(game="tictactoe", other="model", side=0, seed=1), ScriptedModel("minimax:4", 1)
    )
    for move in ("0", "1", "3", "2", "5", "6", "7", "8"):  # a poor game: the model wins
        if session.episode.done:
            break
        if move in session.view()["legal_moves"]:
            session.move(move)
    while not session.episode.done:
        session.move(session.view()["legal_moves"][0])
    view = session.view()
    flip = {"win": "loss", "loss": "win", "draw": "draw"}
    assert view["your_result"] == flip[str(view["result"])]
    assert view["reward_of"] == "model"


def test_the_replay_list_holds_records_only_and_a_bad_file_is_one_plain_line(client: Any) -> None:
    from core.tasks import make_tasks
    from rollouts.training.tiny import scripted_records

    (record,) = scripted_records(make_tasks(1, seed=2), "random", tools=False)
    (client.runs / "run.jsonl").write_text(json.dumps(record.to_dict()) + "\n")
    (client.runs / "export").mkdir()
    (client.runs / "export" / "data.jsonl").write_text('{"messages": [], "prompt": "x"}\n')
    (client.runs / "notes.jsonl").write_text('{"hello": 1}\n')
    listed = [f["name"] for f in client.get("/api/runs").json()["files"]]
    assert listed == ["runs/run.jsonl"]
    bad = client.get("/api/replay", params={"file": "export/data.jsonl"})
    assert bad.status_code == 400
    detail = bad.json()["detail"]
    assert detail.startswith("data.jsonl is not a records file") and "trajectory" not in detail


@pytest.mark.parametrize("game", ["openspiel:kuhn_poker", "openspiel:phantom_ttt"])
@pytest.mark.parametrize("other", ["opponent", "model"])
def test_a_person_sees_only_their_own_view_of_a_hidden_information_game(
    game: str, other: str
) -> None:
    """As core shows each seat its own view: the page shows the person their own
    observation, never the god's-eye board (the other's card, the other's marks), nor
    the model's view, nor moves the game keeps hidden; all revealed at the end."""
    pytest.importorskip("pyspiel")
    bridged = make_game(game)
    rng = random.Random(4)
    for side in (0, 1):
        model = ScriptedModel("random", 3) if other == "model" else None
        session = GameSession(
            Setup(game=game, other=other, side=side, seed=6, opponent="random"), model
        )
        secrets = 0
        while not session.episode.done:
            view = session.view()
            state = session.waiting if session.waiting is not None else session.episode.state
            own = bridged.observation(state, side)
            assert view["board_text"] == own
            god = bridged.render(state)
            secrets += god != own
            assert god not in json.dumps(view)
            if other == "model":
                assert view["observation"] is None
            if not bridged.spec.public_moves:
                assert view["last_move"] is None
                assert view["replies"] == [] or other == "opponent"  # the person's own
                assert all(t["move"] is None or t["who"] == "you" for t in view["turns"])
            session.move(_pick(view, rng))
        assert secrets, "the games met no position with anything hidden: the check proves nothing"
        end = session.view()
        assert end["board_text"] == bridged.render(session.episode.state)


@pytest.mark.parametrize("game", ["tictactoe", "openspiel:kuhn_poker"])
def test_watch_the_model_against_itself_each_seat_from_its_own_view(game: str) -> None:
    """Self-play on the page: each step is one turn of the seat core says is to move,
    the model answering from that seat's own conversation; the game equals core's
    two-seat episode with the same player keeping one conversation per seat."""
    if game.startswith("openspiel:"):
        pytest.importorskip("pyspiel")
    setup = Setup(game=game, mode="watch", other="model", seed=4)
    session = GameSession(setup, ScriptedModel("noisy:0.3", 2))
    asked: list[list[dict[str, Any]]] = []
    reply = session.model.reply  # type: ignore[union-attr]
    session.model.reply = lambda messages: asked.append(messages) or reply(messages)  # type: ignore[union-attr]
    while not session.episode.done:
        session.step()
    view = session.view()
    assert view["task"]["seats"] == "outside,outside" and view["opponent"] == "the model itself"
    reference = Episode(view["task"])
    reference.reset()
    chats: dict[int, list[dict[str, Any]]] = {}
    player = ScriptedPlayer("noisy:0.3", 2)
    for messages in asked:
        seat = reference.to_move
        assert seat is not None
        chat = chats.setdefault(
            seat, [{"role": "system", "content": reference.system_prompt_for(seat)}]
        )
        chat.append({"role": "user", "content": reference.observation_for(seat)})
        assert messages == chat  # the seat's own conversation, nothing of the other's
        text = player.reply(chat)
        chat.append({"role": "assistant", "content": text})
        reference.step(text)
    assert reference.done and view["trajectory"] == reference.to_dict()
    assert {t["who"] for t in view["turns"]} == {
        f"model ({name})" for name in make_game(game).spec.player_names
    }


# --- a trained checkpoint as the model (--model-path) ------------------------------------


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny recipe-style checkpoint of Connect Four (untrained: the recipe's tokenizer
    and chat template, random weights), saved as the recipe saves one."""
    pytest.importorskip("transformers")
    from core.tasks import make_tasks
    from core.teacher import make_teacher
    from rollouts.training.recipe import PLANS, decisions, play_teacher, sft_rows
    from rollouts.training.tiny import (
        DECISION_CHAT_TEMPLATE,
        build_model,
        build_tokenizer,
        save_tiny,
    )

    games = play_teacher(make_teacher("connect_four"), make_tasks(2, seed=1, game="connect_four"))
    rows = sft_rows(decisions(games, {"win", "draw", "loss"}), 1, 0)
    tokenizer = build_tokenizer(rows, 300, DECISION_CHAT_TEMPLATE)
    model = build_model(
        tokenizer, seed=3, hidden_size=32, intermediate_size=64, num_hidden_layers=1
    )
    folder = tmp_path_factory.mktemp("play-checkpoint") / "c4-model"
    return save_tiny(model, tokenizer, folder, max_new_tokens=PLANS["connect_four"].max_new_tokens)


def _replies_as_the_backend_gives_them(trajectory: dict[str, Any], backend: Any) -> None:
    """Each model reply of the game equals the backend's answer to the whole chat before
    it (core's conversation of the trajectory, text mode)."""
    from core import conversation as chat

    messages = chat.messages(trajectory)
    asked = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    assert asked and len(asked) == len(trajectory["events"])
    for i in asked:
        assert messages[i]["content"] == backend.answer(messages[:i], False).text


@pytest.mark.server
@pytest.mark.parametrize("constrained", [True, False], ids=["constrained", "free"])
def test_the_page_plays_a_checkpoint_as_its_backend_answers(
    checkpoint: Path, constrained: bool
) -> None:
    """``gamebridge play --model-path DIR``: the page (HTTP, 127.0.0.1) offers the checkpoint
    by its folder; a person plays it to the end and a watched game runs to the end, each
    model reply what ``serve-policy --model-path``'s backend answers to the same chat."""
    import httpx

    from rollouts.model.transformers_backend import TransformersModel
    from rollouts.play.app import serve_in_thread
    from rollouts.play.session import CheckpointModel

    loaded = CheckpointModel.load(str(checkpoint), constrained=constrained)
    backend = TransformersModel(checkpoint, constrained=constrained)  # a second, its own
    label = f"checkpoint {checkpoint}" + (", constrained to legal moves" if constrained else "")
    rng = random.Random(4)
    with serve_in_thread(checkpoint=loaded) as url, httpx.Client(base_url=url, timeout=60) as c:
        config = c.get("/api/config").json()
        assert config["models"][-1] == {"id": "checkpoint", "label": label}
        assert config["default_model"] == "checkpoint"
        game = {"game": "connect_four", "model": "checkpoint", "seed": 6}
        view = c.post("/api/sessions", json={**game, "other": "model", "side": 1}).json()
        assert view["model"] == label
        while not view["done"]:
            assert view["your_turn"]
            view = c.post(
                f"/api/sessions/{view['id']}/move", json={"move": rng.choice(view["legal_moves"])}
            ).json()
        played = view["trajectory"]
        watch = c.post("/api/sessions", json={**game, "mode": "watch", "opponent": "random"}).json()
        while not watch["done"]:
            watch = c.post(f"/api/sessions/{watch['id']}/step").json()
    for trajectory in (played, watch["trajectory"]):
        _replies_as_the_backend_gives_them(trajectory, backend)
        events = trajectory["events"]
        if constrained:  # whole games of legal moves
            assert (
                all(e["error"] is None for e in events) and trajectory["termination"] != "forfeit"
            )
    if not constrained:  # untrained and free: it babbles until it forfeits
        assert watch["trajectory"]["termination"] == "forfeit"


def test_cli_play_model_path_errors_are_one_line(
    checkpoint: Path, tmp_path: Path, capsys: Any
) -> None:
    from rollouts.cli import main

    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{")
    cases = [
        (["--model-path", str(tmp_path / "nothing")], "no such model folder"),
        (["--model-path", str(tmp_path)], "not a model folder (no config.json)"),
        (["--model-path", str(tmp_path / "broken")], "cannot load the model"),
        (["--constrained-decoding"], "--constrained-decoding needs --model-path"),
        (["--context", "chat"], "--context needs --model-path"),
        (
            [
                "--model-path",
                str(checkpoint),
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
            ],
            "give one",
        ),
        (["--terminal", "--model-path", str(checkpoint)], "add --against model"),
    ]
    for args, message in cases:
        assert main(["play", "--port", "0", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert message in err[-1] and "Traceback" not in "\n".join(err), err


def test_terminal_plays_against_the_checkpoint(checkpoint: Path) -> None:
    from rollouts.play.session import CheckpointModel
    from rollouts.play.terminal import play

    loaded = CheckpointModel.load(str(checkpoint), constrained=True)
    args = _terminal_args(game="connect_four", against="model", checkpoint=loaded)
    out = io.StringIO()
    moves = "".join(f"{c}\n" for c in "1234567" * 4)
    assert play(args, stdin=io.StringIO(moves), stdout=out) == 0
    text = out.getvalue()
    assert f"against checkpoint {checkpoint}, constrained to legal moves." in text
    assert "model replied '<move>" in text and "Game over:" in text
