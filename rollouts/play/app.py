"""The play page's server: FastAPI, static HTML/CSS/JS, sessions in memory.

Endpoints (JSON; bad requests get a 4xx ``{"detail": message}``, never a 500):

* ``GET /`` the page; ``GET /static/...`` its script and style.
* ``GET /api/config`` the games (title, sides, typed or clicked), the
  opponents, the models on offer.
* ``POST /api/sessions`` a new game (``Setup`` fields + ``model``/``policy``);
  ``GET /api/sessions/{id}`` its view; ``POST /api/sessions/{id}/move``
  ``{"move": text}``; ``POST /api/sessions/{id}/step`` one model turn (watch);
  ``DELETE /api/sessions/{id}``.
* ``GET /api/runs`` the records files; ``GET /api/replay?file=...`` the
  episodes of one; ``GET /api/replay?file=...&episode=i`` its frames.

Requests over ``max_body_bytes`` get 413 and lone-surrogate JSON 400 (the
shared ``adapters._asgi.BodyLimitMiddleware``); one session is used by one
request at a time (its lock; a second waits, then gets 409).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse
    from pydantic import BaseModel, Field
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "gamebridge play needs fastapi and uvicorn; install with: pip install -e '.[rollouts]'"
    ) from e

from adapters._asgi import BodyLimitMiddleware
from core.games import list_games, make_game
from core.opponents import OPPONENT_KINDS
from core.tasks import MAX_SEED
from rollouts.play import replay
from rollouts.play.session import (
    EndpointModel,
    GameSession,
    Model,
    PlayError,
    ScriptedModel,
    Setup,
    board_view,
)
from rollouts.play.store import SessionStore

STATIC = Path(__file__).parent / "static"
DEFAULT_MAX_BODY_BYTES = 64 * 1024
DEFAULT_POLICY = "minimax:2"
LOCK_WAIT_SECONDS = 120.0
MAX_DEPTH = 6
"""Deepest opponent the page offers (Othello at depth 6 takes seconds a move here)."""


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """A model endpoint given on the command line (``--base-url/--model``)."""

    base_url: str
    model: str
    api_key: str | None = None


class NewSession(BaseModel):
    game: str = Field(max_length=64)
    mode: Literal["play", "watch"] = "play"
    side: int = Field(0, ge=0, le=1)
    other: Literal["opponent", "model"] = "opponent"
    opponent: Literal["minimax", "random", "mcts"] = "minimax"
    depth: int = Field(2, ge=1, le=MAX_DEPTH)
    random_move_prob: float = Field(0.0, ge=0.0, le=1.0)
    seed: int = Field(0, ge=0, le=MAX_SEED)  # core's one seed rule (core.tasks)
    max_invalid_moves: int = Field(3, ge=0, le=50)
    model: Literal["scripted", "endpoint", "checkpoint"] = "scripted"
    policy: str = Field(DEFAULT_POLICY, max_length=64)


class MoveBody(BaseModel):
    move: str = Field(max_length=200)


def create_app(
    *,
    runs: list[Path] | None = None,
    endpoint: Endpoint | None = None,
    checkpoint: Model | None = None,
    cap: int = 32,
    idle_seconds: float = 1800.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Any:
    """The ASGI app (wrapped in the body limit). ``endpoint`` (``--base-url``) and
    ``checkpoint`` (``--model-path``: a loaded :class:`CheckpointModel`) are offered as
    models beside the scripted policy; the one given is the page's default."""
    roots = [p.resolve() for p in (runs or [Path("runs")])]
    store = SessionStore(cap=cap, idle_seconds=idle_seconds)
    app = FastAPI(title="gamebridge play", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store

    @app.exception_handler(PlayError)
    async def _play_error(_: Request, exc: PlayError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:3]:
            where = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
            parts.append(f"{where or 'body'}: {err.get('msg')}")
        return JSONResponse({"detail": "; ".join(parts) or "bad request"}, status_code=422)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> FileResponse:
        allowed = {"play.js": "text/javascript", "play.css": "text/css"}
        if name not in allowed:
            raise PlayError(f"no static file {name[:60]!r}", status=404)
        return FileResponse(STATIC / name, media_type=allowed[name])

    @app.get("/api/config")
    def config() -> dict[str, Any]:
        games = _games()
        models = [{"id": "scripted", "label": "scripted policy"}]
        if endpoint is not None:
            models.append({"id": "endpoint", "label": f"{endpoint.model} at {endpoint.base_url}"})
        if checkpoint is not None:
            models.append({"id": "checkpoint", "label": checkpoint.name})
        return {
            "games": games,
            "opponents": list(OPPONENT_KINDS),
            "max_depth": MAX_DEPTH,
            "models": models,
            "default_model": models[-1]["id"],
            "default_policy": DEFAULT_POLICY,
            "cap": cap,
            "idle_seconds": idle_seconds,
        }

    def _model(body: NewSession) -> Model:
        if body.model == "endpoint":
            if endpoint is None:
                raise PlayError(
                    "no model endpoint: start gamebridge play with --base-url and --model"
                )
            return EndpointModel(endpoint.base_url, endpoint.model, endpoint.api_key)
        if body.model == "checkpoint":
            if checkpoint is None:
                raise PlayError("no checkpoint: start gamebridge play with --model-path")
            return checkpoint
        return ScriptedModel(body.policy, body.seed)

    def _locked(sid: str) -> GameSession:
        session: GameSession = store.get(sid)
        if not session.lock.acquire(timeout=LOCK_WAIT_SECONDS):
            raise PlayError("this session is busy with another request; try again", status=409)
        return session

    def _view(sid: str, session: GameSession) -> dict[str, Any]:
        return {"id": sid, **session.view()}

    @app.post("/api/sessions")
    def new_session(body: NewSession) -> dict[str, Any]:
        fields = body.model_dump(exclude={"model", "policy"})
        setup = Setup(**fields)
        needs_model = setup.mode == "watch" or setup.other == "model"
        session = GameSession(setup, _model(body) if needs_model else None)
        sid = store.add(session)
        with session.lock:
            return _view(sid, session)

    @app.get("/api/sessions/{sid}")
    def get_session(sid: str) -> dict[str, Any]:
        session = _locked(sid)
        try:
            return _view(sid, session)
        finally:
            session.lock.release()

    @app.post("/api/sessions/{sid}/move")
    def move(sid: str, body: MoveBody) -> dict[str, Any]:
        session = _locked(sid)
        try:
            session.move(body.move)
            return _view(sid, session)
        finally:
            session.lock.release()

    @app.post("/api/sessions/{sid}/step")
    def step(sid: str) -> dict[str, Any]:
        session = _locked(sid)
        try:
            session.step()
            return _view(sid, session)
        finally:
            session.lock.release()

    @app.delete("/api/sessions/{sid}")
    def close(sid: str) -> dict[str, Any]:
        if not store.remove(sid):
            raise PlayError(f"no session {sid[:40]!r}", status=404)
        return {"closed": sid}

    @app.get("/api/runs")
    def runs_list() -> dict[str, Any]:
        return {"roots": [str(r) for r in roots], "files": replay.list_runs(roots)}

    @app.get("/api/replay")
    def replay_file(file: str, episode: int | None = None) -> dict[str, Any]:
        path = replay.resolve(file, roots)
        rows = replay.read_rows(path)
        out: dict[str, Any] = {
            "file": str(path),
            "episodes": [replay.label(i, r) for i, r in enumerate(rows)],
        }
        if episode is not None:
            if not 0 <= episode < len(rows):
                raise PlayError(
                    f"episode {episode} is out of range: {path.name} holds {len(rows)}",
                    status=404,
                )
            out["episode"] = episode
            out.update(replay.frames(rows[episode]["trajectory"]))
        return out

    return BodyLimitMiddleware(app, max_body_bytes)


_GAMES: list[dict[str, Any]] = []


def _games() -> list[dict[str, Any]]:
    """The games the page offers: the native ones, then every bridged OpenSpiel
    game (when pyspiel is installed), each with its sides, opponents and
    whether it has a board of its own (``generic``: the board's text and the
    legal moves to pick from)."""
    if _GAMES:
        return _GAMES
    names = list(list_games())
    try:
        from core.games.openspiel import openspiel_games

        names += [n for n in openspiel_games() if n not in names]
    except ImportError:
        pass
    out = []
    for name in names:
        try:
            game = make_game(name)
            view, generic = board_view(game, game.initial_state(_rng()))
        except Exception:  # a bridged game that cannot start here is left out
            continue
        spec = game.spec
        out.append(
            {
                "name": name,
                "title": spec.title,
                "players": list(spec.player_names),
                "typed": view.typed,
                "generic": generic,
                "opponents": list(spec.opponents),
                "move_syntax": spec.move_syntax,
            }
        )
    _GAMES.extend(out)
    return _GAMES


def _rng() -> Any:
    import random

    return random.Random(0)


@contextlib.contextmanager
def serve_in_thread(host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> Iterator[str]:
    """Run the page's server in a background thread (tests); yields its URL
    (``http://host:port/``). ``kwargs`` go to :func:`create_app`."""
    import socket
    import threading
    import time

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    actual = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(**kwargs), log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"play-{actual}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the play server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{actual}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
