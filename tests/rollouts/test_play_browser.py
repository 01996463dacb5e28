"""The play page in a real browser: Playwright driving Debian's chromium
(``executable_path``; no ``playwright install``, no browser download).

Every game is played to its end by clicking (Wordle by typing), against the
random opponent and against the scripted model (Wordle, a one-player game:
watched), and the server's final trajectory must equal core's replay of the
moves the test clicked; Othello against minimax depth 3; the scripted model
watched at Connect Four; a demo run replayed frame by frame from the report's
link. No console errors anywhere. Screenshots are kept under
``runs/artifacts/play/`` (``$GAMEBRIDGE_ARTIFACTS`` moves it); the docs'
screenshot (docs/img/play-othello.png) is produced here:
``GAMEBRIDGE_UPDATE_DOCS=1`` rewrites it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.episode import Episode
from core.games import list_games, make_game
from core.opponents import MoveListOpponent
from core.players import ScriptedPlayer

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("GAMEBRIDGE_ARTIFACTS", REPO / "runs" / "artifacts")) / "play"
DOCS_SHOT = REPO / "docs" / "img" / "play-othello.png"
POLICY = "minimax:1"
WORDS = ["raise", "clout", "dingy", "bumph", "wacky", "fjord"]

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.server,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (make setup)"),
]

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("play") / "runs"


@pytest.fixture(scope="module")
def server(runs_dir: Path) -> Iterator[str]:
    from rollouts.play.app import serve_in_thread

    runs_dir.mkdir(parents=True, exist_ok=True)
    with serve_in_thread(runs=[runs_dir]) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield b
        b.close()


class Page:
    """A page plus every console error and uncaught exception it showed."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 860})
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.errors: list[str] = []
        self.page.on(
            "console",
            lambda m: (
                self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
            ),
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.url = url

    def open(self, fragment: str = "") -> Any:
        self.page.goto("about:blank")  # a new document even when only the #fragment differs
        self.page.goto(self.url + fragment)
        self.page.wait_for_selector("body[data-ready='1']")
        return self.page

    def idle(self) -> None:
        self.page.wait_for_selector("body[data-busy='0']")

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture()
def page(browser: Any, server: str) -> Iterator[Page]:
    p = Page(browser, server)
    yield p
    p.close()
    assert p.errors == []


def _setup(page: Any, tab: str, game: str, **fields: str) -> None:
    page.click(f"#tab-{tab}")
    page.select_option("#game", game)
    for name, value in fields.items():
        selector = f"#{name}"
        if not page.is_visible(selector):  # not asked for this game (Wordle: no opponent)
            continue
        if page.eval_on_selector(selector, "e => e.tagName") == "SELECT":
            page.select_option(selector, value)
        else:
            page.fill(selector, value)
    previous = page.get_attribute("body", "data-session")
    page.click("#start")
    if previous is None:
        page.wait_for_selector("body[data-session]")
    else:  # a second game on the page: wait for its own session, not the last one's
        page.wait_for_function(
            f"document.body.getAttribute('data-session') !== {json.dumps(previous)}"
        )


def _session(server: str, page: Any) -> dict[str, Any]:
    sid = page.get_attribute("body", "data-session")
    r = httpx.get(f"{server}api/sessions/{sid}", timeout=30)
    r.raise_for_status()
    return r.json()


_STATE_JS = """() => [
  document.body.getAttribute('data-status'),
  document.body.getAttribute('data-renders'),
  Array.from(document.querySelectorAll('#board [data-move], #extra-moves [data-move]'))
    .map(e => e.getAttribute('data-move'))
]"""


def _play_by_clicking(p: Page, rng: random.Random) -> list[str]:
    """Click (or type) until the game is over; the moves played, as the page named them."""
    page = p.page
    moves: list[str] = []
    for _ in range(200):
        status, turns, offered = page.evaluate(_STATE_JS)
        if status == "over":
            return moves
        assert status == "your-turn", status
        if offered:
            move = rng.choice(sorted(set(offered)))
            moves.append(move)
            page.click(f"[data-move='{move}'] >> nth=0")
        else:  # Wordle: typed
            word = WORDS[len(moves) % len(WORDS)]
            moves.append(word)
            page.fill("#typed-move", word)
            page.press("#typed-move", "Enter")
        page.wait_for_function(
            f"document.body.getAttribute('data-renders') !== '{turns}' && "
            "document.body.getAttribute('data-busy') === '0'"
        )
    raise AssertionError("the game did not end in 200 moves")


def scripted_replay(task: dict[str, Any], person_moves: list[str], seed: int) -> Episode:
    """Core's replay: the scripted model in the seat, the person's moves as its opponent."""
    player = ScriptedPlayer(POLICY, seed)
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


YOURS = {"win": "you won", "loss": "you lost", "draw": "a draw"}


def _check_page_result(page: Any, view: dict[str, Any]) -> None:
    """The page's result line: the person's result when the person played (against
    a model: the opposite of the model's), the episode's when watching."""
    text = page.inner_text("#result")
    said = YOURS[view["your_result"]] if view.get("your_result") else view["result"]
    assert f"Game over: {said} ({view['termination']})" in text
    assert f"{view['reward']['total']:.3f}" in text
    for name in view["reward"]["components"]:
        assert page.query_selector(f"#reward-table tr[data-component='{name}']") is not None


@pytest.mark.parametrize("game", list_games())
def test_play_every_game_by_clicking_against_the_random_opponent(
    page: Page, server: str, game: str
) -> None:
    pg = page.open()
    _setup(pg, "play", game, opponent="random", seed="3")
    moves = _play_by_clicking(page, random.Random(5))
    view = _session(server, pg)
    replayed = Episode.replay(view["task"], [{"move": m} for m in moves])
    assert view["trajectory"] == replayed.to_dict()
    _check_page_result(pg, view)
    page.shot(f"play-{game}-random")


@pytest.mark.parametrize("game", list_games())
def test_play_every_game_against_the_scripted_model(page: Page, server: str, game: str) -> None:
    pg = page.open()
    if make_game(game).spec.num_players == 1:
        # One player: nobody to play against; the scripted model plays it, watched.
        _setup(pg, "watch", game, model="scripted", policy=POLICY, seed="4")
        pg.fill("#speed", "0")
        pg.click("#auto")
        pg.wait_for_selector("body[data-status='over']")
        view = _session(server, pg)
        replies = [t["reply"] for t in view["turns"]]
        assert Episode.replay(view["task"], replies).to_dict() == view["trajectory"]
    else:
        _setup(pg, "play", game, other="model", side="1", model="scripted", policy=POLICY, seed="4")
        moves = _play_by_clicking(page, random.Random(6))
        view = _session(server, pg)
        assert view["task"]["model_player"] == 0  # the model in the seat, moving first
        assert view["trajectory"] == scripted_replay(view["task"], moves, 4).to_dict()
        # The model's raw reply and the observation it read are beside the board.
        last_model = [t for t in view["turns"] if t["who"] == "model"][-1]
        assert pg.inner_text("#reply").strip() == str(last_model["reply"]).strip()
    _check_page_result(pg, view)
    page.shot(f"play-{game}-scripted")


def test_othello_against_minimax_depth_3(page: Page, server: str) -> None:
    """The newcomer's first game; its screenshot is the docs' picture."""
    pg = page.open()
    _setup(pg, "play", "othello", opponent="minimax", depth="3", side="0", seed="0")
    # The observation beside the board is exactly core's first observation.
    view = _session(server, pg)
    first = Episode(view["task"])
    assert pg.inner_text("#observation").strip() == first.reset().strip()
    assert pg.inner_text("#invalid-left") == "3 of 3"
    rng = random.Random(1)
    first_moves = []
    for _ in range(6):  # a few clicks, then the picture
        cell = rng.choice(pg.query_selector_all("#board [data-move]"))
        first_moves.append(cell.get_attribute("data-move"))
        turns = pg.get_attribute("body", "data-renders")
        cell.click()
        pg.wait_for_function(
            f"document.body.getAttribute('data-renders') !== '{turns}' && "
            "document.body.getAttribute('data-busy') === '0'"
        )
    shot = page.shot("play-othello-minimax3")
    if os.environ.get("GAMEBRIDGE_UPDATE_DOCS") == "1":
        DOCS_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_SHOT)
    assert DOCS_SHOT.exists(), "docs/img/play-othello.png: run with GAMEBRIDGE_UPDATE_DOCS=1"
    assert _png_size(DOCS_SHOT) == _png_size(shot)  # same page, same layout as committed
    moves = _play_by_clicking(page, rng)
    view = _session(server, pg)
    assert view["task"]["depth"] == 3 and view["task"]["opponent"] == "minimax"
    clicked = [{"move": m} for m in first_moves + moves]
    assert view["trajectory"] == Episode.replay(view["task"], clicked).to_dict()
    _check_page_result(pg, view)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def test_watch_the_scripted_model_play_connect_four(page: Page, server: str) -> None:
    pg = page.open("#watch")
    _setup(pg, "watch", "connect_four", side="0", opponent="minimax", depth="2", model="scripted",
           policy="minimax:2", seed="2")  # fmt: skip
    assert pg.get_attribute("body", "data-status") == "model-turn"
    pg.click("#step")  # one step by hand ...
    pg.wait_for_selector("body[data-turns='1'][data-busy='0']")
    pg.fill("#speed", "0")  # ... then auto-play at full speed
    pg.click("#auto")
    pg.wait_for_selector("body[data-status='over']")
    view = _session(server, pg)
    # Core's own run of the same model on the same task: the same game.
    player = ScriptedPlayer("minimax:2", 2)
    episode = Episode(view["task"])
    messages = [{"role": "system", "content": episode.system_prompt}]
    messages.append({"role": "user", "content": episode.reset()})
    while not episode.done:
        reply = player.reply(messages)
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": episode.step(reply).observation},
        ]
    assert view["trajectory"] == episode.to_dict()
    _check_page_result(pg, view)
    page.shot("watch-connect_four")


def test_replay_a_demo_run_from_the_reports_link(page: Page, server: str, runs_dir: Path) -> None:
    from rollouts.cli import main

    out = runs_dir / "demo-test"
    code = main(["demo", "-n", "2", "--games", "tictactoe,othello", "--frameworks", "core",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    report = (out / "report.html").read_text()
    # The report's replay links to the play page (default port), naming the record file.
    assert "gamebridge play" in report and "127.0.0.1:8765" in report
    record_file = out / "othello-core.jsonl"
    from rollouts.evaluation.records import read_run

    rows = [r.to_dict() for r in read_run(record_file).ordered()]  # task order, as the report
    traj = rows[1]["trajectory"]
    # The link the report builds for that episode, pointed at this test's server.
    pg = page.page
    pg.goto((out / "report.html").as_uri())
    labels = pg.evaluate(
        "JSON.parse(document.getElementById('replay-data').textContent).map(e => e.label)"
    )
    index = [k for k, label in enumerate(labels) if label.startswith("othello /")][1]
    pg.goto((out / "report.html").as_uri() + f"#episode={index}")
    pg.reload()
    href = pg.get_attribute("#play-link", "href")
    assert href is not None and href.startswith("http://127.0.0.1:8765/#replay=")
    page.url = server
    page.open(href.split("/", 3)[3])
    pg.wait_for_selector("body[data-status='replay']")
    n = len(traj["events"]) + 1
    assert pg.get_attribute("body", "data-frames") == str(n)
    assert "identical to the record" in pg.inner_text("#verified")
    game = make_game("othello")
    episode = Episode(traj["task"])
    episode.reset()
    for i, event in enumerate([None, *traj["events"]]):
        if event is not None:
            episode.step(event["reply"]) if event["kind"] == "text" else episode.step_move(
                event["reply"]
            )
            pg.click("#next")
            pg.wait_for_selector(f"body[data-frame='{i}']")
            assert pg.inner_text("#reply").strip() == str(event["reply"]).strip()
        cells = pg.evaluate(
            "Array.from(document.querySelectorAll('#board .cell')).map(c => c.textContent)"
        )
        expected = [x for row in game.board_view(episode.state).cells for x in row]
        assert cells == expected, f"frame {i}"
    assert f"Game over: {traj['result']}" in pg.inner_text("#result")
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_selector(f"body[data-frame='{n - 2}']")
    page.shot("replay-othello")


@pytest.mark.slow
def test_replay_every_record_of_a_full_demo_run(page: Page, server: str, runs_dir: Path) -> None:
    """What ``make demo`` runs (every available framework, both games): each
    records file opens, replays identically through core and ends on its result."""
    out = runs_dir / "full-demo"
    # In a subprocess, as `make demo` runs it (some drivers call asyncio.run, which
    # cannot run inside Playwright's event loop).
    done = subprocess.run(
        [sys.executable, "-m", "rollouts.cli", "demo", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    files = sorted(out.glob("*.jsonl"))
    assert len(files) >= 2 * 6, [f.name for f in files]
    from rollouts.evaluation.records import read_run

    for path in files:
        rows = [r.to_dict() for r in read_run(path).ordered()]  # the header line skipped
        last = len(rows) - 1
        pg = page.open(f"#replay={path}&episode={last}")
        pg.wait_for_selector("body[data-status='replay']")
        traj = rows[last]["trajectory"]
        assert pg.get_attribute("body", "data-frames") == str(len(traj["events"]) + 1)
        assert "identical to the record" in pg.inner_text("#verified"), path.name
        pg.click("#last")
        pg.wait_for_selector(f"body[data-frame='{len(traj['events'])}']")
        assert f"Game over: {traj['result']}" in pg.inner_text("#result"), path.name
    page.shot("replay-full-demo")


def test_two_tabs_are_two_games(browser: Any, server: str) -> None:
    first, second = Page(browser, server), Page(browser, server)
    try:
        for p, game in ((first, "tictactoe"), (second, "tictactoe")):
            _setup(p.open(), "play", game, opponent="random", seed="1")
        a = first.page.get_attribute("body", "data-session")
        b = second.page.get_attribute("body", "data-session")
        assert a and b and a != b
        first.page.click("#board [data-move='4']")
        first.page.wait_for_selector("body[data-turns='1'][data-busy='0']")
        assert _session(server, second.page)["turns"] == []
        assert _session(server, first.page)["turns"][0]["move"] == "4"
        assert first.errors == [] and second.errors == []
    finally:
        first.close()
        second.close()


# --- a room full of newcomers (issue 33) ------------------------------------------------

BRIDGED = ["openspiel:tic_tac_toe", "openspiel:nim", "openspiel:breakthrough"]
"""Three bridged games played on the phone page (generic board, moves from the list)."""


def _phone(browser: Any, server: str) -> Page:
    p = Page.__new__(Page)
    p.context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    p.page = p.context.new_page()
    p.page.set_default_timeout(60_000)
    p.errors = []
    p.page.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)
    p.page.on("pageerror", lambda e: p.errors.append(f"page error: {e}"))
    p.url = server
    return p


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px phone"


def test_the_result_against_a_model_is_the_persons_and_its_last_move_is_marked(
    page: Page, server: str
) -> None:
    pg = page.open()
    _setup(pg, "play", "tictactoe", other="model", side="0", model="scripted",
           policy="minimax:4", seed="1")  # fmt: skip
    pg.click("#board [data-move='1']")
    pg.wait_for_selector("body[data-turns='1'][data-busy='0']")
    view = _session(server, pg)
    marked = pg.query_selector_all("#board .cell.last")
    assert view["last_move"]["by"] == "model" and len(marked) == 1
    cell = [int(marked[0].get_attribute("data-row")), int(marked[0].get_attribute("data-col"))]
    assert [cell] == view["last_move"]["cells"]
    assert f"The model played {view['last_move']['move']}" in pg.inner_text("#status")
    _play_by_clicking(page, random.Random(2))
    view = _session(server, pg)
    assert view["your_result"] == {"win": "loss", "loss": "win", "draw": "draw"}[view["result"]]
    _check_page_result(pg, view)
    assert "the model's reward" in pg.inner_text("#result")


def test_the_opponents_last_move_is_marked(page: Page, server: str) -> None:
    pg = page.open()
    _setup(pg, "play", "connect_four", opponent="minimax", depth="2", seed="3")
    pg.click("#board [data-move='4'] >> nth=0")
    pg.wait_for_selector("body[data-turns='1'][data-busy='0']")
    view = _session(server, pg)
    marked = [
        [int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))]
        for c in pg.query_selector_all("#board .cell.last")
    ]
    assert marked == view["last_move"]["cells"] and len(marked) == 1
    assert view["board"]["marks"][marked[0][0]][marked[0][1]] == "p1"
    assert "The opponent played" in pg.inner_text("#status")


def test_a_pending_reply_shows_and_blocks_input(page: Page, server: str) -> None:
    pg = page.open()
    _setup(pg, "play", "tictactoe", opponent="random", seed="5")
    held: list[Any] = []
    pg.route("**/move", lambda route: held.append(route))
    pg.click("#board [data-move='4']")
    pg.wait_for_selector("body.pending[data-pending='1']")
    assert "Waiting for the opponent" in pg.inner_text("#status")
    assert pg.is_disabled("#typed-move")
    assert pg.evaluate("getComputedStyle(document.getElementById('board')).pointerEvents") == "none"
    pg.evaluate("document.querySelector(\"#board [data-move='0']\").click()")  # a second click
    pg.wait_for_timeout(300)
    assert len(held) == 1  # the second click sent nothing
    held[0].continue_()
    pg.wait_for_selector("body[data-turns='1'][data-busy='0'][data-pending='0']")
    pg.unroute("**/move")
    assert _session(server, pg)["turns"][0]["move"] == "4"


def test_a_reload_resumes_the_game(page: Page, server: str) -> None:
    pg = page.open()
    _setup(pg, "play", "othello", opponent="random", seed="2")
    first = pg.query_selector("#board [data-move]").get_attribute("data-move")
    pg.click(f"#board [data-move='{first}']")
    pg.wait_for_selector("body[data-turns='1'][data-busy='0']")
    sid = pg.get_attribute("body", "data-session")
    pg.reload()
    pg.wait_for_selector("body[data-ready='1']")
    assert pg.get_attribute("body", "data-session") == sid
    assert pg.get_attribute("body", "data-turns") == "1"
    assert pg.get_attribute("body", "data-status") == "your-turn"
    assert pg.input_value("#game") == "othello"


def test_wordle_reveals_the_answer_after_a_loss(page: Page, server: str) -> None:
    pg = page.open()
    _setup(pg, "play", "wordle", seed="1")
    answer = _session(server, pg)["task"]  # the answer is not in the view before the end
    for word in ["fuzzy", "jazzy", "pizza", "buzzy", "dizzy", "fizzy"]:
        turns = pg.get_attribute("body", "data-renders")
        pg.fill("#typed-move", word)
        pg.press("#typed-move", "Enter")
        pg.wait_for_function(
            f"document.body.getAttribute('data-renders') !== '{turns}' && "
            "document.body.getAttribute('data-busy') === '0'"
        )
    view = _session(server, pg)
    assert view["done"] and view["result"] == "loss", answer
    assert pg.inner_text("#answer") == f"The answer was {view['answer'].upper()}."


@pytest.mark.parametrize("game", [*list_games(), *BRIDGED])
def test_a_whole_game_on_a_phone_without_sideways_scrolling(
    browser: Any, server: str, game: str
) -> None:
    if game.startswith("openspiel:"):
        pytest.importorskip("pyspiel")
    p = _phone(browser, server)
    try:
        pg = p.open()
        _no_sideways_scroll(pg)
        _setup(pg, "play", game, opponent="random", seed="3")
        _no_sideways_scroll(pg)
        if game.startswith("openspiel:"):
            assert pg.is_visible("#board-text") and not pg.is_visible("#board-wrap")
        moves = _play_by_clicking(p, random.Random(9))
        _no_sideways_scroll(pg)
        view = _session(server, pg)
        assert (
            view["trajectory"]
            == Episode.replay(view["task"], [{"move": m} for m in moves]).to_dict()
        )
        _check_page_result(pg, view)
        p.shot(f"phone-{game.replace(':', '-')}")
        assert p.errors == []
    finally:
        p.close()


def test_the_page_offers_the_bridged_games_and_mcts(page: Page, server: str) -> None:
    pytest.importorskip("pyspiel")
    pg = page.open()
    games = pg.eval_on_selector_all("#game option", "os => os.map(o => o.value)")
    assert set(BRIDGED) <= set(games) and games[: len(list_games())] == list_games()
    pg.select_option("#game", "openspiel:tic_tac_toe")
    opponents = pg.eval_on_selector_all("#opponent option", "os => os.map(o => o.value)")
    assert opponents == ["mcts", "random"]
    _setup(pg, "play", "openspiel:tic_tac_toe", opponent="mcts", depth="1", seed="1")
    view = _session(server, pg)
    assert view["task"]["opponent"] == "mcts" and view["board"]["generic"]
    offered = pg.eval_on_selector_all(
        "#extra-moves [data-move]", "bs => bs.map(b => b.getAttribute('data-move'))"
    )
    assert offered == view["legal_moves"] or offered == view["board"]["other_moves"]


def test_a_file_that_is_not_records_shows_its_error_alone(
    page: Page, server: str, runs_dir: Path
) -> None:
    import json

    from core.tasks import make_tasks
    from rollouts.training.tiny import scripted_records

    (record,) = scripted_records(make_tasks(1, seed=2), "random", tools=False)
    good = runs_dir / "good-one.jsonl"
    good.write_text(json.dumps(record.to_dict()) + "\n")
    bad = runs_dir / "dataset.jsonl"
    bad.write_text('{"messages": []}\n')
    pg = page.open(f"#replay={good}")
    pg.wait_for_selector("body[data-status='replay']")
    assert pg.is_visible("#board")
    names = pg.eval_on_selector_all("#run-file option", "os => os.map(o => o.textContent)")
    assert not any("dataset.jsonl" in n for n in names)
    pg.fill("#run-path", str(bad))
    pg.click("#load-run")
    pg.wait_for_function("document.getElementById('error').textContent.length > 0")
    page.errors = [e for e in page.errors if "400" not in e]  # the refused request itself
    assert pg.inner_text("#error") == (
        "dataset.jsonl is not a records file (the JSONL that gamebridge eval, compare or demo writes)"
    )
    assert not pg.is_visible("#game-area")


def test_nim_hover_shows_every_stone_a_move_takes_and_othello_counts_discs(
    page: Page, server: str
) -> None:
    pg = page.open()
    _setup(pg, "play", "nim", opponent="random", seed="1")
    view = _session(server, pg)
    move, taken = max(view["effects"].items(), key=lambda kv: len(kv[1]))
    assert len(taken) > 1
    pg.hover(f"#board [data-move='{move}']")
    shown = [
        [int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))]
        for c in pg.query_selector_all("#board .cell.preview")
    ]
    assert sorted(shown) == sorted(taken)
    _setup(pg, "play", "othello", opponent="random", seed="1")
    assert "Discs: Black 2, White 2." in pg.inner_text("#status")


def test_the_winning_line_is_highlighted(page: Page, server: str) -> None:
    pg = page.open()
    _setup(pg, "play", "tictactoe", opponent="minimax", depth="6", seed="1")
    for wish in ["1", "3", "5", "7", "8", "0", "2", "6"]:  # a poor game: the opponent wins
        status, renders, offered = pg.evaluate(_STATE_JS)
        if status == "over":
            break
        move = wish if wish in offered else offered[0]
        pg.click(f"#board [data-move='{move}']")
        pg.wait_for_function(
            f"document.body.getAttribute('data-renders') !== '{renders}' && "
            "document.body.getAttribute('data-busy') === '0'"
        )
    view = _session(server, pg)
    assert view["done"] and view["result"] == "loss"
    shown = [
        [int(c.get_attribute("data-row")), int(c.get_attribute("data-col"))]
        for c in pg.query_selector_all("#board .cell.win")
    ]
    assert len(shown) == 3 and sorted(shown) == sorted(view["board"]["highlight"])
    page.shot("play-tictactoe-winning-line")
